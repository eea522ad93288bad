package cluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// rotationSigningDuration is the controller-manager's
// --cluster-signing-duration in the bootstrap test. Its signer backdates
// a certificate by 5 minutes, so a certificate issued at t lives from t-5m
// to t+3m, and a node renews it at 70-90% of that: between t+36s and
// t+2m12s, which bounds what the test waits for a rotation.
const rotationSigningDuration = 3 * time.Minute

func withBootstrap(signing time.Duration) func(*Options) {
	return func(o *Options) { o.Bootstrap, o.ClusterSigningDuration = true, signing }
}

// A node joins with a bootstrap token on a fresh root dir and rotates its
// client certificate, as a kubeadm node does: the agent requests its
// client certificate with the token (a kube-apiserver-client-kubelet CSR,
// which the controller-manager approves and signs), keeps it in
// --cert-dir, writes --kubeconfig for it, and registers and turns Ready
// as system:node:<name> under the Node authorizer and NodeRestriction.
// With --rotate-certificates and certificates that live minutes, it gets
// the next one with its own credentials while running: the serial
// changes, the Node stays Ready and its Lease renewed, the pod started
// before keeps its container and the agent its process, and a pod created
// after it starts (the pod watch came back). A restarted agent uses the
// certificate it has, with no second bootstrap. Nothing is refused by the
// apiserver throughout (no 403 in the log).
func TestClusterBootstrapAndRotation(t *testing.T) {
	c := startForTest(t, withBootstrap(rotationSigningDuration), withAgentArgs("--rotate-certificates"))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	node := "system:node:" + c.NodeName()

	// The bootstrap: one CSR from the token's user, approved and issued;
	// the certificate kept as kubelet-client-current.pem, a link to a
	// dated file; the kubeconfig written for it authenticates as the node.
	csrs := requestsBy(ctx, t, client)
	if got := csrs[c.BootstrapUser()]; len(got) != 1 {
		t.Fatalf("CSRs by %s: %d, want 1 (all: %v)", c.BootstrapUser(), len(got), csrs)
	}
	current := filepath.Join(c.NodeCertDir(), "kubelet-client-current.pem")
	if target, err := os.Readlink(current); err != nil || !strings.HasPrefix(filepath.Base(target), "kubelet-client-2") {
		t.Errorf("%s: link to %q (%v), want one to a dated file", current, target, err)
	}
	first := clientCert(t, current)
	if first.Subject.CommonName != node || len(first.Subject.Organization) != 1 || first.Subject.Organization[0] != "system:nodes" {
		t.Errorf("client certificate for %v, want %s in system:nodes", first.Subject, node)
	}
	nodeClient := kubeClient(t, c.NodeKubeconfig())
	review, err := nodeClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != node {
		t.Errorf("the written kubeconfig authenticates as %s %v, want %s", u.Username, u.Groups, node)
	}

	// A pod running before the rotation.
	before := sleeper("before-rotation")
	if _, err := client.CoreV1().Pods("default").Create(ctx, before, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(ctx, t, client, c, before.Name, func(p *v1.Pod) bool { return running(p, "sleep") })
	p, err := client.CoreV1().Pods("default").Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containerID, pid := status(p, "sleep").ContainerID, c.AgentPID()
	serial := clientCert(t, current).SerialNumber

	// The rotation: a new certificate, requested with the node's own.
	t0 := time.Now()
	var rotated time.Time
	err = poll(ctx, "wait for the client certificate to rotate", time.Second, func(context.Context) error {
		if s := clientCert(t, current).SerialNumber; s.Cmp(serial) == 0 {
			return fmt.Errorf("serial %s: %w", s.Text(16), errNotYet)
		}
		rotated = time.Now()
		return nil
	}, c.agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the client certificate rotated %.0fs after the pod ran (serial %s -> %s)", rotated.Sub(t0).Seconds(), serial.Text(16), clientCert(t, current).SerialNumber.Text(16))
	if got := requestsBy(ctx, t, client)[node]; len(got) == 0 {
		t.Errorf("no CSR by %s: the renewal did not use the node's credentials", node)
	}
	waitLeaseRenewed(ctx, t, client, c, rotated)
	after := sleeper("after-rotation")
	if _, err := client.CoreV1().Pods("default").Create(ctx, after, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(ctx, t, client, c, after.Name, func(p *v1.Pod) bool { return running(p, "sleep") })
	checkNodeReady(ctx, t, client, c.NodeName())
	checkSamePod(ctx, t, client, before.Name, containerID)
	if got := c.AgentPID(); got != pid {
		t.Errorf("the agent's PID went from %d to %d", pid, got)
	}

	// A restart keeps the certificate: no second bootstrap.
	c.StopAgent()
	restarted := time.Now()
	if err := c.StartAgent(); err != nil {
		t.Fatal(err)
	}
	waitLeaseRenewed(ctx, t, client, c, restarted)
	// A restarted agent reports the Node not ready until its first
	// relist, as the kubelet does.
	waitNodeReady(ctx, t, client, c)
	if got := requestsBy(ctx, t, client)[c.BootstrapUser()]; len(got) != 1 {
		t.Errorf("CSRs by %s after a restart: %d, want still 1", c.BootstrapUser(), len(got))
	}
	checkSamePod(ctx, t, client, before.Name, containerID)
	checkNoRefusals(t, c)
}

// sleeper is a pod that sleeps, in default.
func sleeper(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers:                    []v1.Container{{Name: "sleep", Image: busyboxImage, Command: []string{"sleep", "3600"}}},
		},
	}
}

// requestsBy lists the kube-apiserver-client-kubelet CSRs that were
// approved and issued, by requesting user; it fails the test on any other
// state of one.
func requestsBy(ctx context.Context, t *testing.T, client kubernetes.Interface) map[string][]string {
	t.Helper()
	list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string][]string{}
	for _, csr := range list.Items {
		if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
			continue
		}
		approved := false
		for _, cond := range csr.Status.Conditions {
			approved = approved || cond.Type == certificatesv1.CertificateApproved
			if cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed {
				t.Errorf("CSR %s by %s: %s %s", csr.Name, csr.Spec.Username, cond.Reason, cond.Message)
			}
		}
		if approved && len(csr.Status.Certificate) > 0 {
			by[csr.Spec.Username] = append(by[csr.Spec.Username], csr.Name)
		}
	}
	return by
}

