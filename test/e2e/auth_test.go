package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/apitest"
)

// TestAnonymousAlwaysAllowRefused: standalone, where authorization is
// AlwaysAllow, anonymous authentication would open the kubelet port to
// anyone; the agent refuses it before it touches anything.
func TestAnonymousAlwaysAllowRefused(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, env.binary, "--anonymous-auth", "--root-dir", dir, "--pod-manifest-path", dir, "--container-runtime-endpoint", "unix://"+dir+"/none.sock", "--socket", "")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "--anonymous-auth") {
		t.Errorf("%v\n%s\nwant exit code 2 naming --anonymous-auth", err, out)
	}
}

// allowKubeletAPI binds the apiserver's kubelet client to
// system:kubelet-api-admin, so that the apiserver may use the node's
// kubelet port (logs, exec, attach, ...), and waits until the cluster's
// RBAC says so: the agent keeps a denial 30s.
func (n *nodeEnv) allowKubeletAPI() {
	n.t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-kubelet-api-admin-" + n.a.node},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: apitest.KubeletClientUser}},
	}
	if _, err := n.client.RbacV1().ClusterRoleBindings().Create(n.ctx(), binding, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = n.client.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
	})
	polltest.Until(n.t, 10*time.Second, "RBAC allows the kubelet client nodes/proxy", func() (bool, string) {
		sar, err := n.client.AuthorizationV1().SubjectAccessReviews().Create(n.ctx(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               apitest.KubeletClientUser,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: n.a.node},
		}}, metav1.CreateOptions{})
		if err != nil {
			return false, err.Error()
		}
		return sar.Status.Allowed, sar.Status.Reason
	})
}

// TestKubeletPort: in node mode against a bare apiserver, the kubelet
// port serves HTTPS with the self-signed certificate kept under the root
// dir, and the cluster's RBAC decides who may use it: the apiserver's
// kubelet client certificate, bound to system:kubelet-api-admin, is
// authorized through a SubjectAccessReview, directly and through the
// apiserver's node proxy (which finds the port in the Node's
// daemonEndpoints); a bearer token is checked with a TokenReview; a
// request without credentials gets 401 and a user without RBAC 403. The
// read-only port serves no logs, and the command line keeps working
// through the root-only socket.
func TestKubeletPort(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	srv := env.api.get(t)
	// On every address: the apiserver proxies to the Node's InternalIP,
	// never to loopback.
	n := startNodeAgent(t, env.runtimes[0], srv, "--client-ca-file", srv.ClientCAFile(), "--address", "0.0.0.0")
	a := n.a

	n.allowKubeletAPI()

	node := n.waitNodeReady(30 * time.Second)
	if got := node.Status.DaemonEndpoints.KubeletEndpoint.Port; int(got) != a.kubeletPort {
		t.Errorf("status.daemonEndpoints.kubeletEndpoint.Port = %d, want %d", got, a.kubeletPort)
	}

	// The self-signed certificate under the root dir is the one served.
	certPEM, err := os.ReadFile(filepath.Join(a.dir, "root", "pki", "kubelet.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatalf("no certificate in %s", filepath.Join(a.dir, "root", "pki", "kubelet.crt"))
	}
	kubeletCert, kubeletKey := srv.KubeletClientCertificate()
	nobodyCert, nobodyKey, err := srv.IssueClientCertificate("nobody-"+a.node, "e2e-nobody", []string{"e2e-nobodies"})
	if err != nil {
		t.Fatal(err)
	}
	apiserver := httpsClient(t, roots, kubeletCert, kubeletKey)
	nobody := httpsClient(t, roots, nobodyCert, nobodyKey)
	anonymous := httpsClient(t, roots, "", "")
	base := fmt.Sprintf("https://127.0.0.1:%d", a.kubeletPort)

	tests := []struct {
		name   string
		client *http.Client
		token  string
		path   string
		want   int
		body   string
	}{
		{"kubelet client certificate, /pods", apiserver, "", "/pods", 200, `"kind":"PodList"`},
		{"kubelet client certificate, /healthz", apiserver, "", "/healthz", 200, "ok"},
		{"kubelet client certificate, /configz", apiserver, "", "/configz", 200, `"kubeletconfig"`},
		{"kubelet client certificate, /stats/summary", apiserver, "", "/stats/summary", 200, `"node"`},
		{"admin token (TokenReview), /pods", anonymous, srv.AdminToken(), "/pods", 200, `"kind":"PodList"`},
		{"no credentials", anonymous, "", "/pods", 401, "Unauthorized"},
		{"unknown token", anonymous, "not-a-token", "/pods", 401, "Unauthorized"},
		{"user without RBAC, /pods", nobody, "", "/pods", 403, "Forbidden (user=e2e-nobody, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		{"user without RBAC, /containerLogs", nobody, "", "/containerLogs/default/x/y", 403, "subresource(s)=[proxy]"},
	}
	for _, tt := range tests {
		code, body := httpsGet(t, tt.client, base+tt.path, tt.token)
		if code != tt.want || !strings.Contains(body, tt.body) {
			t.Errorf("%s: HTTP %d %q; want %d with %q", tt.name, code, trim(body), tt.want, tt.body)
		}
	}

	// The apiserver reaches the port with its kubelet client certificate,
	// where the Node says it is.
	raw, err := n.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", a.node, "proxy", "pods").DoRaw(n.ctx())
	var list v1.PodList
	if err != nil || json.Unmarshal(raw, &list) != nil || list.Kind != "PodList" {
		t.Errorf("GET nodes/%s/proxy/pods through the apiserver: %v %q", a.node, err, trim(string(raw)))
	}

	// The read-only port serves what the kubelet's does, no logs or
	// configuration.
	if body, code, err := a.get(a.port, "/pods"); err != nil || code != 200 {
		t.Errorf("read-only /pods: HTTP %d %v %q", code, err, trim(body))
	}
	for _, path := range []string{"/containerLogs/default/x/y", "/configz", "/manifests/errors", "/debug/pprof/"} {
		if body, code, err := a.get(a.port, path); err != nil || code != 404 {
			t.Errorf("read-only %s: HTTP %d %v %q, want 404", path, code, err, trim(body))
		}
	}

	// The command line needs no credentials through the socket, as root;
	// another user is refused.
	if _, stderr, err := a.cli("pods"); err != nil {
		t.Errorf("minikubelet pods over the socket: %v %s", err, stderr)
	}
	if body, code, err := a.local("/configz"); err != nil || code != 200 || !strings.Contains(body, `"kubeletconfig"`) {
		t.Errorf("/configz over the socket: HTTP %d %v %q", code, err, trim(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.binary, "pods", "--server", "unix://"+a.socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("minikubelet pods as uid 65534 succeeded: %s", out)
	}
}

// httpsClient trusts roots and presents the client certificate in
// certFile and keyFile, if given.
func httpsClient(t *testing.T, roots *x509.CertPool, certFile, keyFile string) *http.Client {
	t.Helper()
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

// httpsGet GETs url with the bearer token, if any, and returns the status
// and body; a failure to connect fails the test.
func httpsGet(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b)
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
