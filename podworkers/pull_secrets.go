package podworkers

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// podCredentials returns the registry credentials of the pod's
// imagePullSecrets matching repo, in the order the secrets are listed, as
// the kubelet tries them before the node's own. A secret that cannot be
// read or parsed is logged and skipped, as the kubelet does: the pull may
// still succeed with other credentials, or fail with the registry's error.
func (s *Syncer) podCredentials(ctx context.Context, pod *v1.Pod, repo string) []credential {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	logger := klog.FromContext(ctx)
	if s.cfg.Objects == nil {
		logger.Info("Ignoring imagePullSecrets: they need an apiserver source", "secrets", len(pod.Spec.ImagePullSecrets))
		return nil
	}
	var out []credential
	for _, ref := range pod.Spec.ImagePullSecrets {
		k, err := s.secretKeyring(ctx, pod.Namespace, ref.Name)
		if err != nil {
			logger.Error(err, "Skipping an imagePullSecret", "secret", ref.Name)
			continue
		}
		out = append(out, k.lookup(repo)...)
	}
	return out
}

// secretKeyring parses an image pull secret: kubernetes.io/dockerconfigjson
// (.dockerconfigjson, {"auths": ...}) or kubernetes.io/dockercfg
// (.dockercfg).
func (s *Syncer) secretKeyring(ctx context.Context, namespace, name string) (*keyring, error) {
	sec, err := s.cfg.Objects.GetSecret(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("get image pull secret %s/%s: %w", namespace, name, err)
	}
	origin := "secret " + namespace + "/" + name
	if data, ok := sec.Data[v1.DockerConfigJsonKey]; ok {
		return parseDockerConfig(origin, data, true)
	}
	if data, ok := sec.Data[v1.DockerConfigKey]; ok {
		return parseDockerConfig(origin, data, false)
	}
	return nil, fmt.Errorf("image pull secret %s/%s has neither %s nor %s", namespace, name, v1.DockerConfigJsonKey, v1.DockerConfigKey)
}
