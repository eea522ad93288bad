package manifest

import (
	"path"
	"reflect"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes checks the pod's volumes and returns their names, which
// volume mounts refer to. A volume with no type is accepted: the API server
// makes it an emptyDir.
func validateVolumes(volumes []v1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range volumes {
		v := &volumes[i]
		idx := fldPath.Index(i)
		switch {
		case v.Name == "":
			errs = append(errs, field.Required(idx.Child("name"), ""))
		case names.Has(v.Name):
			errs = append(errs, field.Duplicate(idx.Child("name"), v.Name))
		default:
			for _, msg := range isDNS1123Label(v.Name) {
				errs = append(errs, field.Invalid(idx.Child("name"), v.Name, msg))
			}
		}
		names.Insert(v.Name)
		if countVolumeTypes(&v.VolumeSource) > 1 {
			errs = append(errs, field.Forbidden(idx, "may not specify more than 1 volume type"))
		}
		if v.HostPath != nil {
			errs = append(errs, validateHostPath(v.HostPath, idx.Child("hostPath"))...)
		}
		if ed := v.EmptyDir; ed != nil && ed.SizeLimit != nil {
			errs = append(errs, validateQuantity(*ed.SizeLimit, false, idx.Child("emptyDir", "sizeLimit"))...)
		}
		if d := v.DownwardAPI; d != nil {
			errs = append(errs, validateDownwardAPIItems(d.Items, idx.Child("downwardAPI", "items"))...)
		}
		if im := v.Image; im != nil {
			errs = append(errs, validateImageVolume(im, idx.Child("image"))...)
		}
		if p := v.Projected; p != nil {
			for j, src := range p.Sources {
				if src.DownwardAPI != nil {
					errs = append(errs, validateDownwardAPIItems(src.DownwardAPI.Items, idx.Child("projected", "sources").Index(j).Child("downwardAPI", "items"))...)
				}
			}
		}
	}
	return names, errs
}

// validateImageVolume checks an image volume as the API server checks a
// pod's: a reference, and a known pullPolicy (Default sets one).
func validateImageVolume(im *v1.ImageVolumeSource, fldPath *field.Path) field.ErrorList {
	errs := validateImage(im.Reference, fldPath.Child("reference"))
	supported := []v1.PullPolicy{v1.PullAlways, v1.PullNever, v1.PullIfNotPresent}
	if !slices.Contains(supported, im.PullPolicy) {
		errs = append(errs, field.NotSupported(fldPath.Child("pullPolicy"), im.PullPolicy, supported))
	}
	return errs
}

// validateDownwardAPIItems checks the files of a downward API volume or
// projection: each path stays inside the volume (relative, no '..'
// element, not starting with '..', as the API server requires), and a
// resource's divisor is one the API server accepts.
func validateDownwardAPIItems(items []v1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, item := range items {
		idx := fldPath.Index(i)
		if item.Path == "" {
			errs = append(errs, field.Required(idx.Child("path"), ""))
		} else {
			errs = append(errs, validateLocalDescendingPath(item.Path, idx.Child("path"))...)
			if strings.HasPrefix(item.Path, "..") {
				errs = append(errs, field.Invalid(idx.Child("path"), item.Path, "must not start with '..'"))
			}
		}
		if r := item.ResourceFieldRef; r != nil {
			errs = append(errs, validateDivisor(r.Resource, r.Divisor, idx.Child("resourceFieldRef", "divisor"))...)
		}
	}
	return errs
}

// countVolumeTypes counts the volume types set in src. Every field of
// v1.VolumeSource is a pointer to one type; reflection keeps the count right
// when the API gains a type.
func countVolumeTypes(src *v1.VolumeSource) int {
	n := 0
	rv := reflect.ValueOf(src).Elem()
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// validateHostPath checks that a hostPath volume names an absolute path
// without a '..' element, and a known type.
func validateHostPath(hp *v1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case hp.Path == "":
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	case !path.IsAbs(hp.Path):
		// The API server accepts a relative path (for Windows nodes); on
		// Linux the runtime would resolve it against its own working
		// directory.
		errs = append(errs, field.Invalid(fldPath.Child("path"), hp.Path, "must be an absolute path"))
		errs = append(errs, validateNoBacksteps(hp.Path, fldPath.Child("path"))...)
	default:
		errs = append(errs, validateNoBacksteps(hp.Path, fldPath.Child("path"))...)
	}
	supported := []v1.HostPathType{
		v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
		v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev,
	}
	if t := hp.Type; t != nil && !slices.Contains(supported, *t) {
		errs = append(errs, field.NotSupported(fldPath.Child("type"), *t, supported))
	}
	return errs
}

// validateVolumeMounts checks that each mount names a volume of the pod and
// an absolute mount path no other mount of the container uses, and that a
// subPath stays inside its volume.
func validateVolumeMounts(mounts []v1.VolumeMount, volumes sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPaths := sets.New[string]()
	supportedPropagation := []v1.MountPropagationMode{v1.MountPropagationNone, v1.MountPropagationHostToContainer, v1.MountPropagationBidirectional}
	for i, m := range mounts {
		idx := fldPath.Index(i)
		switch {
		case m.Name == "":
			errs = append(errs, field.Required(idx.Child("name"), ""))
		case !volumes.Has(m.Name):
			errs = append(errs, field.NotFound(idx.Child("name"), m.Name))
		}
		switch {
		case m.MountPath == "":
			errs = append(errs, field.Required(idx.Child("mountPath"), ""))
		case !path.IsAbs(m.MountPath):
			errs = append(errs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be an absolute path"))
		case mountPaths.Has(path.Clean(m.MountPath)):
			errs = append(errs, field.Invalid(idx.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(path.Clean(m.MountPath))
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, idx.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(idx.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, idx.Child("subPathExpr"))...)
		}
		if p := m.MountPropagation; p != nil && !slices.Contains(supportedPropagation, *p) {
			errs = append(errs, field.NotSupported(idx.Child("mountPropagation"), *p, supportedPropagation))
		}
	}
	return errs
}

// validateBidirectional refuses Bidirectional mount propagation in a
// container that is not privileged, as the apiserver does: such a mount
// can propagate mounts back to the host.
func validateBidirectional(c *v1.Container, fldPath *field.Path) field.ErrorList {
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	var errs field.ErrorList
	for i, m := range c.VolumeMounts {
		if !privileged && m.MountPropagation != nil && *m.MountPropagation == v1.MountPropagationBidirectional {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("mountPropagation"), "Bidirectional mount propagation is available only to privileged containers"))
		}
	}
	return errs
}

// validateLocalDescendingPath checks that p is relative and has no ".."
// element, so that it cannot leave the directory it is joined to.
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.IsAbs(p) {
		errs = append(errs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	errs = append(errs, validateNoBacksteps(p, fldPath)...)
	return errs
}

func validateNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	if slices.Contains(strings.Split(p, "/"), "..") {
		return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
	}
	return nil
}