// clientCert reads the certificate of a PEM file (certificate, then key).
func clientCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cert
}

func kubeClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// waitLeaseRenewed waits until the node's Lease is renewed after since.
func waitLeaseRenewed(ctx context.Context, t *testing.T, client kubernetes.Interface, c *Cluster, since time.Time) {
	t.Helper()
	err := poll(ctx, "wait for the node's Lease to be renewed", time.Second, func(ctx context.Context) error {
		l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, c.NodeName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		// The renew time has microseconds; since has more.
		if r := l.Spec.RenewTime; r == nil || !r.After(since.Truncate(time.Microsecond)) {
			return fmt.Errorf("renewed at %v: %w", r, errNotYet)
		}
		return nil
	}, c.agent)
	if err != nil {
		t.Fatal(err)
	}
}

// checkNodeReady checks that the Node is Ready now.
func checkNodeReady(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	if err := nodeReadyErr(ctx, client, name); err != nil {
		t.Error(err)
	}
}

// waitNodeReady waits until the Node is Ready.
func waitNodeReady(ctx context.Context, t *testing.T, client kubernetes.Interface, c *Cluster) {
	t.Helper()
	err := poll(ctx, "wait for the Node to be Ready", time.Second, func(ctx context.Context) error {
		return nodeReadyErr(ctx, client, c.NodeName())
	}, c.agent)
	if err != nil {
		t.Fatal(err)
	}
}

// nodeReadyErr says why the Node is not Ready; nil when it is.
func nodeReadyErr(ctx context.Context, client kubernetes.Interface, name string) error {
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == v1.NodeReady {
			if cond.Status == v1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("node %s: Ready %s (%s: %s): %w", name, cond.Status, cond.Reason, cond.Message, errNotYet)
		}
	}
	return fmt.Errorf("node %s has no Ready condition: %w", name, errNotYet)
}

// checkSamePod checks that the pod's container is still containerID,
// never restarted.
func checkSamePod(ctx context.Context, t *testing.T, client kubernetes.Interface, name, containerID string) {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := status(p, "sleep"); s == nil || s.ContainerID != containerID || s.RestartCount != 0 || s.State.Running == nil {
		t.Errorf("pod %s: container %+v, want %s still running, never restarted", name, s, containerID)
	}
}
