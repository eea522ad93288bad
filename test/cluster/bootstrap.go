package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A node that joins with a bootstrap token (Options.Bootstrap) gets a
// token as kubeadm makes it: in the group kubeadm's bindings name
// (createAddonObjects binds system:bootstrappers, which every bootstrap
// token is in, to the node-bootstrapper role and to the automatic
// approval of node client CSRs), valid for an hour.
const (
	bootstrapTokenGroup = "system:bootstrappers:kubeadm:default-node-token"
	bootstrapTokenTTL   = time.Hour
	// tokenAlphabet is a bootstrap token's, [a-z0-9].
	tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// BootstrapToken is the node's bootstrap token, id.secret; "" unless
// Options.Bootstrap.
func (c *Cluster) BootstrapToken() string { return c.bootstrapToken }

// BootstrapUser is the user the apiserver authenticates the bootstrap
// token as, system:bootstrap:<id>; "" unless Options.Bootstrap.
func (c *Cluster) BootstrapUser() string {
	if c.bootstrapToken == "" {
		return ""
	}
	return "system:bootstrap:" + c.bootstrapToken[:6]
}

// NodeCertDir is the node agent's --cert-dir, where a bootstrapped client
// certificate is kept (kubelet-client-current.pem).
func (c *Cluster) NodeCertDir() string { return filepath.Join(c.nodeDir(), "root", "pki") }

// agentKubeconfig is the agent's --kubeconfig: the harness's node
// kubeconfig, or, for a bootstrap, the one the agent writes.
func (c *Cluster) agentKubeconfig() string {
	if c.opts.Bootstrap {
		return filepath.Join(c.nodeDir(), "kubelet.conf")
	}
	return c.files.nodeKubeconfig
}

// createBootstrapToken makes a bootstrap token, its Secret in kube-system
// (what kubeadm token create makes) and a kubeconfig that authenticates
// with it.
func (c *Cluster) createBootstrapToken(ctx context.Context, client kubernetes.Interface) error {
	id, secret := randomToken(6), randomToken(16)
	s := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: metav1.NamespaceSystem},
		Type:       v1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id":                       id,
			"token-secret":                   secret,
			"usage-bootstrap-authentication": "true",
			"usage-bootstrap-signing":        "true",
			"auth-extra-groups":              bootstrapTokenGroup,
			"expiration":                     time.Now().Add(bootstrapTokenTTL).UTC().Format(time.RFC3339),
			"description":                    "minikubelet test cluster: the node's join",
		},
	}
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create bootstrap token Secret: %w", err)
	}
	c.bootstrapToken = id + "." + secret
	c.files.bootstrapKubeconfig = filepath.Join(c.dir, "bootstrap-kubelet.conf")
	return c.writeKubeconfigFor(c.files.bootstrapKubeconfig, "token: "+c.bootstrapToken)
}

// randomToken is n characters of tokenAlphabet.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = tokenAlphabet[int(b[i])%len(tokenAlphabet)]
	}
	return string(b)
}
