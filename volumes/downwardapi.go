package volumes

import (
	"context"
	"fmt"
	"io/fs"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/downward"
)

// defaultContentMode is the mode of the files of downwardAPI, configMap,
// secret and projected volumes when neither the item nor the volume sets
// one: the apiserver's default defaultMode, which a static pod does not
// get.
const defaultContentMode fs.FileMode = 0o644

// downwardAPIPlugin writes the pod's metadata and its containers'
// resources as files, on a tmpfs as the kubelet keeps them.
type downwardAPIPlugin struct {
	cfg *Config
	w   *contentWriter
}

func (p *downwardAPIPlugin) dirName() string { return downwardAPIPluginDir }

func (p *downwardAPIPlugin) setUp(ctx context.Context, req setUpRequest) (volume, error) {
	src := req.vol.DownwardAPI
	payload, err := downwardAPIPayload(req.pod, src.Items, modeOr(src.DefaultMode, defaultContentMode), p.cfg.NodeAllocatable)
	if err != nil {
		return volume{}, fmt.Errorf("downwardAPI: %w", err)
	}
	return p.w.publish(ctx, req, true, payload)
}

// modeOr is *m as a file mode, or def when m is nil.
func modeOr(m *int32, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return fs.FileMode(*m) & fs.ModePerm
}

// downwardAPIPayload computes the files of downwardAPI items through the
// downward-API resolver that env vars use too, each with its mode or
// defaultMode. A resourceFieldRef's unset limit reads as allocatable's
// amount. It reports every item it cannot compute.
func downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode fs.FileMode, allocatable v1.ResourceList) (map[string]fileProjection, error) {
	resolver := downward.Resolver{Allocatable: allocatable}
	out := make(map[string]fileProjection, len(items))
	var errs []error
	for i := range items {
		item := &items[i]
		value, err := resolver.File(pod, item)
		if err != nil {
			errs = append(errs, fmt.Errorf("item %q: %w", item.Path, err))
			continue
		}
		out[item.Path] = fileProjection{data: []byte(value), mode: modeOr(item.Mode, defaultMode)}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return out, nil
}
