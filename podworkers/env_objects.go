package podworkers

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// objectSource serves the configMaps and secrets a pod's env and
// imagePullSecrets refer to (node mode; nil standalone). Safe for
// concurrent use; it answers from a cache. A missing object yields an
// error for which apierrors.IsNotFound holds.
type objectSource interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// envObjects are the configMaps and secrets a pod's containers' env
// refers to, read once per sync; an entry with a nil object and an error
// could not be read.
type envObjects struct {
	configMaps map[string]objectResult[*v1.ConfigMap]
	secrets    map[string]objectResult[*v1.Secret]
}

type objectResult[T any] struct {
	obj T
	err error
}

// readEnvObjects reads every configMap and secret the env and envFrom of
// pod's containers refer to. Without an object source it reads nothing:
// references then fail with configErrors.
func readEnvObjects(ctx context.Context, objects objectSource, pod *v1.Pod) envObjects {
	out := envObjects{configMaps: map[string]objectResult[*v1.ConfigMap]{}, secrets: map[string]objectResult[*v1.Secret]{}}
	if objects == nil {
		return out
	}
	cm := func(name string) {
		if _, ok := out.configMaps[name]; !ok {
			o, err := objects.GetConfigMap(ctx, pod.Namespace, name)
			out.configMaps[name] = objectResult[*v1.ConfigMap]{o, err}
		}
	}
	sec := func(name string) {
		if _, ok := out.secrets[name]; !ok {
			o, err := objects.GetSecret(ctx, pod.Namespace, name)
			out.secrets[name] = objectResult[*v1.Secret]{o, err}
		}
	}
	visit := func(c *v1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				cm(e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				sec(e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				cm(r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				sec(r.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(kubecontainer.EphemeralSpec(&pod.Spec.EphemeralContainers[i]))
	}
	return out
}

// lookupObject returns the object of a reference: ok false with a nil
// error when it is missing and optional (to be skipped), an error when it
// is missing and required or cannot be read.
func lookupObject[T any](m map[string]objectResult[T], kind, name string, optional bool) (T, bool, error) {
	var zero T
	r, ok := m[name]
	if !ok {
		return zero, false, fmt.Errorf("%s %q: needs an apiserver source (static pods cannot refer to %ss)", kind, name, kind)
	}
	if r.err != nil {
		if apierrors.IsNotFound(r.err) && optional {
			return zero, false, nil
		}
		if apierrors.IsNotFound(r.err) {
			return zero, false, fmt.Errorf("%s %q not found", kind, name)
		}
		return zero, false, fmt.Errorf("%s %q: %w", kind, name, r.err)
	}
	return r.obj, true, nil
}

// envFromVars returns the variables of a container's envFrom, in order:
// each source's keys sorted, prefixed; a later source overrides an earlier
// one. Keys that are not valid variable names are skipped, as the kubelet
// skips them: since the kubelet's RelaxedEnvironmentVariableValidation
// (GA in 1.34) any printable ASCII name without '=' is valid, so a key
// such as "1-data-1" is set.
func envFromVars(c *v1.Container, objs envObjects) ([][2]string, error) {
	var out [][2]string
	for i, src := range c.EnvFrom {
		var data map[string]string
		switch {
		case src.ConfigMapRef != nil:
			cm, ok, err := lookupObject(objs.configMaps, "configMap", src.ConfigMapRef.Name, ptr.Deref(src.ConfigMapRef.Optional, false))
			if err != nil {
				return nil, fmt.Errorf("envFrom[%d]: %w", i, err)
			}
			if ok {
				data = cm.Data
			}
		case src.SecretRef != nil:
			s, ok, err := lookupObject(objs.secrets, "secret", src.SecretRef.Name, ptr.Deref(src.SecretRef.Optional, false))
			if err != nil {
				return nil, fmt.Errorf("envFrom[%d]: %w", i, err)
			}
			if ok {
				data = make(map[string]string, len(s.Data))
				for k, v := range s.Data {
					data[k] = string(v)
				}
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := src.Prefix + k
			if len(validation.IsRelaxedEnvVarName(name)) > 0 {
				continue
			}
			out = append(out, [2]string{name, data[k]})
		}
	}
	return out, nil
}

// keyRefValue resolves valueFrom.configMapKeyRef or secretKeyRef; ok false
// when the reference is optional and missing (the variable is left out).
func keyRefValue(src *v1.EnvVarSource, objs envObjects) (string, bool, error) {
	if r := src.ConfigMapKeyRef; r != nil {
		optional := ptr.Deref(r.Optional, false)
		cm, ok, err := lookupObject(objs.configMaps, "configMap", r.Name, optional)
		if err != nil || !ok {
			return "", false, err
		}
		if v, ok := cm.Data[r.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[r.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("key %q not found in configMap %q", r.Key, r.Name)
	}
	r := src.SecretKeyRef
	optional := ptr.Deref(r.Optional, false)
	s, ok, err := lookupObject(objs.secrets, "secret", r.Name, optional)
	if err != nil || !ok {
		return "", false, err
	}
	if v, ok := s.Data[r.Key]; ok {
		return string(v), true, nil
	}
	if optional {
		return "", false, nil
	}
	return "", false, fmt.Errorf("key %q not found in secret %q", r.Key, r.Name)
}
