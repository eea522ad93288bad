package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// apiPodYAML is a pod bound to the test's node whose container sleeps;
// extra is YAML added to its spec (at the spec's indentation).
func (n *nodeEnv) apiPodYAML(name string, extra ...string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 0
  automountServiceAccountToken: false
%s
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
`, name, n.a.node, "  "+strings.Join(extra, "\n  "), env.busybox)
}

func apiCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// Node mode: a pod refused at admission shows phase Failed with the
// kubelet's reason and message in the API, with a Warning event of that
// reason from source kubelet (--max-pods: OutOfpods; an unsafe sysctl:
// SysctlForbidden); a pod's readiness gate holds its Ready condition False
// until the gate's condition, set by someone else in the API, is True, and
// the agent's status patches keep that condition.
func TestNodeAdmissionAndReadinessGates(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		n := startNodeAgent(t, rt, nil, "--max-pods", "2")
		n.waitNodeReady(30 * time.Second)

		n.kubectl(n.apiPodYAML("gated", "readinessGates: [{conditionType: example.com/lb}]"), "apply", "-f", "-")
		gated := n.waitAPIPod("gated", 60*time.Second, "gated Running, Ready held by its gate", func(p *v1.Pod) bool {
			c := apiCondition(p, v1.PodReady)
			return p.Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionFalse && c.Reason == "ReadinessGatesNotReady"
		})
		if c := apiCondition(gated, v1.PodReady); c.Message != `corresponding condition of pod readiness gate "example.com/lb" does not exist.` {
			t.Errorf("Ready message %q", c.Message)
		}
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": "example.com/lb", "status": "True"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.client.CoreV1().Pods(n.ns).Patch(n.ctx(), "gated", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("set the gate's condition: %v", err)
		}
		gated = n.waitAPIPod("gated", 30*time.Second, "gated Ready once its gate is True", func(p *v1.Pod) bool {
			c := apiCondition(p, v1.PodReady)
			return c != nil && c.Status == v1.ConditionTrue
		})
		if c := apiCondition(gated, "example.com/lb"); c == nil || c.Status != v1.ConditionTrue {
			t.Errorf("the gate's condition after the agent's patch: %+v", c)
		}

		n.kubectl(n.apiPodYAML("second"), "apply", "-f", "-")
		n.waitAPIPod("second", 60*time.Second, "second Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		n.kubectl(n.apiPodYAML("third"), "apply", "-f", "-")
		n.kubectl(n.apiPodYAML("sysctl", "securityContext: {sysctls: [{name: net.ipv4.ip_forward, value: \"1\"}]}"), "apply", "-f", "-")
		for _, want := range []struct{ pod, reason, message string }{
			{"third", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
			{"sysctl", "SysctlForbidden", `forbidden sysctl: "net.ipv4.ip_forward" not allowlisted`},
		} {
			p := n.waitAPIPod(want.pod, 30*time.Second, want.pod+" refused with "+want.reason, func(p *v1.Pod) bool {
				return p.Status.Phase == v1.PodFailed && p.Status.Reason == want.reason
			})
			if p.Status.Message != "Pod was rejected: "+want.message || len(p.Status.ContainerStatuses) != 0 {
				t.Errorf("%s: message %q, container statuses %+v", want.pod, p.Status.Message, p.Status.ContainerStatuses)
			}
			polltest.Until(t, 30*time.Second, want.reason+" event of "+want.pod, func() (bool, string) {
				list, err := n.client.CoreV1().Events(n.ns).List(n.ctx(), metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(p.UID) + ",source=kubelet"})
				if err != nil {
					return false, err.Error()
				}
				var seen []string
				for _, e := range list.Items {
					if e.Type == v1.EventTypeWarning {
						seen = append(seen, e.Reason+": "+e.Message)
					}
				}
				return slices.Contains(seen, want.reason+": "+want.message), fmt.Sprintf("warnings %q", seen)
			})
		}
		// Deleted, a refused pod leaves the API without a worker to wait for.
		n.kubectl("", "delete", "pod", "third", "--wait=true", "--timeout=30s")
	})
}
