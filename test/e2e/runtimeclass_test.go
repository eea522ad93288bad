package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// waitSandboxFailure waits until pod shows its container waiting as
// ContainerCreating with a message holding want (its sandbox cannot be
// made), as get reads the pod.
func waitSandboxFailure(t *testing.T, what string, get func() *v1.Pod, want string) {
	t.Helper()
	polltest.Until(t, 60*time.Second, what, func() (bool, string) {
		p := get()
		if p == nil {
			return false, "no pod"
		}
		cs := containerStatus(p, "app")
		if cs == nil || cs.State.Waiting == nil {
			return false, describe(p)
		}
		return cs.State.Waiting.Reason == "ContainerCreating" && strings.Contains(cs.State.Waiting.Message, want), cs.State.Waiting.Message
	})
}

// Static pods on a standalone node: one naming a RuntimeClass is refused
// (a standalone node cannot resolve it, and the kubelet's silent fallback
// to the default handler is not taken); one with hostUsers: false runs in
// a user namespace of its own where the runtime supports them, and where
// it does not (Debian's runc 1.1.5, under either containerd) its sandbox
// is never made, the kubelet's message says why, and it never runs with
// the host's users.
func TestStaticRuntimeClassAndUserNamespace(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := rt.Runtime().Status(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		usernsOK := false
		for _, h := range st.GetRuntimeHandlers() {
			if h.GetName() == "" {
				usernsOK = h.GetFeatures().GetUserNamespaces()
			}
		}
		a := startAgent(t, rt)
		a.writeManifest("classy.yaml", strings.Replace(sleeperPod("classy"), "spec:\n", "spec:\n  runtimeClassName: gvisor\n", 1))
		a.writeManifest("userns.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: userns
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 0
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "cat /proc/self/uid_map; sleep 3600"]
`, env.busybox))
		a.waitRefused("classy", "RuntimeClassUnavailable", `spec.runtimeClassName: RuntimeClass "gvisor" cannot be resolved to a runtime handler: a standalone node reads no RuntimeClasses (remove the field to run the pod under the runtime's default handler, or run the node with --kubeconfig)`)
		a.noSandbox("classy")
		if usernsOK {
			p := a.waitRunning("userns", 60*time.Second)
			a.waitLog(p, "app", 0, "65536")
			return
		}
		t.Logf("%s reports no user namespace support: the pod must not start", rt.Name())
		waitSandboxFailure(t, "userns waiting for a user namespace", func() *v1.Pod { return a.pod("userns") },
			"can't set `spec.hostUsers: false`, runtime does not support user namespaces")
		a.noSandbox("userns")
	})
}

// Node mode: runtimeClassName resolves through the RuntimeClass API to the
// runtime handler RunPodSandbox gets (a class of handler runc runs); a
// handler the runtime does not have, or a class the apiserver no longer
// has, fails the sandbox as the kubelet's does: the containers wait as
// ContainerCreating and a FailedCreatePodSandBox event gives the cause.
func TestNodeRuntimeClass(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		n := startNodeAgent(t, rt, nil)
		n.waitNodeReady(30 * time.Second)
		for _, rc := range []nodev1.RuntimeClass{
			{ObjectMeta: metav1.ObjectMeta{Name: n.ns + "-runc"}, Handler: "runc"},
			{ObjectMeta: metav1.ObjectMeta{Name: n.ns + "-gvisor"}, Handler: "runsc"},
		} {
			if _, err := n.client.NodeV1().RuntimeClasses().Create(n.ctx(), &rc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = n.client.NodeV1().RuntimeClasses().Delete(context.Background(), rc.Name, metav1.DeleteOptions{})
			})
		}
		n.kubectl(n.apiPodYAML("runc", "runtimeClassName: "+n.ns+"-runc"), "apply", "-f", "-")
		n.kubectl(n.apiPodYAML("gvisor", "runtimeClassName: "+n.ns+"-gvisor"), "apply", "-f", "-")
		n.waitAPIPod("runc", 60*time.Second, "the pod of class runc Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		get := func() *v1.Pod {
			p, err := n.client.CoreV1().Pods(n.ns).Get(n.ctx(), "gvisor", metav1.GetOptions{})
			if err != nil {
				return nil
			}
			return p
		}
		waitSandboxFailure(t, "the pod of handler runsc waiting", get, "runsc")
		// The apiserver refuses a pod of a class it does not have; a class
		// deleted after its pod was made is one the node cannot find.
		if err := n.client.NodeV1().RuntimeClasses().Delete(n.ctx(), n.ns+"-gvisor", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitSandboxFailure(t, "the pod of a class gone waiting", get, fmt.Sprintf(`runtimeclass.node.k8s.io "%s-gvisor" not found`, n.ns))
		p := get()
		polltest.Until(t, 30*time.Second, "FailedCreatePodSandBox events of both causes", func() (bool, string) {
			list, err := n.client.CoreV1().Events(n.ns).List(n.ctx(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(p.UID) + ",reason=FailedCreatePodSandBox"})
			if err != nil {
				return false, err.Error()
			}
			var handler, notFound bool
			var msgs []string
			for _, e := range list.Items {
				msgs = append(msgs, e.Message)
				handler = handler || strings.HasPrefix(e.Message, "Failed to create pod sandbox: ") && strings.Contains(e.Message, "runsc")
				notFound = notFound || e.Message == fmt.Sprintf(`Failed to create pod sandbox: runtimeclass.node.k8s.io "%s-gvisor" not found`, n.ns)
			}
			return handler && notFound, fmt.Sprintf("%q", msgs)
		})
	})
}
