package e2e

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// TestEphemeralContainers: kubectl, through the apiserver and the node's
// kubelet port, against an API pod on the node. `kubectl debug -it
// --target` adds an ephemeral container that shares the target's PID
// namespace (ps shows the target's process) and attaches to it; one
// added without attaching gets its own `kubectl attach`; a third serves
// `kubectl logs` and `kubectl exec`. Each is reported in
// ephemeralContainerStatuses, none is started again once it exited, and
// all go with the pod.
func TestEphemeralContainers(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		srv := env.api.get(t)
		// On every address: the apiserver proxies to the Node's
		// InternalIP, never to loopback.
		n := startNodeAgent(t, rt, srv, "--client-ca-file", srv.ClientCAFile(), "--address", "0.0.0.0")
		n.allowKubeletAPI()
		n.waitNodeReady(30 * time.Second)
		n.kubectl(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: target}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3601"]
`, n.a.node, env.busybox), "apply", "-f", "-")
		pod := n.waitAPIPod("target", 60*time.Second, "pod target Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

		debug := []string{"debug", "target", "--image", env.busybox, "--image-pull-policy", "Never", "--profile", "general", "--target", "app"}
		// kubectl debug -it: created, started, attached; its shell sees
		// the target's sleep in the PID namespace it shares (as PID 1:
		// "1 sleep 3601").
		n.kubectlSession("ps -o pid,args\n", "1 sleep 3601", "exit\n", append(debug, "-it", "-c", "shell", "--", "sh")...)
		n.waitEphemeral("shell", "terminated", func(cs *v1.ContainerStatus) bool {
			return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
		})

		// Added with stdin, not attached: kubectl attach reaches it.
		n.kubectl("", append(debug, "-i", "--attach=false", "-c", "later", "--", "sh")...)
		n.waitEphemeral("later", "running", func(cs *v1.ContainerStatus) bool { return cs.State.Running != nil })
		n.kubectlSession("echo attached-$((6*7))\n", "attached-42", "exit 3\n", "attach", "target", "-c", "later", "-i")
		n.waitEphemeral("later", "terminated with code 3", func(cs *v1.ContainerStatus) bool {
			return cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 3
		})

		// Not interactive: its log and exec through the kubelet port.
		n.kubectl("", append(debug, "-c", "poller", "--", "sh", "-c", "while true; do echo polo; sleep 1; done")...)
		n.waitEphemeral("poller", "running", func(cs *v1.ContainerStatus) bool { return cs.State.Running != nil })
		polltest.Until(t, 15*time.Second, "polo in kubectl logs -c poller", func() (bool, string) {
			out := n.kubectl("", "logs", "target", "-c", "poller")
			return strings.Contains(out, "polo"), out
		})
		if out := n.kubectl("", "exec", "target", "-c", "poller", "--", "ps", "-o", "args"); !strings.Contains(out, "sleep 3601") {
			t.Errorf("kubectl exec ps in poller: %q, want the target's sleep", out)
		}

		// The exited ones are never started again: a resync later the
		// runtime still holds one instance of each.
		polltest.Holds(t, 3*time.Second, "one instance of each ephemeral container", func() (bool, string) {
			counts := map[string]int{}
			for _, c := range podContainers(t, rt, string(pod.UID)) {
				counts[c.GetMetadata().GetName()]++
			}
			return counts["shell"] == 1 && counts["later"] == 1 && counts["poller"] == 1, fmt.Sprint(counts)
		})

		n.kubectl("", "delete", "pod", "target", "--wait=true", "--timeout=60s")
		polltest.Until(t, 30*time.Second, "the pod's containers removed", func() (bool, string) {
			c := podContainers(t, rt, string(pod.UID))
			return len(c) == 0, fmt.Sprintf("%d containers", len(c))
		})
	})
}

// waitEphemeral waits until the API status of pod target's ephemeral
// container name satisfies cond.
func (n *nodeEnv) waitEphemeral(name, what string, cond func(*v1.ContainerStatus) bool) {
	n.t.Helper()
	polltest.Until(n.t, 30*time.Second, "ephemeral container "+name+" "+what, func() (bool, string) {
		p, err := n.client.CoreV1().Pods(n.ns).Get(n.ctx(), "target", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range p.Status.EphemeralContainerStatuses {
			if cs := &p.Status.EphemeralContainerStatuses[i]; cs.Name == name {
				return cond(cs), fmt.Sprintf("%+v", cs.State)
			}
		}
		return false, fmt.Sprintf("no status; ephemeralContainerStatuses %+v", p.Status.EphemeralContainerStatuses)
	})
}

// kubectlSession runs kubectl with args and input on its stdin, waits for
// want in its output, then writes then and closes its stdin, and waits
// for it to end. Stdin stays open until want shows: the runtime ends an
// attach at the end of its client's stdin (containerd closes the output
// then, unless the container is stdinOnce without a terminal), which
// would cut off an answer to input given all at once.
func (n *nodeEnv) kubectlSession(input, want, then string, args ...string) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.bed.Kubectl, append([]string{"--kubeconfig", n.srv.Kubeconfig(), "-n", n.ns}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		n.t.Fatal(err)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		n.t.Fatal(err)
	}
	done := make(chan error, 1) // written once by the waiting goroutine
	go func() { done <- cmd.Wait() }()
	defer func() {
		cancel()
		<-done
	}()
	if _, err := io.WriteString(stdin, input); err != nil {
		n.t.Fatalf("kubectl %s: write stdin: %v", strings.Join(args, " "), err)
	}
	polltest.Until(n.t, 30*time.Second, fmt.Sprintf("%q from kubectl %s", want, strings.Join(args, " ")), func() (bool, string) {
		s := out.String()
		return strings.Contains(s, want), s
	})
	if _, err := io.WriteString(stdin, then); err != nil {
		n.t.Fatalf("kubectl %s: write stdin: %v", strings.Join(args, " "), err)
	}
	_ = stdin.Close()
	select {
	case err := <-done:
		done <- err // for the deferred wait
		if err != nil {
			n.t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	case <-ctx.Done():
		n.t.Errorf("kubectl %s did not end once its stdin was closed:\n%s", strings.Join(args, " "), out.String())
	}
}
