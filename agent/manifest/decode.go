package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/json"

	"github.com/minikubelet/minikubelet/internal/boundedyaml"
)

// MaxSize is the largest manifest Decode accepts, in bytes. Sources reading
// a manifest should read at most MaxSize+1 bytes and hand them to Decode,
// which then reports the manifest as too large.
const MaxSize = 10 << 20

// Decode decodes one v1 Pod from YAML or JSON, strictly: unknown and
// duplicate fields are errors naming the field path (for example
// `unknown field "spec.containers[0].imagee"`), apiVersion must be "v1" and
// kind "Pod", and the data must hold exactly one non-empty document of at most
// MaxSize bytes. Decode neither defaults nor validates the pod.
func Decode(data []byte) (*v1.Pod, error) {
	js, err := readDocument(data)
	if err != nil {
		return nil, err
	}
	if _, err := checkTypeMeta(js, false); err != nil {
		return nil, err
	}
	return decodePod(js)
}

// DecodeList decodes the body of a manifest URL: one v1 Pod, or a v1 PodList
// (kind PodList, the pods in items), YAML or JSON, as strictly as Decode.
// Errors in a PodList name the item, for example
// `unknown field "items[2].spec.containers[0].imagee"`; an item may leave out
// apiVersion and kind, or must set them to v1 and Pod. A PodList without
// items is no error: it holds no pods. DecodeList neither defaults nor
// validates the pods.
func DecodeList(data []byte) ([]*v1.Pod, error) {
	pods, _, err := decodeList(data)
	return pods, err
}

// decodeList is DecodeList; isList tells whether data held a PodList.
func decodeList(data []byte) (pods []*v1.Pod, isList bool, err error) {
	js, err := readDocument(data)
	if err != nil {
		return nil, false, err
	}
	kind, err := checkTypeMeta(js, true)
	if err != nil {
		return nil, false, err
	}
	if kind == "Pod" {
		pod, err := decodePod(js)
		if err != nil {
			return nil, false, err
		}
		return []*v1.Pod{pod}, false, nil
	}
	list := &v1.PodList{}
	strictErrs, err := json.UnmarshalStrict(js, list)
	if err != nil {
		return nil, true, fmt.Errorf("decode PodList: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, true, &StrictError{Errs: strictErrs}
	}
	pods = make([]*v1.Pod, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		switch {
		case pod.APIVersion != "" && pod.APIVersion != "v1":
			return nil, true, fmt.Errorf(`items[%d].apiVersion is %q: set "apiVersion: v1" or leave it out`, i, pod.APIVersion)
		case pod.Kind != "" && pod.Kind != "Pod":
			return nil, true, fmt.Errorf(`items[%d].kind is %q: set "kind: Pod" or leave it out (a PodList holds only pods)`, i, pod.Kind)
		}
		pods[i] = pod
	}
	return pods, true, nil
}

// readDocument checks the size of data, that it is UTF-8 and within the
// bounds of limits.go, and returns the one JSON document it holds.
func readDocument(data []byte) ([]byte, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("manifest is larger than %d bytes: a pod manifest must be smaller", MaxSize)
	}
	if err := checkUTF8(data); err != nil {
		return nil, err
	}
	js, err := toJSON(data)
	if err != nil {
		return nil, err
	}
	if err := checkJSON(js); err != nil {
		return nil, err
	}
	return js, nil
}

// decodePod decodes js, an object of kind Pod, strictly.
func decodePod(js []byte) (*v1.Pod, error) {
	pod := &v1.Pod{}
	strictErrs, err := json.UnmarshalStrict(js, pod)
	if err != nil {
		return nil, fmt.Errorf("decode Pod: %w", err)
	}
	if len(strictErrs) > 0 {
		return nil, &StrictError{Errs: strictErrs}
	}
	return pod, nil
}

// StrictError lists the unknown and duplicate fields of a manifest.
type StrictError struct {
	Errs []error
}

// Error lists each field with its fix, separated by "; ".
// At most maxListed are listed, each shortened to a few hundred bytes.
func (e *StrictError) Error() string {
	msgs := make([]string, 0, min(len(e.Errs), maxListed))
	for _, err := range e.Errs[:min(len(e.Errs), maxListed)] {
		msg := elide(err.Error(), 8*maxShown)
		switch {
		case strings.HasPrefix(msg, "unknown field"):
			msg += ": fix its spelling or remove it"
		case strings.HasPrefix(msg, "duplicate field"):
			msg += ": set it only once"
		}
		msgs = append(msgs, msg)
	}
	return joinErrors(msgs, len(e.Errs))
}

