package downward

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// errNotMetadata: the field is none of the pod's metadata fields.
var errNotMetadata = errors.New("not a metadata field")

// metadataField is the value of one of the pod's metadata fields:
// metadata.name, .namespace, .uid, .labels, .annotations, and one label or
// annotation as metadata.labels['key'] (empty when the key is missing). A
// path that names no metadata field is an error wrapping errNotMetadata.
func metadataField(pod *v1.Pod, path string) (string, error) {
	if field, key, ok := subscripted(path); ok {
		switch field {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldRef %q: only metadata.labels and metadata.annotations take a ['key']", path)
	}
	switch path {
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
	return "", fmt.Errorf("fieldRef %q: %w", path, errNotMetadata)
}

// subscripted splits "field['key']".
func subscripted(path string) (field, key string, ok bool) {
	rest, found := strings.CutSuffix(path, "']")
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
