package manifest

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Load turns a manifest into the static pod of this node: Decode, Default,
// Validate, ApplyStaticIdentity. The error, if any, names the field and the
// reason; a validation failure is an *InvalidError listing every field at
// once. Load never returns a partial pod.
func Load(data []byte, in Identity) (*v1.Pod, error) {
	pod, err := Decode(data)
	if err != nil {
		return nil, err
	}
	Default(pod)
	if errs := Validate(pod); len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	name := pod.Name
	ApplyStaticIdentity(pod, in)
	// The node suffix can make a valid name too long.
	if msgs := validation.IsDNS1123Subdomain(pod.Name); len(msgs) > 0 {
		detail := "with the node name suffix " + pod.Name + ": " + strings.Join(msgs, "; ")
		return nil, &InvalidError{Errs: field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, detail)}}
	}
	return pod, nil
}

// InvalidError is a pod that decoded but failed validation.
type InvalidError struct {
	// Errs has at least one entry.
	Errs field.ErrorList
}

// Error lists each problem as `path: reason`, separated by "; ".
func (e *InvalidError) Error() string {
	msgs := make([]string, 0, len(e.Errs))
	for _, err := range e.Errs {
		msgs = append(msgs, err.Error())
	}
	return "invalid pod: " + strings.Join(msgs, "; ")
}
