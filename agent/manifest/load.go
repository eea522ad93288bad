package manifest

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Load turns a manifest into the static pod of this node: Decode, Default,
// Validate, ValidateStatic, ApplyStaticIdentity. The error, if any, names the
// field and the reason; a validation failure is an *InvalidError listing
// every field at once. Load never returns a partial pod.
func Load(data []byte, in Identity) (*v1.Pod, error) {
	pod, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if errs := prepare(pod, in, nil); len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	return pod, nil
}

// LoadList turns the body of a manifest URL (one Pod or a PodList, see
// DecodeList) into the static pods of this node: DecodeList, then Default,
// Validate, ValidateStatic and ApplyStaticIdentity for each pod. The pods
// are in the order of the body.
//
// One bad item rejects the whole body, as the kubelet does: the error is an
// *InvalidError listing every problem of every item, each path starting
// with the item (`items[2].spec.containers[0].image: Required value`) when
// the body is a PodList. Two items defining the same pod (namespace and
// name) are an error too. LoadList never returns a partial list.
func LoadList(data []byte, in Identity) ([]*v1.Pod, error) {
	pods, isList, err := decodeList(data)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	first := map[string]bool{} // namespace/name as written, defaulted namespace
	for i, pod := range pods {
		var root *field.Path
		if isList {
			root = field.NewPath("items").Index(i)
		}
		ns := pod.Namespace
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		if key := ns + "/" + pod.Name; pod.Name != "" && first[key] {
			errs = append(errs, field.Duplicate(under(root, "metadata").Child("name"), pod.Name))
		} else {
			first[key] = true
		}
		errs = append(errs, prepare(pod, in, root)...)
	}
	if len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	return pods, nil
}

// prepare defaults and validates one decoded pod and, when it is valid,
// gives it its static identity; root prefixes the paths of its errors.
func prepare(pod *v1.Pod, in Identity, root *field.Path) field.ErrorList {
	Default(pod)
	errs := validatePod(pod, root)
	errs = append(errs, validateStatic(pod, root)...)
	if len(errs) > 0 {
		return errs
	}
	name := pod.Name
	ApplyStaticIdentity(pod, in)
	// The node suffix can make a valid name too long.
	if msgs := isDNS1123Subdomain(pod.Name); len(msgs) > 0 {
		detail := "with the node name suffix " + pod.Name + ": " + strings.Join(msgs, "; ")
		return field.ErrorList{field.Invalid(under(root, "metadata").Child("name"), name, detail)}
	}
	return nil
}

// InvalidError is a pod, or a list of pods, that decoded but failed
// validation.
type InvalidError struct {
	// Errs has at least one entry.
	Errs field.ErrorList
}

// Error lists each problem as `path: reason`, separated by "; ": at most
// maxListed of them, a long value quoted only in part.
func (e *InvalidError) Error() string {
	msgs := make([]string, 0, min(len(e.Errs), maxListed))
	for _, err := range e.Errs[:min(len(e.Errs), maxListed)] {
		if s, ok := err.BadValue.(string); ok && len(s) > maxShown {
			short := *err
			short.BadValue = elide(s, maxShown)
			err = &short
		}
		msgs = append(msgs, err.Error())
	}
	return "invalid pod: " + joinErrors(msgs, len(e.Errs))
}
