package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// contentWriter publishes the files of downwardAPI, configMap, secret and
// projected volumes.
type contentWriter struct {
	cfg *Config
}

// publish makes the volume's directory, on a tmpfs when memory (sized as a
// memory-backed emptyDir without sizeLimit), and writes payload there with
// the atomic writer. Containers mount the volume read-only. With a pod
// fsGroup the files are handed to it (fsGroupOwnership).
func (w *contentWriter) publish(ctx context.Context, req setUpRequest, memory bool, payload map[string]fileProjection) (volume, error) {
	payload = fsGroupOwnership(payload, req.pod)
	if memory {
		if err := ensureTmpfs(ctx, req.dir, memoryBackedSize(req.pod, nil, w.cfg.NodeAllocatable)); err != nil {
			return volume{}, err
		}
	} else if err := makeVolumeDir(req.dir); err != nil {
		return volume{}, err
	}
	if _, err := (atomicWriter{dir: req.dir, clock: w.cfg.Clock}).write(ctx, payload); err != nil {
		return volume{}, fmt.Errorf("write content: %w", err)
	}
	return volume{hostPath: req.dir, readOnly: true}, nil
}

// fsGroupOwnership hands the files of a content volume to the pod's
// fsGroup, as the kubelet's SetVolumeOwnership does for these read-only
// volumes: group fsGroup, and read permission for the group added to each
// file's mode (so a defaultMode of 0440 stays 0440, 0400 becomes 0440).
// The payload is returned unchanged when the pod has no fsGroup.
func fsGroupOwnership(payload map[string]fileProjection, pod *v1.Pod) map[string]fileProjection {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return payload
	}
	out := make(map[string]fileProjection, len(payload))
	for p, fp := range payload {
		fp.mode |= 0o440
		fp.gid = sc.FSGroup
		out[p] = fp
	}
	return out
}

// errNoAPIServer is why configMap, secret and serviceAccountToken content
// cannot be had in standalone mode.
func errNoAPIServer(kind string) error {
	return fmt.Errorf("%s need an apiserver; static pods cannot use them", kind)
}

// configMapPlugin projects a configMap's keys as files, on disk as the
// kubelet keeps them.
type configMapPlugin struct {
	cfg *Config
	w   *contentWriter
}

func (p *configMapPlugin) dirName() string { return configMapPluginDir }

func (p *configMapPlugin) setUp(ctx context.Context, req setUpRequest) (volume, error) {
	src := req.vol.ConfigMap
	if p.cfg.Objects == nil {
		return volume{}, errNoAPIServer("configMap volumes")
	}
	payload, err := configMapPayload(ctx, p.cfg.Objects, keysSource{
		namespace:   req.pod.Namespace,
		name:        src.Name,
		items:       src.Items,
		defaultMode: modeOr(src.DefaultMode, defaultContentMode),
		optional:    ptr.Deref(src.Optional, false),
	})
	if err != nil {
		return volume{}, err
	}
	return p.w.publish(ctx, req, false, payload)
}

// keysSource is a configMap or a secret whose keys a volume or a
// projection makes files of: which object, which keys (every key when
// items is empty) at which paths and with which modes, and whether the
// object may be missing.
type keysSource struct {
	namespace, name string
	items           []v1.KeyToPath
	defaultMode     fs.FileMode
	optional        bool
}

// configMapPayload reads the configMap src names and computes its files:
// every key, or only src.items (key to path, with their modes). An
// optional configMap that does not exist gives no files; a missing key of
// an optional one is skipped.
func configMapPayload(ctx context.Context, objects objectSource, src keysSource) (map[string]fileProjection, error) {
	namespace, name := src.namespace, src.name
	cm, err := objects.GetConfigMap(ctx, namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && src.optional {
			return map[string]fileProjection{}, nil
		}
		return nil, fmt.Errorf("get configMap %s/%s: %w", namespace, name, err)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	payload, err := keysPayload(data, src)
	if err != nil {
		return nil, fmt.Errorf("configMap %s/%s: %w", namespace, name, err)
	}
	return payload, nil
}

// secretPlugin projects a secret's keys as files, on a tmpfs so that
// secrets never reach the disk, as the kubelet keeps them.
type secretPlugin struct {
	cfg *Config
	w   *contentWriter
}

func (p *secretPlugin) dirName() string { return secretPluginDir }

func (p *secretPlugin) setUp(ctx context.Context, req setUpRequest) (volume, error) {
	src := req.vol.Secret
	if p.cfg.Objects == nil {
		return volume{}, errNoAPIServer("secret volumes")
	}
	payload, err := secretPayload(ctx, p.cfg.Objects, keysSource{
		namespace:   req.pod.Namespace,
		name:        src.SecretName,
		items:       src.Items,
		defaultMode: modeOr(src.DefaultMode, defaultContentMode),
		optional:    ptr.Deref(src.Optional, false),
	})
	if err != nil {
		return volume{}, err
	}
	return p.w.publish(ctx, req, true, payload)
}

// secretPayload is configMapPayload for a secret.
func secretPayload(ctx context.Context, objects objectSource, src keysSource) (map[string]fileProjection, error) {
	namespace, name := src.namespace, src.name
	s, err := objects.GetSecret(ctx, namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && src.optional {
			return map[string]fileProjection{}, nil
		}
		return nil, fmt.Errorf("get secret %s/%s: %w", namespace, name, err)
	}
	payload, err := keysPayload(s.Data, src)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", namespace, name, err)
	}
	return payload, nil
}

