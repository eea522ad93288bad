package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/apitest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// sharedAPIServer is the etcd and kube-apiserver the node-mode tests of
// this binary share, started by the first test that needs it.
type sharedAPIServer struct {
	once sync.Once
	srv  *apitest.Server
	err  error
}

func (s *sharedAPIServer) get(t *testing.T) *apitest.Server {
	t.Helper()
	s.once.Do(func() { s.srv, s.err = startAPIServer(t, "apiserver") })
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.srv
}

func (s *sharedAPIServer) stop() {
	if s.srv != nil {
		s.srv.Stop()
	}
}

// startAPIServer starts an etcd and kube-apiserver under the bed's base.
func startAPIServer(t *testing.T, name string) (*apitest.Server, error) {
	t.Helper()
	if env.bed.KubeAPIServer == "" || env.bed.Etcd == "" {
		return nil, fmt.Errorf("bed.json names no kube-apiserver or etcd; run test/scripts/prepare.sh again")
	}
	dir, err := os.MkdirTemp(env.base, name+".")
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := apitest.Start(ctx, apitest.Options{APIServer: env.bed.KubeAPIServer, Etcd: env.bed.Etcd, Dir: dir})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "e2e: kube-apiserver ready in %v (%s)\n", time.Since(start).Round(time.Millisecond), dir)
	return srv, nil
}

// nodeEnv is one node-mode test's agent, client and namespace.
type nodeEnv struct {
	t      *testing.T
	a      *agent
	srv    *apitest.Server
	client kubernetes.Interface
	ns     string
}

// startNodeAgent starts an agent in node mode against srv (the shared
// apiserver when nil) with a namespace of its own.
func startNodeAgent(t *testing.T, rt *ctrdtest.Containerd, srv *apitest.Server, args ...string) *nodeEnv {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	if srv == nil {
		srv = env.api.get(t)
	}
	client, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	a := startAgentWith(t, rt, agentOptions{args: append([]string{"--kubeconfig", srv.Kubeconfig()}, args...)})
	n := &nodeEnv{t: t, a: a, srv: srv, client: client, ns: "t-" + a.node}
	if err := srv.Namespace(context.Background(), client, n.ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.CoreV1().Namespaces().Delete(ctx, n.ns, metav1.DeleteOptions{})
		_ = client.CoreV1().Nodes().Delete(ctx, a.node, metav1.DeleteOptions{})
	})
	return n
}

