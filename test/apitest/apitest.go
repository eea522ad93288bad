package apitest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/minikubelet/minikubelet/test/freeport"
)

// adminToken is the bearer token of the admin user in the token file.
const adminToken = "minikubelet-apitest-admin"

// Options say which binaries to run and where.
type Options struct {
	// APIServer and Etcd are the binaries. Required.
	APIServer, Etcd string
	// Dir holds the certificates, etcd's data, the logs and the
	// kubeconfig. Required; it must exist.
	Dir string
}

// Server is a running etcd and kube-apiserver.
type Server struct {
	opts       Options
	port       int
	etcd       *exec.Cmd
	etcdDone   chan struct{}
	api        *exec.Cmd
	apiDone    chan struct{}
	apiArgs    []string
	kubeconfig string
	caPEM      []byte
	// clientCA signs client certificates: the apiserver's kubelet client
	// certificate and those IssueClientCertificate makes.
	clientCA    *x509.Certificate
	clientCAKey *ecdsa.PrivateKey
}

// KubeletClientUser is the user of the apiserver's kubelet client
// certificate (--kubelet-client-certificate), kubeadm's name for it.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// Start starts etcd and the apiserver and waits until the apiserver is
// ready. On error, what was started is stopped.
func Start(ctx context.Context, opts Options) (s *Server, err error) {
	s = &Server{opts: opts}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if err := s.writeFiles(); err != nil {
		return nil, err
	}
	etcdPort, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	peerPort, err := freeport.Pick()
	if err != nil {
		return nil, err
	}
	s.port, err = freeport.Pick()
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	s.etcd, s.etcdDone, err = s.launch(opts.Etcd, "etcd.log",
		"--name", "default", "--data-dir", filepath.Join(opts.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL, "--unsafe-no-fsync", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	s.apiArgs = []string{
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(s.port),
		"--tls-cert-file", s.path("serving.crt"), "--tls-private-key-file", s.path("serving.key"),
		"--service-account-key-file", s.path("sa.pub"),
		"--service-account-signing-key-file", s.path("sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--token-auth-file", s.path("tokens.csv"),
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--endpoint-reconciler-type", "none",
		"--authorization-mode", "RBAC",
		"--allow-privileged",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		"--cert-dir", s.path("certs"),
		"--client-ca-file", s.ClientCAFile(),
		"--kubelet-client-certificate", s.path("kubelet-client.crt"),
		"--kubelet-client-key", s.path("kubelet-client.key"),
		// Node proxying dials the address a test can reach: the agent's
		// host IP, not its node name.
		"--kubelet-preferred-address-types", "InternalIP,Hostname",
	}
	if err := s.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := s.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ClientCAFile is the CA bundle of the cluster's client certificates (the
// apiserver's --client-ca-file), which a kubelet's --client-ca-file names.
func (s *Server) ClientCAFile() string { return s.path("client-ca.crt") }

// KubeletClientCertificate returns the files of the certificate and key
// the apiserver presents to kubelets (user KubeletClientUser, no groups),
// signed by ClientCAFile.
func (s *Server) KubeletClientCertificate() (certFile, keyFile string) {
	return s.path("kubelet-client.crt"), s.path("kubelet-client.key")
}

// IssueClientCertificate writes a client certificate and key signed by
// ClientCAFile for user in groups, under name.crt and name.key, and
// returns their paths.
func (s *Server) IssueClientCertificate(name, user string, groups []string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := s.issueClient(user, groups)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = s.path(name+".crt"), s.path(name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", keyFile, err)
	}
	return certFile, keyFile, nil
}

// AdminToken is the bearer token of the admin user (group
// system:masters).
func (s *Server) AdminToken() string { return adminToken }

// Kubeconfig is the path of an admin kubeconfig.
func (s *Server) Kubeconfig() string { return s.kubeconfig }

// Client returns an admin client.
func (s *Server) Client() (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", s.kubeconfig, err)
	}
	rc.QPS, rc.Burst = 100, 200
	return kubernetes.NewForConfig(rc)
}

// StartAPIServer starts the apiserver (again) and waits until it is ready.
func (s *Server) StartAPIServer(ctx context.Context) error {
	var err error
	s.api, s.apiDone, err = s.launch(s.opts.APIServer, "kube-apiserver.log", s.apiArgs...)
	if err != nil {
		return err
	}
	return s.waitReady(ctx)
}

// StopAPIServer kills the apiserver and waits for it to exit.
func (s *Server) StopAPIServer() {
	stop(s.api, s.apiDone)
	s.api = nil
}

// Stop ends the apiserver and etcd, by PID. Safe to call twice.
func (s *Server) Stop() {
	stop(s.api, s.apiDone)
	stop(s.etcd, s.etcdDone)
	s.api, s.etcd = nil, nil
}

func stop(cmd *exec.Cmd, done chan struct{}) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *Server) path(name string) string { return filepath.Join(s.opts.Dir, name) }

func (s *Server) launch(bin, logName string, args ...string) (*exec.Cmd, chan struct{}, error) {
	logFile, err := os.OpenFile(s.path(logName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", logName, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	return cmd, done, nil
}

// waitReady polls /readyz until it answers 200.
func (s *Server) waitReady(ctx context.Context) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := "https://127.0.0.1:" + strconv.Itoa(s.port) + "/readyz"
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("readyz request: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready (last: %s; see %s): %w", last, s.path("kube-apiserver.log"), ctx.Err())
		case <-s.apiDone:
			return fmt.Errorf("kube-apiserver exited (see %s)", s.path("kube-apiserver.log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeFiles writes the serving certificate, the service-account keys,
// the token file and the kubeconfig.
func (s *Server) writeFiles() error {
	if err := os.MkdirAll(s.path("certs"), 0o700); err != nil {
		return fmt.Errorf("make cert dir: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames:              []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("serving key: %w", err)
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return fmt.Errorf("service-account key: %w", err)
	}
	clientCAPEM, err := s.makeClientCA()
	if err != nil {
		return err
	}
	kubeletCert, kubeletKey, err := s.issueClient(KubeletClientUser, nil)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"client-ca.crt":      clientCAPEM,
		"kubelet-client.crt": kubeletCert,
		"kubelet-client.key": kubeletKey,
		"serving.crt":        s.caPEM,
		"serving.key":        pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"sa.key":             pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)}),
		"sa.pub":             pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"tokens.csv":         []byte(adminToken + ",admin,admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(s.path(name), data, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// makeClientCA makes the CA of client certificates and returns it in PEM.
func (s *Server) makeClientCA() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("client CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "apitest-client-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	if s.clientCA, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	s.clientCAKey = key
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// issueClient makes a client certificate for user in groups (its
// organizations), signed by the client CA, in PEM with its key.
func (s *Server) issueClient(user string, groups []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("client key of %s: %w", user, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.clientCA, &key.PublicKey, s.clientCAKey)
	if err != nil {
		return nil, nil, fmt.Errorf("client certificate of %s: %w", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("client key of %s: %w", user, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// writeKubeconfig writes the admin kubeconfig once the port is known.
func (s *Server) writeKubeconfig() error {
	s.kubeconfig = s.path("kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: apitest
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: apitest
  context: {cluster: apitest, user: admin}
current-context: apitest
`, s.port, s.path("serving.crt"), adminToken)
	if err := os.WriteFile(s.kubeconfig, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// Namespace creates namespace name with its default ServiceAccount and
// its kube-root-ca.crt configMap, as the controller-manager would.
func (s *Server) Namespace(ctx context.Context, client kubernetes.Interface, name string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	_, err = client.CoreV1().ServiceAccounts(name).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create default service account in %s: %w", name, err)
	}
	_, err = client.CoreV1().ConfigMaps(name).Create(ctx, &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
		Data:       map[string]string{"ca.crt": string(s.caPEM)},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create kube-root-ca.crt in %s: %w", name, err)
	}
	return nil
}