// keysPayload makes files of data: each key as a file of its name, or
// when src.items are given only those keys, each at its path. A missing
// key is an error unless src.optional.
func keysPayload(data map[string][]byte, src keysSource) (map[string]fileProjection, error) {
	out := make(map[string]fileProjection, len(data))
	if len(src.items) == 0 {
		for k, v := range data {
			out[k] = fileProjection{data: v, mode: src.defaultMode}
		}
		return out, nil
	}
	for _, item := range src.items {
		v, ok := data[item.Key]
		if !ok {
			if src.optional {
				continue
			}
			return nil, fmt.Errorf("no key %q (items[].key)", item.Key)
		}
		out[item.Path] = fileProjection{data: v, mode: modeOr(item.Mode, src.defaultMode)}
	}
	return out, nil
}

// projectedPlugin projects several sources into one directory, on a tmpfs
// as the kubelet keeps it: configMaps, secrets, downwardAPI items and
// service account tokens.
type projectedPlugin struct {
	cfg *Config
	w   *contentWriter
}

func (p *projectedPlugin) dirName() string { return projectedPluginDir }

// defaultTokenExpiration is a serviceAccountToken's life when the pod does
// not say, the apiserver's default.
const defaultTokenExpiration = 3600

func (p *projectedPlugin) setUp(ctx context.Context, req setUpRequest) (volume, error) {
	src := req.vol.Projected
	defaultMode := modeOr(src.DefaultMode, defaultContentMode)
	payload := map[string]fileProjection{}
	var errs []error
	for i := range src.Sources {
		files, err := p.sourcePayload(ctx, req.pod, &src.Sources[i], defaultMode)
		if err != nil {
			errs = append(errs, fmt.Errorf("projected sources[%d]: %w", i, err))
			continue
		}
		for k, v := range files {
			payload[k] = v
		}
	}
	if len(errs) > 0 {
		return volume{}, joinErrors(errs)
	}
	return p.w.publish(ctx, req, true, payload)
}

// sourcePayload computes the files of one projected source.
func (p *projectedPlugin) sourcePayload(ctx context.Context, pod *v1.Pod, s *v1.VolumeProjection, defaultMode fs.FileMode) (map[string]fileProjection, error) {
	objects := p.cfg.Objects
	switch {
	case s.DownwardAPI != nil:
		return downwardAPIPayload(pod, s.DownwardAPI.Items, defaultMode, p.cfg.NodeAllocatable)
	case s.ConfigMap != nil && objects == nil:
		return nil, errNoAPIServer("configMap projections")
	case s.ConfigMap != nil:
		return configMapPayload(ctx, objects, keysSource{namespace: pod.Namespace, name: s.ConfigMap.Name, items: s.ConfigMap.Items, defaultMode: defaultMode, optional: ptr.Deref(s.ConfigMap.Optional, false)})
	case s.Secret != nil && objects == nil:
		return nil, errNoAPIServer("secret projections")
	case s.Secret != nil:
		return secretPayload(ctx, objects, keysSource{namespace: pod.Namespace, name: s.Secret.Name, items: s.Secret.Items, defaultMode: defaultMode, optional: ptr.Deref(s.Secret.Optional, false)})
	case s.ServiceAccountToken != nil && objects == nil:
		return nil, errNoAPIServer("serviceAccountToken projections")
	case s.ServiceAccountToken != nil:
		return tokenPayload(ctx, objects, pod, s.ServiceAccountToken, defaultMode)
	}
	return nil, errors.New("source type not supported: minikubelet projects configMap, secret, downwardAPI and serviceAccountToken")
}

// tokenPayload asks for a token of the pod's service account, bound to the
// pod, as the kubelet does. The file has the volume's defaultMode, or 0600
// when the pod has an fsGroup (which publish then hands it to, 0640), as
// the kubelet makes it. The kubelet also makes it owned by the containers'
// runAsUser when they all share one; the agent does not (see doc.go).
func tokenPayload(ctx context.Context, objects objectSource, pod *v1.Pod, src *v1.ServiceAccountTokenProjection, defaultMode fs.FileMode) (map[string]fileProjection, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: ptr.To(ptr.Deref(src.ExpirationSeconds, defaultTokenExpiration)),
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        pod.UID,
			},
		},
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: sa},
	}
	tr, err := objects.GetServiceAccountToken(ctx, pod.Namespace, sa, req)
	if err != nil {
		return nil, fmt.Errorf("get token of service account %s/%s: %w", pod.Namespace, sa, err)
	}
	mode := defaultMode
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		mode = 0o600
	}
	return map[string]fileProjection{src.Path: {data: []byte(tr.Status.Token), mode: mode}}, nil
}
