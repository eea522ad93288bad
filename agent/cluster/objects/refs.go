package objects

import (
	v1 "k8s.io/api/core/v1"
)

// references are the names of the configMaps and secrets, in the pod's
// namespace, that one pod refers to.
type references struct {
	configMaps map[string]bool
	secrets    map[string]bool
}

// referencesOf returns what pod refers to and the agent reads: configMap
// and secret volumes and projections, env valueFrom and envFrom of every
// init, regular and ephemeral container, and imagePullSecrets. These are
// the references the Node authorizer lets the pod's node read (besides
// the secrets of volume types the agent does not support).
func referencesOf(pod *v1.Pod) references {
	refs := references{configMaps: map[string]bool{}, secrets: map[string]bool{}}
	add := func(set map[string]bool, name string) {
		if name != "" {
			set[name] = true
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		add(refs.secrets, s.Name)
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i].VolumeSource
		if v.ConfigMap != nil {
			add(refs.configMaps, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			add(refs.secrets, v.Secret.SecretName)
		}
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap != nil {
				add(refs.configMaps, s.ConfigMap.Name)
			}
			if s.Secret != nil {
				add(refs.secrets, s.Secret.Name)
			}
		}
	}
	env := func(envFrom []v1.EnvFromSource, envs []v1.EnvVar) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				add(refs.configMaps, e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(refs.secrets, e.SecretRef.Name)
			}
		}
		for _, e := range envs {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(refs.configMaps, r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(refs.secrets, r.Name)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.Containers {
		env(c.EnvFrom, c.Env)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		env(c.EnvFrom, c.Env)
	}
	return refs
}
