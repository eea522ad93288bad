package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/minikubelet/minikubelet/agent/cluster/certificate"
	"github.com/minikubelet/minikubelet/internal/atomicfile"
	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// credentials is how the node authenticates to the apiserver: the client
// config of its client and, when its client certificate is managed
// (--bootstrap-kubeconfig or --rotate-certificates), the Manager that keeps
// the certificate, which the config's transport presents.
type credentials struct {
	rest    *rest.Config
	manager *certificate.Manager
}

// loadCredentials decides the node's credentials as the kubelet does.
//
// With neither --bootstrap-kubeconfig nor --rotate-certificates, they are
// --kubeconfig's as they stand; a client certificate it names must exist
// and not have expired.
//
// Otherwise the client certificate is managed, kept in --cert-dir as
// kubelet-client-current.pem. The certificate in use is, in this order,
// the one kept there if it has not expired, and --kubeconfig's if it has
// not; with neither, the bootstrap kubeconfig's credentials request one
// when the agent runs (no bootstrap kubeconfig is then an error naming the
// files). When --kubeconfig holds no valid client certificate and a
// bootstrap kubeconfig is given, --kubeconfig is (re)written with the
// bootstrap kubeconfig's server and CA and the kept certificate's path, as
// the kubelet writes it, for the next start and for the user's tools. A
// bootstrap kubeconfig that no longer exists is not needed while the node
// has a valid certificate (kubeadm removes it after the join).
func loadCredentials(cfg Config) (credentials, error) {
	if cfg.BootstrapKubeconfig == "" && !cfg.RotateCertificates {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		if err != nil {
			return credentials{}, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, err)
		}
		if _, err := clientCertificate(rc, cfg.Clock.Now()); err != nil && !errors.Is(err, errNoClientCertificate) {
			return credentials{}, fmt.Errorf("--kubeconfig %s: %w; renew it, or give --bootstrap-kubeconfig to request a new one", cfg.Kubeconfig, err)
		}
		return credentials{rest: rc}, nil
	}

	kubeconfig, kubeconfigErr := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	var initial *tls.Certificate
	if kubeconfigErr == nil {
		initial, kubeconfigErr = clientCertificate(kubeconfig, cfg.Clock.Now())
	}
	var bootstrap *rest.Config
	var bootstrapErr error
	if cfg.BootstrapKubeconfig != "" {
		bootstrap, bootstrapErr = clientcmd.BuildConfigFromFlags("", cfg.BootstrapKubeconfig)
		if bootstrapErr != nil && kubeconfigErr != nil {
			return credentials{}, fmt.Errorf("--bootstrap-kubeconfig %s: %w (and --kubeconfig %s holds no valid client certificate: %w)", cfg.BootstrapKubeconfig, bootstrapErr, cfg.Kubeconfig, kubeconfigErr)
		}
	}
	mcfg := certificate.Config{
		Kind:     certificate.Client,
		NodeName: cfg.NodeName,
		Dir:      cfg.CertDir,
		Initial:  initial,
		Rotate:   cfg.RotateCertificates,
		Clock:    cfg.Clock,
	}
	if bootstrap != nil {
		bc, err := kubeclient.New(userAgent(bootstrap, cfg.NodeName))
		if err != nil {
			return credentials{}, fmt.Errorf("apiserver client from --bootstrap-kubeconfig %s: %w", cfg.BootstrapKubeconfig, err)
		}
		mcfg.Bootstrap = bc.CertificateSigningRequests()
	}
	m := certificate.New(mcfg)

	base := kubeconfig
	switch {
	case kubeconfigErr == nil:
	case bootstrap != nil:
		base = bootstrap
		if err := writeKubeconfig(cfg.Kubeconfig, bootstrap, m.CurrentPath()); err != nil {
			return credentials{}, err
		}
	case m.Current() == nil:
		return credentials{}, fmt.Errorf("no valid client certificate: --kubeconfig %s: %w; %s: %w; give --bootstrap-kubeconfig to request one with a bootstrap token", cfg.Kubeconfig, kubeconfigErr, m.CurrentPath(), keptError(m.CurrentPath(), cfg.Clock.Now()))
	case kubeconfig == nil:
		// The kept certificate is valid, but there is no kubeconfig to
		// say where the apiserver is.
		return credentials{}, fmt.Errorf("--kubeconfig %s: %w", cfg.Kubeconfig, kubeconfigErr)
	}
	rc, err := m.RESTConfig(base)
	if err != nil {
		return credentials{}, err
	}
	return credentials{rest: rc, manager: m}, nil
}

// errNoClientCertificate is a kubeconfig that names no client certificate
// (a token, say).
var errNoClientCertificate = errors.New("no client certificate in it")

// clientCertificate returns rc's client certificate; an error naming the
// file when it cannot be read or has expired at now.
func clientCertificate(rc *rest.Config, now time.Time) (*tls.Certificate, error) {
	certPEM, keyPEM := rc.CertData, rc.KeyData
	certName, keyName := "client-certificate-data", "client-key-data"
	var err error
	if len(certPEM) == 0 && rc.CertFile != "" {
		certName = rc.CertFile
		if certPEM, err = os.ReadFile(rc.CertFile); err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
	}
	if len(keyPEM) == 0 && rc.KeyFile != "" {
		keyName = rc.KeyFile
		if keyPEM, err = os.ReadFile(rc.KeyFile); err != nil {
			return nil, fmt.Errorf("client key: %w", err)
		}
	}
	if len(certPEM) == 0 {
		return nil, errNoClientCertificate
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("client certificate %s with key %s: %w", certName, keyName, err)
	}
	if !now.Before(cert.Leaf.NotAfter) {
		return nil, fmt.Errorf("client certificate %s expired at %s", certName, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return &cert, nil
}

// keptError says why the certificate kept at path is not usable.
func keptError(path string, now time.Time) error {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the certificate --cert-dir keeps
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return err
	}
	if !now.Before(cert.Leaf.NotAfter) {
		return fmt.Errorf("expired at %s", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("not for this node (%s)", cert.Leaf.Subject)
}

// writeKubeconfig writes, at path (mode 0600), a kubeconfig for
// bootstrap's apiserver (its server, CA and TLS settings) whose client
// certificate and key are both the file pem, as the kubelet writes it
// after a bootstrap.
func writeKubeconfig(path string, bootstrap *rest.Config, pem string) error {
	cluster := &clientcmdapi.Cluster{
		Server:                bootstrap.Host,
		InsecureSkipTLSVerify: bootstrap.Insecure,
		TLSServerName:         bootstrap.ServerName,
		CertificateAuthority:  bootstrap.CAFile,
	}
	if bootstrap.CAFile == "" {
		cluster.CertificateAuthorityData = bootstrap.CAData
	}
	data, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pem, ClientKey: pem}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	})
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	return nil
}
