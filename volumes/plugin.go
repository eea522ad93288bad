package volumes

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Plugin directories under <pod dir>/volumes, named as the kubelet names
// them (its plugin name with "/" escaped as "~").
const (
	emptyDirPluginDir    = "kubernetes.io~empty-dir"
	downwardAPIPluginDir = "kubernetes.io~downward-api"
	configMapPluginDir   = "kubernetes.io~configmap"
	secretPluginDir      = "kubernetes.io~secret" //nolint:gosec // G101: a directory name, not a credential
	projectedPluginDir   = "kubernetes.io~projected"
)

// plugin sets up the volumes of one type.
type plugin interface {
	// dirName is the plugin's directory under <pod dir>/volumes, or ""
	// when its volumes live elsewhere (hostPath).
	dirName() string
	// setUp makes req.vol ready, in req.dir when the plugin has a
	// directory, and says how containers see it. It is idempotent and
	// cheap when nothing changed, and refreshes content derived from the
	// pod or from API objects. Its errors need not name the volume: the
	// Manager does.
	setUp(ctx context.Context, req setUpRequest) (volume, error)
}

// setUpRequest is one volume of one pod to set up.
type setUpRequest struct {
	pod *v1.Pod
	vol *v1.Volume
	// dir is <pod dir>/volumes/<plugin dir>/<volume name>; "" for a
	// plugin without a directory.
	dir string
}

// volume is a volume set up on the host, or, for an image volume, the
// image the runtime mounts.
type volume struct {
	// hostPath is what containers mount.
	hostPath string
	// image, for an image volume, is the image reference it mounts (and
	// hostPath is empty).
	image string
	// readOnly: containers always mount it read-only, whatever their
	// volumeMount says (content the agent writes, as with the kubelet).
	readOnly bool
}

// plugins are the plugins a Manager uses, one per volume type.
type plugins struct {
	emptyDir    *emptyDirPlugin
	hostPath    *hostPathPlugin
	downwardAPI *downwardAPIPlugin
	configMap   *configMapPlugin
	secret      *secretPlugin
	projected   *projectedPlugin
	image       *imagePlugin
}

var (
	_ plugin = (*emptyDirPlugin)(nil)
	_ plugin = (*hostPathPlugin)(nil)
	_ plugin = (*downwardAPIPlugin)(nil)
	_ plugin = (*configMapPlugin)(nil)
	_ plugin = (*secretPlugin)(nil)
	_ plugin = (*projectedPlugin)(nil)
	_ plugin = (*imagePlugin)(nil)
)

func newPlugins(cfg *Config) plugins {
	content := &contentWriter{cfg: cfg}
	return plugins{
		emptyDir:    &emptyDirPlugin{cfg: cfg},
		hostPath:    &hostPathPlugin{},
		downwardAPI: &downwardAPIPlugin{cfg: cfg, w: content},
		configMap:   &configMapPlugin{cfg: cfg, w: content},
		secret:      &secretPlugin{cfg: cfg, w: content},
		projected:   &projectedPlugin{cfg: cfg, w: content},
		image:       &imagePlugin{cfg: cfg},
	}
}

// forVolume returns the plugin for the volume's type, or an error naming
// a type the agent does not support.
func (p plugins) forVolume(src *v1.VolumeSource) (plugin, error) {
	switch {
	case src.EmptyDir != nil:
		return p.emptyDir, nil
	case src.HostPath != nil:
		return p.hostPath, nil
	case src.DownwardAPI != nil:
		return p.downwardAPI, nil
	case src.ConfigMap != nil:
		return p.configMap, nil
	case src.Secret != nil:
		return p.secret, nil
	case src.Projected != nil:
		return p.projected, nil
	case src.Image != nil:
		return p.image, nil
	}
	if name := volumeTypeName(src); name != "" {
		return nil, fmt.Errorf("%s volumes are not supported: minikubelet supports emptyDir, hostPath, downwardAPI, configMap, secret, projected and image", name)
	}
	// The manifest defaulting makes a volume of no type an emptyDir, as
	// the apiserver does; a caller that skipped it gets one as well.
	return p.emptyDir, nil
}

// volumeTypeName is the JSON name of the volume type set in src, "" if
// none.
func volumeTypeName(src *v1.VolumeSource) string {
	rv := reflect.ValueOf(src).Elem()
	rt := rv.Type()
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}