// kubectl runs the bed's kubectl against the test's apiserver.
func (n *nodeEnv) kubectl(stdin string, args ...string) string {
	n.t.Helper()
	cmd := exec.Command(env.bed.Kubectl, append([]string{"--kubeconfig", n.srv.Kubeconfig(), "-n", n.ns}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		n.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (n *nodeEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	n.t.Cleanup(cancel)
	return ctx
}

// waitNodeReady waits for the Node to be registered and Ready.
func (n *nodeEnv) waitNodeReady(timeout time.Duration) *v1.Node {
	n.t.Helper()
	var node *v1.Node
	polltest.Until(n.t, timeout, "node Ready", func() (bool, string) {
		got, err := n.client.CoreV1().Nodes().Get(n.ctx(), n.a.node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		node = got
		for _, c := range got.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, fmt.Sprintf("Ready=%s %s", c.Status, c.Message)
			}
		}
		return false, "no Ready condition"
	})
	return node
}

// waitAPIPod waits until the API's pod satisfies cond.
func (n *nodeEnv) waitAPIPod(name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var pod *v1.Pod
	polltest.Until(n.t, timeout, what, func() (bool, string) {
		got, err := n.client.CoreV1().Pods(n.ns).Get(n.ctx(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = got
		return cond(got), fmt.Sprintf("phase %s podIP %q statuses %+v", got.Status.Phase, got.Status.PodIP, got.Status.ContainerStatuses)
	})
	return pod
}

// localPod returns the API pod name of the test's namespace as the agent
// shows it on /pods, or nil.
func (n *nodeEnv) localPod(name string) *v1.Pod {
	n.t.Helper()
	pods, err := n.a.pods()
	if err != nil {
		n.t.Fatal(err)
	}
	for i := range pods {
		if pods[i].Namespace == n.ns && pods[i].Name == name {
			return &pods[i]
		}
	}
	return nil
}

// outDir is a host directory pods write to, to tell what happened after
// their logs are gone with them.
func (n *nodeEnv) outDir() string { return filepath.Join(n.a.dir, "out") }

func runningWithIP(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && allRunning(p)
}

// podYAML is a busybox pod bound to the test's node that traps SIGTERM,
// reads a configMap volume and a secret env.
func (n *nodeEnv) podYAML(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 20
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "echo cfg=$(cat /cfg/greeting); echo secret=$PASSWORD; echo token=$(wc -c < /var/run/secrets/kubernetes.io/serviceaccount/token); trap 'echo got-term > /out/$(hostname); exit 0' TERM; while true; do sleep 1; done"]
    env:
    - name: PASSWORD
      valueFrom:
        secretKeyRef: {name: creds, key: password}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: out, mountPath: /out}
  volumes:
  - name: cfg
    configMap: {name: settings}
  - name: out
    hostPath: {path: %s, type: DirectoryOrCreate}
`, name, n.a.node, env.busybox, n.outDir())
}

const objectsYAML = `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello-from-configmap}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret-value}
`

// TestNodeMode: the node registers and turns Ready with its Lease; a pod
// created with kubectl runs with its configMap volume, secret env and
// service account token, and reports Running with its IP; kubectl delete
// terminates it gracefully and the agent removes it from the API; a
// static pod has a mirror pod, re-created when deleted, removed with it.
func TestNodeMode(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		n := startNodeAgent(t, rt, nil, "--node-labels", "minikubelet.io/e2e=node-mode", "--register-with-taints", "example.com/e2e=x:PreferNoSchedule", "--max-pods", "42")

		start := time.Now()
		node := n.waitNodeReady(30 * time.Second)
		t.Logf("node Ready %v after the agent was healthy", time.Since(start).Round(time.Millisecond))
		if got := node.Status.Capacity.Pods().Value(); got != 42 {
			t.Errorf("capacity pods = %d, want 42", got)
		}
		if got := node.Status.Allocatable.Pods().Value(); got != 42 {
			t.Errorf("allocatable pods = %d, want 42", got)
		}
		if node.Labels["minikubelet.io/e2e"] != "node-mode" || node.Labels[v1.LabelHostname] != n.a.node {
			t.Errorf("labels = %v", node.Labels)
		}
		// The apiserver adds node.kubernetes.io/not-ready at creation
		// (TaintNodesByCondition); no node lifecycle controller runs to
		// take it away.
		if !hasTaint(node, v1.Taint{Key: "example.com/e2e", Value: "x", Effect: v1.TaintEffectPreferNoSchedule}) {
			t.Errorf("taints = %v", node.Spec.Taints)
		}
		if !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") {
			t.Errorf("containerRuntimeVersion = %q", node.Status.NodeInfo.ContainerRuntimeVersion)
		}
		// A semantic version tools can compare with the control plane's:
		// the Kubernetes release, the agent's own version as build
		// metadata.
		if kv, err := utilversion.ParseSemantic(node.Status.NodeInfo.KubeletVersion); err != nil || kv.Major() != 1 || !strings.Contains(kv.BuildMetadata(), "minikubelet") {
			t.Errorf("kubeletVersion = %q (%v), want v1.x.y+minikubelet...", node.Status.NodeInfo.KubeletVersion, err)
		}
		for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
			if !hasNodeCondition(node, c) {
				t.Errorf("node has no %s condition: %+v", c, node.Status.Conditions)
			}
		}
		// The Lease is created beside the node status, not before the first
		// Ready status: wait for it.
		var lease *coordinationv1.Lease
		polltest.NoError(t, 10*time.Second, "the node's Lease", func() error {
			var err error
			lease, err = n.client.CoordinationV1().Leases("kube-node-lease").Get(n.ctx(), n.a.node, metav1.GetOptions{})
			return err
		})
		checkLease(t, lease, n.a.node)

		n.kubectl(objectsYAML, "apply", "-f", "-")
		n.kubectl(n.podYAML("web"), "apply", "-f", "-")
		start = time.Now()
		pod := n.waitAPIPod("web", 60*time.Second, "pod web Running with an IP", runningWithIP)
		t.Logf("pod web Running with IP %s %v after kubectl apply", pod.Status.PodIP, time.Since(start).Round(time.Millisecond))
		n.a.waitLog(pod, "app", 0, "cfg=hello-from-configmap")
		n.a.waitLog(pod, "app", 0, "secret=s3cret-value")
		n.a.waitLog(pod, "app", 0, "token=")
		if b, _ := os.ReadFile(n.a.containerLog(pod, "app", 0)); strings.Contains(string(b), "token=0") {
			t.Errorf("service account token not projected: %s", b)
		}
		// kubectl describe's events: the kubelet's, about the container,
		// from source "kubelet" (which tools select on).
		polltest.Until(t, 30*time.Second, "Created and Started events of pod web's container", func() (bool, string) {
			list, err := n.client.CoreV1().Events(n.ns).List(n.ctx(), metav1.ListOptions{
				FieldSelector: "involvedObject.uid=" + string(pod.UID) + ",source=kubelet",
			})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, e := range list.Items {
				if e.InvolvedObject.FieldPath == "spec.containers{app}" {
					seen = append(seen, e.Reason)
				}
			}
			return slices.Contains(seen, "Created") && slices.Contains(seen, "Started"), fmt.Sprintf("events %v", seen)
		})

		start = time.Now()
		n.kubectl("", "delete", "pod", "web", "--wait=true", "--timeout=60s")
		took := time.Since(start)
		t.Logf("kubectl delete pod web returned after %v", took.Round(time.Millisecond))
		if took > 15*time.Second {
			t.Errorf("deleting pod web took %v: the container should have stopped on SIGTERM at once", took)
		}
		if b, err := os.ReadFile(filepath.Join(n.outDir(), "web")); err != nil || !strings.Contains(string(b), "got-term") {
			t.Errorf("pod web did not get SIGTERM before it was removed: %q %v", b, err)
		}
		if _, err := n.client.CoreV1().Pods(n.ns).Get(n.ctx(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod web still in the API after kubectl delete: %v", err)
		}

		// A static pod and its mirror.
		n.a.writeManifest("static.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static, namespace: %s}
spec:
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, n.ns, env.busybox))
		mirrorName := n.a.podName("static")
		mirror := n.waitAPIPod(mirrorName, 60*time.Second, "mirror pod Running", func(p *v1.Pod) bool {
			return p.Annotations["kubernetes.io/config.mirror"] != "" && p.Status.Phase == v1.PodRunning
		})
		if mirror.Spec.NodeName != n.a.node || len(mirror.OwnerReferences) != 1 || mirror.OwnerReferences[0].Kind != "Node" {
			t.Errorf("mirror pod: nodeName %q owners %+v", mirror.Spec.NodeName, mirror.OwnerReferences)
		}
		n.kubectl("", "delete", "pod", mirrorName, "--wait=false")
		n.waitAPIPod(mirrorName, 30*time.Second, "mirror pod re-created", func(p *v1.Pod) bool {
			return p.UID != mirror.UID && p.DeletionTimestamp == nil
		})
		n.a.removeManifest("static.yaml")
		polltest.Until(t, 60*time.Second, "mirror pod removed with its static pod", func() (bool, string) {
			_, err := n.client.CoreV1().Pods(n.ns).Get(n.ctx(), mirrorName, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

func hasTaint(node *v1.Node, want v1.Taint) bool {
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&want) && t.Value == want.Value {
			return true
		}
	}
	return false
}

func hasNodeCondition(node *v1.Node, t v1.NodeConditionType) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

func checkLease(t *testing.T, l *coordinationv1.Lease, node string) {
	t.Helper()
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != node {
		t.Errorf("lease holder = %v, want %s", l.Spec.HolderIdentity, node)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 {
		t.Errorf("lease duration = %v, want 40", l.Spec.LeaseDurationSeconds)
	}
	if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > 30*time.Second {
		t.Errorf("lease renewTime = %v, not renewed lately", l.Spec.RenewTime)
	}
}

// TestNodeAPIServerOutage: with the apiserver killed for 30s, the running
// pod keeps running (same container, no restart), the agent keeps serving
// locally, and after the apiserver is back the node is Ready, its Lease
// renewed, and a pod created then runs. It has an apiserver of its own.
func TestNodeAPIServerOutage(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		if !strings.Contains(rt.Name(), "2.") {
			t.Skip("one runtime is enough: the outage concerns the agent and the apiserver")
		}
		srv, err := startAPIServer(t, "outage")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		n := startNodeAgent(t, rt, srv)
		n.waitNodeReady(30 * time.Second)
		n.kubectl(objectsYAML, "apply", "-f", "-")
		n.kubectl(n.podYAML("web"), "apply", "-f", "-")
		before := n.waitAPIPod("web", 60*time.Second, "pod web Running", runningWithIP)

		srv.StopAPIServer()
		t.Log("kube-apiserver stopped for 30s")
		polltest.Holds(t, 30*time.Second, "the agent up and pod web running while the apiserver is down", func() (bool, string) {
			if !n.a.alive() {
				return false, "the agent exited"
			}
			local := n.localPod("web")
			return local != nil && allRunning(local), fmt.Sprintf("pod web on the node: %+v", local)
		})
		if _, code, err := n.a.get(n.a.healthz, "/healthz"); err != nil || code != 200 {
			t.Errorf("/healthz while the apiserver is down: %d %v", code, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := srv.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		t.Log("kube-apiserver back")
		n.waitNodeReady(30 * time.Second)
		after := n.waitAPIPod("web", 30*time.Second, "pod web Running after the outage", runningWithIP)
		if b, a := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]; b.ContainerID != a.ContainerID || a.RestartCount != 0 || after.UID != before.UID {
			t.Errorf("pod web was restarted by the outage: container %s -> %s, restarts %d", b.ContainerID, a.ContainerID, a.RestartCount)
		}
		polltest.Until(t, 30*time.Second, "lease renewed after the outage", func() (bool, string) {
			l, err := n.client.CoordinationV1().Leases("kube-node-lease").Get(n.ctx(), n.a.node, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < 15*time.Second, fmt.Sprint(l.Spec.RenewTime)
		})
		n.kubectl(n.podYAML("web2"), "apply", "-f", "-")
		n.waitAPIPod("web2", 60*time.Second, "a pod created after the outage Running", runningWithIP)
	})
}
