package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
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

// downwardAPIPayload computes the files of downwardAPI items, each with
// its mode or defaultMode. It reports every item it cannot compute.
func downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode fs.FileMode, allocatable v1.ResourceList) (map[string]fileProjection, error) {
	out := make(map[string]fileProjection, len(items))
	var errs []error
	for _, item := range items {
		var (
			value string
			err   error
		)
		switch {
		case item.FieldRef != nil:
			value, err = podFieldValue(pod, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			value, err = containerResourceValue(pod, item.ResourceFieldRef, allocatable)
		default:
			err = errors.New("needs a fieldRef or a resourceFieldRef")
		}
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

// podFieldValue is the value of a fieldRef a downwardAPI volume may use:
// metadata.name, .namespace, .uid, .labels, .annotations, and one label or
// annotation as metadata.labels['key'].
func podFieldValue(pod *v1.Pod, fieldPath string) (string, error) {
	if field, key, ok := subscripted(fieldPath); ok {
		switch field {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldRef %q: only metadata.labels and metadata.annotations take a ['key']", fieldPath)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported in a volume: use metadata.name, metadata.namespace, metadata.uid, metadata.labels or metadata.annotations (status and spec fields only as env)", fieldPath)
}

// subscripted splits "field['key']".
func subscripted(fieldPath string) (field, key string, ok bool) {
	rest, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	field, key, found = strings.Cut(rest, "['")
	if !found || field == "" {
		return "", "", false
	}
	return field, key, true
}

// formatMap writes labels or annotations as the kubelet does: one
// key="value" line per key, sorted by key, the value quoted as Go quotes
// it, no newline after the last.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, len(keys))
	for i, k := range keys {
		lines[i] = k + "=" + strconv.Quote(m[k])
	}
	return strings.Join(lines, "\n")
}

// containerResourceValue is a container's resource in units of the
// divisor (default 1), rounded up, as the kubelet writes it. A limit the
// container does not set (cpu, memory, ephemeral-storage) is the node's
// allocatable amount, when known.
func containerResourceValue(pod *v1.Pod, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	if ref.ContainerName == "" {
		return "", fmt.Errorf("resourceFieldRef %q: containerName is required in a volume", ref.Resource)
	}
	c := kubecontainer.SpecOf(pod, ref.ContainerName)
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef %q: the pod has no container %q", ref.Resource, ref.ContainerName)
	}
	limits := make(v1.ResourceList, len(c.Resources.Limits)+3)
	for k, q := range c.Resources.Limits {
		limits[k] = q
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := limits[name]; !ok || q.IsZero() {
			if a, ok := allocatable[name]; ok {
				limits[name] = a.DeepCopy()
			}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	var list v1.ResourceList
	switch {
	case ok && kind == "limits":
		list = limits
	case ok && kind == "requests":
		list = c.Resources.Requests
	default:
		return "", fmt.Errorf("resourceFieldRef %q is not supported: use limits.<name> or requests.<name>", ref.Resource)
	}
	rn := v1.ResourceName(name)
	q := list[rn]
	switch {
	case rn == v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == v1.ResourceMemory, rn == v1.ResourceEphemeralStorage, strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("resourceFieldRef %q is not supported: use cpu, memory, ephemeral-storage or hugepages-<size>", ref.Resource)
}