// Unwrap returns the individual field errors.
func (e *StrictError) Unwrap() []error { return e.Errs }

var errEmpty = errors.New("manifest is empty: it must hold one Pod (apiVersion: v1, kind: Pod)")

// toJSON returns the one JSON document data holds. JSON is passed through
// as it is, so that the strict decoder reports duplicate fields with their
// path; YAML is split into documents and converted strictly, so that a key
// set twice in a YAML map is reported (with its line) instead of silently
// keeping the last value. Documents of only blank lines and comments are
// skipped without being decoded.
func toJSON(data []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errEmpty
	}
	if bytes.TrimLeft(data, jsonSpace)[0] == '{' {
		return data, nil // untrimmed, so that error offsets are the file's
	}
	var doc []byte
	decoded := 0
	err := eachYAML(data, func(n int, raw []byte) error {
		if blankYAML(raw) {
			return nil
		}
		if decoded++; decoded > maxYAMLDocuments {
			return fmt.Errorf("manifest holds more than %d YAML documents: it must hold one Pod", maxYAMLDocuments)
		}
		js, err := boundedyaml.ToJSON(raw, yamlLimits)
		if err != nil {
			return fmt.Errorf("YAML document %d: %s", n, tidyYAMLError(err))
		}
		if isNull(js) {
			return nil
		}
		if doc != nil {
			return errors.New("manifest holds more than one YAML document: put each pod in its own file")
		}
		doc = js
		return nil
	})
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, errEmpty
	}
	return doc, nil
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// lineColumn returns the line and column (both from 1, the column in
// characters) of the byte at off in data, or of its end.
func lineColumn(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	return 1 + bytes.Count(data[:off], []byte{'\n'}), 1 + utf8.RuneCount(data[start:off])
}

func isNull(js []byte) bool {
	js = bytes.TrimSpace(js)
	return len(js) == 0 || string(js) == "null"
}

// tidyYAMLError puts the multi-line messages of the YAML library on one line.
func tidyYAMLError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	lines := strings.Split(msg, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	msg = strings.Replace(strings.Join(lines, " "), "unmarshal errors: ", "", 1)
	if strings.Contains(msg, "already set in map") {
		msg = elide(msg, 8*maxShown) + ": remove the duplicate key"
	}
	return elide(msg, 8*maxShown)
}

// checkTypeMeta makes sure js is an object of apiVersion v1 and kind Pod,
// or PodList when list is true, and returns the kind, before the strict
// decode would report every field of some other kind as unknown.
func checkTypeMeta(js []byte, list bool) (string, error) {
	what, fix := "one Pod (apiVersion: v1, kind: Pod)",
		`set "kind: Pod" (a static pod manifest holds one Pod; no other kind can run from it)`
	if list {
		what, fix = "one Pod or a PodList (apiVersion: v1, kind: Pod or PodList)",
			`set "kind: Pod" or "kind: PodList" (a manifest URL serves one Pod or a PodList of pods)`
	}
	if bytes.TrimLeft(js, jsonSpace)[0] != '{' {
		return "", errors.New("manifest is not an object: it must hold " + what)
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		if ok, off := json.SyntaxErrorOffset(err); ok {
			// The offset is of the byte after the one that is wrong,
			// unless the document ended too soon.
			if off > 0 && int(off) < len(js) {
				off--
			}
			line, col := lineColumn(js, int(off))
			return "", fmt.Errorf("manifest is not valid JSON: line %d, column %d: %s: check the brackets, commas and quotes before it", line, col, elide(err.Error(), maxShown))
		}
		return "", fmt.Errorf("decode apiVersion and kind: %w", err)
	}
	switch {
	case tm.APIVersion == "":
		return "", errors.New(`apiVersion is missing: set "apiVersion: v1"`)
	case tm.APIVersion != "v1":
		return "", fmt.Errorf(`apiVersion is %q: set "apiVersion: v1" (a manifest holds %s)`, tm.APIVersion, what)
	case tm.Kind == "":
		return "", errors.New("kind is missing: " + fix)
	case tm.Kind != "Pod" && (!list || tm.Kind != "PodList"):
		return "", fmt.Errorf("kind is %q: %s", tm.Kind, fix)
	}
	return tm.Kind, nil
}
