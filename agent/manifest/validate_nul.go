package manifest

import (
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// nulMsg is why a string with a NUL character is refused.
const nulMsg = "must not contain a NUL character: the runtime and the kernel end a string at its first NUL"

// validateNoNUL refuses a NUL character in any string of the pod, map
// keys included. The API server accepts one in free text (annotations, env
// values, commands); a node cannot pass it on, and the container would
// fail at its start with an error that does not name the field. The
// strings are walked by reflection, so a field the API gains is covered.
func validateNoNUL(pod *v1.Pod, root *field.Path) field.ErrorList {
	w := nulWalker{root: root}
	w.walk(reflect.ValueOf(pod).Elem())
	return w.errs
}

// pathElem is one step of a nulWalker's path: a member name, or an index
// or map key when name is empty.
type pathElem struct {
	name  string
	index int
	key   string
	isKey bool
}

// nulWalker walks a value's strings, keeping the path as a stack and
// building a field.Path only for a string it refuses.
type nulWalker struct {
	root  *field.Path
	stack []pathElem
	errs  field.ErrorList
}

func (w *nulWalker) path() *field.Path {
	p := w.root
	for _, e := range w.stack {
		switch {
		case e.name != "":
			p = under(p, e.name)
		case e.isKey:
			p = p.Key(e.key)
		default:
			p = p.Index(e.index)
		}
	}
	if p == nil {
		return field.NewPath("<root>")
	}
	return p
}

func (w *nulWalker) check(s string) {
	if strings.IndexByte(s, 0) >= 0 {
		w.errs = append(w.errs, field.Invalid(w.path(), s, nulMsg))
	}
}

func (w *nulWalker) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		w.check(v.String())
	case reflect.Pointer:
		if !v.IsNil() {
			w.walk(v.Elem())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes are no text
		}
		for i := range v.Len() {
			w.stack = append(w.stack, pathElem{index: i})
			w.walk(v.Index(i))
			w.stack = w.stack[:len(w.stack)-1]
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() == reflect.String {
				w.check(k.String())
				w.stack = append(w.stack, pathElem{key: k.String(), isKey: true})
			} else {
				w.stack = append(w.stack, pathElem{key: "?", isKey: true})
			}
			w.walk(iter.Value())
			w.stack = w.stack[:len(w.stack)-1]
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			// A field without a JSON name (inline, or a type that
			// marshals itself, as IntOrString) is checked at its
			// parent's path.
			if name != "" {
				w.stack = append(w.stack, pathElem{name: name})
			}
			w.walk(v.Field(i))
			if name != "" {
				w.stack = w.stack[:len(w.stack)-1]
			}
		}
	}
}
