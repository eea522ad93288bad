package manifest

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateStatic returns what a static pod (one from a file or a manifest
// URL) may not use, on top of Validate: a static pod runs without the API
// server, so it may not reference API objects. It rejects what the kubelet
// rejects since Kubernetes 1.34 (podutil.HasAPIObjectReference, enforced
// when its static pods are decoded):
//
//   - spec.serviceAccountName (any value, "default" too) and the deprecated
//     spec.serviceAccount;
//   - spec.imagePullSecrets, env valueFrom secretKeyRef and configMapKeyRef,
//     envFrom secretRef and configMapRef;
//   - secret, configMap, persistentVolumeClaim, ephemeral, csi, glusterfs
//     and azureFile volumes, and the secretRef of cephfs, cinder,
//     flexVolume, iscsi, rbd, scaleIO and storageOS volumes;
//   - projected volumes with secret, configMap, serviceAccountToken,
//     clusterTrustBundle or podCertificate sources (downwardAPI is fine);
//   - spec.resourceClaims;
//
// and, as the API server refuses them on create, spec.ephemeralContainers.
// Each rejection is a Forbidden error on the field, for example
// `spec.volumes[0].secret: Forbidden: static pods may not reference
// secrets: ...`. ValidateStatic does not modify the pod.
func ValidateStatic(pod *v1.Pod) field.ErrorList {
	return validateStatic(pod, nil)
}

func validateStatic(pod *v1.Pod, root *field.Path) field.ErrorList {
	spec := &pod.Spec
	path := under(root, "spec")
	var errs field.ErrorList
	if spec.ServiceAccountName != "" {
		errs = append(errs, forbidStatic(path.Child("serviceAccountName"), "serviceaccounts"))
	}
	if spec.DeprecatedServiceAccount != "" {
		errs = append(errs, forbidStatic(path.Child("serviceAccount"), "serviceaccounts"))
	}
	for i := range spec.ImagePullSecrets {
		errs = append(errs, forbidStatic(path.Child("imagePullSecrets").Index(i), "secrets"))
	}
	if len(spec.ResourceClaims) > 0 {
		errs = append(errs, forbidStatic(path.Child("resourceClaims"), "resourceclaims"))
	}
	if len(spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("ephemeralContainers"), "cannot be set on create: a static pod has no ephemeral containers"))
	}
	for i := range spec.Volumes {
		errs = append(errs, validateStaticVolume(&spec.Volumes[i].VolumeSource, path.Child("volumes").Index(i))...)
	}
	for _, group := range []struct {
		path       *field.Path
		containers []v1.Container
	}{
		{path.Child("initContainers"), spec.InitContainers},
		{path.Child("containers"), spec.Containers},
	} {
		for i := range group.containers {
			errs = append(errs, validateStaticEnv(&group.containers[i], group.path.Index(i))...)
		}
	}
	return errs
}

// forbidStatic is the error for a static pod's reference to an object of
// the API resource kind (plural, lowercase, as the kubelet names it).
func forbidStatic(path *field.Path, kind string) *field.Error {
	detail := "static pods may not reference " + kind
	switch kind {
	case "secrets", "configmaps":
		detail += ": a static pod runs without the API server; put the files on the node and mount them with a hostPath volume"
	case "serviceaccounts":
		detail += ": a static pod runs without the API server; remove the field"
	}
	return field.Forbidden(path, detail)
}

func validateStaticVolume(v *v1.VolumeSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, ref := range []struct {
		set   bool
		field []string // the path below the volume
		kind  string
	}{
		{v.Secret != nil, []string{"secret"}, "secrets"},
		{v.ConfigMap != nil, []string{"configMap"}, "configmaps"},
		{v.PersistentVolumeClaim != nil, []string{"persistentVolumeClaim"}, "persistentvolumeclaims"},
		{v.Ephemeral != nil, []string{"ephemeral"}, "persistentvolumeclaims"},
		{v.CSI != nil, []string{"csi"}, "csidrivers"},
		{v.Glusterfs != nil, []string{"glusterfs"}, "endpoints"},
		{v.AzureFile != nil, []string{"azureFile"}, "secrets"},
		{v.CephFS != nil && v.CephFS.SecretRef != nil, []string{"cephfs", "secretRef"}, "secrets"},
		{v.Cinder != nil && v.Cinder.SecretRef != nil, []string{"cinder", "secretRef"}, "secrets"},
		{v.FlexVolume != nil && v.FlexVolume.SecretRef != nil, []string{"flexVolume", "secretRef"}, "secrets"},
		{v.ISCSI != nil && v.ISCSI.SecretRef != nil, []string{"iscsi", "secretRef"}, "secrets"},
		{v.RBD != nil && v.RBD.SecretRef != nil, []string{"rbd", "secretRef"}, "secrets"},
		{v.ScaleIO != nil && v.ScaleIO.SecretRef != nil, []string{"scaleIO", "secretRef"}, "secrets"},
		{v.StorageOS != nil && v.StorageOS.SecretRef != nil, []string{"storageos", "secretRef"}, "secrets"},
	} {
		if ref.set {
			errs = append(errs, forbidStatic(path.Child(ref.field[0], ref.field[1:]...), ref.kind))
		}
	}
	if v.Projected != nil {
		srcPath := path.Child("projected", "sources")
		for i, s := range v.Projected.Sources {
			idx := srcPath.Index(i)
			switch {
			case s.Secret != nil:
				errs = append(errs, forbidStatic(idx.Child("secret"), "secrets"))
			case s.ConfigMap != nil:
				errs = append(errs, forbidStatic(idx.Child("configMap"), "configmaps"))
			case s.ServiceAccountToken != nil:
				errs = append(errs, forbidStatic(idx.Child("serviceAccountToken"), "serviceaccounts"))
			case s.ClusterTrustBundle != nil:
				errs = append(errs, forbidStatic(idx.Child("clusterTrustBundle"), "clustertrustbundles"))
			case s.PodCertificate != nil:
				errs = append(errs, forbidStatic(idx.Child("podCertificate"), "podcertificates"))
			case s.DownwardAPI != nil:
			default:
				errs = append(errs, field.Required(idx, "must specify one projection source: a static pod may use downwardAPI"))
			}
		}
	}
	return errs
}

func validateStaticEnv(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		p := path.Child("env").Index(i).Child("valueFrom")
		if e.ValueFrom.SecretKeyRef != nil {
			errs = append(errs, forbidStatic(p.Child("secretKeyRef"), "secrets"))
		}
		if e.ValueFrom.ConfigMapKeyRef != nil {
			errs = append(errs, forbidStatic(p.Child("configMapKeyRef"), "configmaps"))
		}
	}
	for i, e := range c.EnvFrom {
		p := path.Child("envFrom").Index(i)
		if e.SecretRef != nil {
			errs = append(errs, forbidStatic(p.Child("secretRef"), "secrets"))
		}
		if e.ConfigMapRef != nil {
			errs = append(errs, forbidStatic(p.Child("configMapRef"), "configmaps"))
		}
	}
	return errs
}
