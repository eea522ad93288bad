package config

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The kubelet's KubeletConfiguration is known here by its fields' paths
// alone (kubeletFieldPaths, generated from k8s.io/kubelet/config/v1beta1 by
// TestKubeletFieldPaths): a field of a struct is "a.b", one of the structs
// of a list "a[].b". minikubelet's own KubeletConfiguration decodes the
// fields it implements; these paths tell a field the kubelet has, which
// minikubelet ignores with a warning, from one that nobody has, which is a
// mistake.

// withoutIndices writes the indices of list elements in a path, as
// sigs.k8s.io/json writes them ("reservedMemory[2].numaNode"), as the
// table does: "reservedMemory[].numaNode".
func withoutIndices(path string) string {
	if !strings.Contains(path, "[") {
		return path
	}
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if path[i] == '[' {
			if j := strings.IndexByte(path[i:], ']'); j > 1 && strings.Trim(path[i+1:i+j], "0123456789") == "" {
				b.WriteString("[]")
				i += j
				continue
			}
		}
		b.WriteByte(path[i])
	}
	return b.String()
}

// isKubeletField reports whether path, list indices and all, names a field
// of the kubelet's KubeletConfiguration.
func isKubeletField(path string) bool {
	_, found := slices.BinarySearch(kubeletFieldPaths, withoutIndices(path))
	return found
}

// hasKubeletFields reports whether the kubelet's field at path is a struct
// (or a list of them) whose own fields are known.
func hasKubeletFields(path string) bool {
	prefix := withoutIndices(path) + "."
	i, _ := slices.BinarySearch(kubeletFieldPaths, prefix)
	return i < len(kubeletFieldPaths) && strings.HasPrefix(kubeletFieldPaths[i], prefix)
}

// notKubeletFields returns the paths below path, the kubelet's field
// holding v (JSON decoded into any), that name no field of the kubelet's,
// sorted. Below a field that is a map or holds free-form values nothing is
// checked.
func notKubeletFields(path string, v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if !hasKubeletFields(path) {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := path + "." + k
			if !isKubeletField(p) {
				out = append(out, p)
				continue
			}
			out = append(out, notKubeletFields(p, v[k])...)
		}
	case []any:
		for i, e := range v {
			out = append(out, notKubeletFields(path+"["+strconv.Itoa(i)+"]", e)...)
		}
	}
	return out
}

// valueAt returns the value at path in doc (JSON decoded into any), or nil.
// path is one sigs.k8s.io/json reported of a struct's fields, so its dots
// separate field names (none of them a map's key).
func valueAt(doc any, path string) any {
	for _, seg := range strings.Split(path, ".") {
		name, indices, _ := strings.Cut(seg, "[")
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[name]
		if indices == "" {
			continue
		}
		for _, ix := range strings.Split(strings.TrimSuffix(indices, "]"), "][") {
			l, ok := doc.([]any)
			i, err := strconv.Atoi(ix)
			if !ok || err != nil || i < 0 || i >= len(l) {
				return nil
			}
			doc = l[i]
		}
	}
	return doc
}
