package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// envTestAgent=kubelet runs a cluster test against the real kubelet
// instead of minikubelet, to check the test itself (by hand: CI runs
// minikubelet only).
const envTestAgent = "MINIKUBELET_CLUSTER_AGENT"

// withAgentArgs asks startForTest to add args to the agent's flags.
func withAgentArgs(args ...string) func(*Options) {
	return func(o *Options) { o.AgentArgs = append(o.AgentArgs, args...) }
}

// startForTest starts a cluster with minikubelet ($MINIKUBELET_BIN; the
// kubelet with $MINIKUBELET_CLUSTER_AGENT=kubelet) under
// $MINIKUBELET_BED_BASE, with the options opts set, and stops it when the
// test ends.
func startForTest(t *testing.T, opts ...func(*Options)) *Cluster {
	t.Helper()
	if os.Getenv(EnvClusterTests) != "on" {
		t.Skipf("starts a whole cluster: runs with %s=on (test/scripts/test.sh does, on its own)", EnvClusterTests)
	}
	bed, bins, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	agent := Agent(os.Getenv(envTestAgent))
	if agent == "" {
		agent = Minikubelet
	}
	bin, base := os.Getenv("MINIKUBELET_BIN"), os.Getenv("MINIKUBELET_BED_BASE")
	if (bin == "" && agent == Minikubelet) || base == "" {
		t.Fatal("MINIKUBELET_BIN and MINIKUBELET_BED_BASE must be set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := Options{Bed: bed, Bins: bins, Dir: base, Agent: agent, AgentBinary: bin, Logf: t.Logf}
	for _, set := range opts {
		set(&o)
	}
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent log:\n%s", tailFile(c.AgentLog(), 60))
		}
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return c
}

// The cluster's plumbing as pods see it: the kubernetes Service's
// endpoints are the apiserver on the host IP, and a pod on the node gets
// the cluster's resolv.conf (nameserver, search path, ndots:5), the
// managed /etc/hosts and the Service env vars (KUBERNETES_SERVICE_HOST,
// and its namespace's Services'), resolves the Service's name through
// CoreDNS (the kube-dns Service) and connects through kube-proxy's rules. The node's credentials are a
// node's: system:node:<name> in system:nodes, which the Node authorizer
// keeps from listing secrets; with them, pods use configMaps, secrets and
// service-account tokens (the NodeObjects subtest, which shares this
// cluster to spare CI a cluster start).
func TestClusterServicesAndDNS(t *testing.T) {
	c := startForTest(t, withAgentArgs("--sync-frequency", objectsSyncFrequency.String()))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	slices, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	want := c.HostIP().String() + ":" + strconv.Itoa(c.ports.api)
	var got []string
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, p := range s.Ports {
				got = append(got, e.Addresses[0]+":"+strconv.Itoa(int(*p.Port)))
			}
		}
	}
	if len(got) != 1 || got[0] != want {
		t.Errorf("kubernetes Service endpoints %v, want [%s]", got, want)
	}

	// A Service of the pod's namespace, whose env vars the pod must see.
	svc, err := client.CoreV1().Services("default").Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "env-links"},
		Spec:       v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "http", Port: 8080}}, Selector: map[string]string{"app": "none"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
	})
	// The pod's resolv.conf is the cluster's (the agent's --cluster-dns
	// and --cluster-domain): it resolves the kubernetes Service's name
	// through CoreDNS with no server named, and connects to the Service
	// IP that its env vars give.
	script := fmt.Sprintf(`fail() { echo "$*"; cat /etc/resolv.conf; env | sort; exit 1; }
grep -qx "nameserver %[2]s" /etc/resolv.conf || fail "no cluster nameserver"
grep -q "^search default.svc.%[1]s svc.%[1]s %[1]s" /etc/resolv.conf || fail "no cluster search path"
grep -qx "options ndots:5" /etc/resolv.conf || fail "no ndots:5"
out=$(nslookup kubernetes.default.svc.%[1]s 2>&1) || fail "$out"
echo "$out" | grep -q "Address.*%[3]s$" || fail "no %[3]s in: $out"
[ "$KUBERNETES_SERVICE_HOST" = %[3]s ] && [ "$KUBERNETES_SERVICE_PORT" = 443 ] || fail "KUBERNETES_SERVICE_HOST:PORT $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"
[ "$ENV_LINKS_SERVICE_HOST" = %[4]s ] && [ "$ENV_LINKS_SERVICE_PORT_HTTP" = 8080 ] && [ "$ENV_LINKS_PORT_8080_TCP" = tcp://%[4]s:8080 ] || fail "no env-links Service vars"
grep -q "	dns-and-service$" /etc/hosts || fail "no managed /etc/hosts: $(cat /etc/hosts)"
exec /agnhost connect "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT" --timeout 10s`, DNSDomain, DNSServiceIP, APIServiceIP, svc.Spec.ClusterIP)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-and-service", Namespace: "default"},
		Spec: v1.PodSpec{
			// No token: it comes with the kube-root-ca.crt configMap, and
			// this test is about the network.
			AutomountServiceAccountToken: ptr.To(false),
			RestartPolicy:                v1.RestartPolicyNever,
			Containers: []v1.Container{{
				Name:                     "connect",
				Image:                    "registry.k8s.io/e2e-test-images/agnhost:2.63.0",
				Command:                  []string{"sh", "-c", script},
				TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = poll(ctx, "wait for the pod to finish", time.Second, func(ctx context.Context) error {
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch p.Status.Phase {
		case v1.PodSucceeded:
			return nil
		case v1.PodFailed:
			msg := ""
			for _, s := range p.Status.ContainerStatuses {
				if s.State.Terminated != nil {
					msg = s.State.Terminated.Message
				}
			}
			t.Fatalf("pod failed: %q", msg)
		}
		return fmt.Errorf("pod %s: %w", p.Status.Phase, errNotYet)
	})
	if err != nil {
		t.Fatal(err)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", c.NodeKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	node, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	review, err := node.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:node:"+c.NodeName() || len(u.Groups) == 0 || u.Groups[0] != "system:nodes" {
		t.Errorf("node credentials are %s %v, want system:node:%s in system:nodes", u.Username, u.Groups, c.NodeName())
	}
	if _, err := node.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node listed secrets (err %v): Node authorization is off", err)
	}
	t.Run("NodeObjects", func(t *testing.T) { testNodeObjects(ctx, t, c, client) })
}
