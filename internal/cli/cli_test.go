package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func running(name string, ready bool, restarts int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func waiting(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: reason, ExitCode: code}}}
}

func pod(phase v1.PodPhase, containers []string, statuses ...v1.ContainerStatus) v1.Pod {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default"}, Status: v1.PodStatus{Phase: phase, ContainerStatuses: statuses}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

func TestPodStatusColumn(t *testing.T) {
	withInit := func(p v1.Pod, init []v1.Container, statuses ...v1.ContainerStatus) v1.Pod {
		p.Spec.InitContainers = init
		p.Status.InitContainerStatuses = statuses
		return p
	}
	deleting := pod(v1.PodRunning, []string{"a"}, running("a", true, 0))
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	finishedDeleting := pod(v1.PodSucceeded, []string{"a"}, terminated("a", "Completed", 0))
	finishedDeleting.DeletionTimestamp = &metav1.Time{Time: now}
	readyCond := func(p v1.Pod, ok bool) v1.Pod {
		st := v1.ConditionFalse
		if ok {
			st = v1.ConditionTrue
		}
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: st}}
		return p
	}
	tests := []struct {
		name string
		pod  v1.Pod
		want string
	}{
		{"running", pod(v1.PodRunning, []string{"a"}, running("a", true, 0)), "Running"},
		{"creating", pod(v1.PodPending, []string{"a"}, waiting("a", "ContainerCreating")), "ContainerCreating"},
		{"crash loop wins over a running container", pod(v1.PodRunning, []string{"a", "b"}, running("a", true, 0), waiting("b", "CrashLoopBackOff")), "CrashLoopBackOff"},
		{"completed", pod(v1.PodSucceeded, []string{"a"}, terminated("a", "Completed", 0)), "Completed"},
		{"error", pod(v1.PodFailed, []string{"a"}, terminated("a", "Error", 1)), "Error"},
		{"exit code without reason", pod(v1.PodFailed, []string{"a"}, terminated("a", "", 3)), "ExitCode:3"},
		{"one done one running and ready", readyCond(pod(v1.PodRunning, []string{"a", "b"}, terminated("a", "Completed", 0), running("b", true, 0)), true), "Running"},
		{"one done one running not ready", readyCond(pod(v1.PodRunning, []string{"a", "b"}, terminated("a", "Completed", 0), running("b", true, 0)), false), "NotReady"},
		{"init running", withInit(pod(v1.PodPending, []string{"a"}, waiting("a", "PodInitializing")), []v1.Container{{Name: "i1"}, {Name: "i2"}}, terminated("i1", "Completed", 0), running("i2", false, 0)), "Init:1/2"},
		{"init crash loop", withInit(pod(v1.PodPending, []string{"a"}, waiting("a", "PodInitializing")), []v1.Container{{Name: "i1"}}, waiting("i1", "CrashLoopBackOff")), "Init:CrashLoopBackOff"},
		{"init failed", withInit(pod(v1.PodFailed, []string{"a"}), []v1.Container{{Name: "i1"}}, terminated("i1", "Error", 1)), "Init:Error"},
		{"started sidecar is not initializing", withInit(pod(v1.PodRunning, []string{"a"}, running("a", true, 0)),
			[]v1.Container{{Name: "side", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}},
			v1.ContainerStatus{Name: "side", Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}), "Running"},
		{"terminating", deleting, "Terminating"},
		{"a finished pod being deleted keeps its status", finishedDeleting, "Completed"},
		{"signal without reason", pod(v1.PodFailed, []string{"a"}, v1.ContainerStatus{Name: "a", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Signal: 9, ExitCode: 137}}}), "Signal:9"},
		{"init exit code without reason", withInit(pod(v1.PodPending, []string{"a"}), []v1.Container{{Name: "i1"}}, terminated("i1", "", 2)), "Init:ExitCode:2"},
		{"pod reason wins over the phase", func() v1.Pod { p := pod(v1.PodFailed, []string{"a"}); p.Status.Reason = "Evicted"; return p }(), "Evicted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podStatus(&tt.pod); got != tt.want {
				t.Errorf("status %q; want %q", got, tt.want)
			}
		})
	}
}

func TestPrintPods(t *testing.T) {
	a := pod(v1.PodRunning, []string{"app", "side"}, running("app", true, 0), running("side", false, 0))
	a.Spec.NodeName = "node1"
	a.Status.PodIP = "10.88.0.5"
	a.Status.PodIPs = []v1.PodIP{{IP: "10.88.0.5"}, {IP: "fd00::5"}}
	a.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	a.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	a.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: "example.com/dns", Status: v1.ConditionFalse}}
	b := pod(v1.PodRunning, []string{"app"}, running("app", true, 2))
	b.Name, b.Namespace = "db-node1", "kube-system"
	b.Spec.NodeName = "node1"
	b.Status.StartTime = &metav1.Time{Time: now.Add(-90 * time.Second)} // no creationTimestamp: a static pod
	b.Status.ContainerStatuses[0].LastTerminationState.Terminated = &v1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-30 * time.Second))}
	c := pod(v1.PodPending, []string{"app"}, waiting("app", "ContainerCreating"))
	c.Name = "new-node1"
	tests := []struct {
		name          string
		withNamespace bool
		pods          []v1.Pod
		want          []string
	}{
		{"every namespace: NAMESPACE first, as kubectl -A", true, []v1.Pod{b, a, c}, []string{
			"NAMESPACE     NAME        READY   STATUS              RESTARTS      AGE         IP          NODE     NOMINATED NODE   READINESS GATES",
			"default       new-node1   0/1     ContainerCreating   0             <unknown>   <none>      <none>   <none>           <none>",
			"default       web-node1   1/2     Running             0             3h          10.88.0.5   node1    <none>           1/2",
			"kube-system   db-node1    1/1     Running             2 (30s ago)   90s         <none>      node1    <none>           <none>",
		}},
		{"one namespace (-n): no NAMESPACE column, even with one pod", false, []v1.Pod{b}, []string{
			"NAME       READY   STATUS    RESTARTS      AGE   IP       NODE    NOMINATED NODE   READINESS GATES",
			"db-node1   1/1     Running   2 (30s ago)   90s   <none>   node1   <none>           <none>",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			printPods(&out, tt.pods, tt.withNamespace, now)
			if want := strings.Join(tt.want, "\n") + "\n"; out.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
			}
		})
	}
}

// READY and RESTARTS as kubectl counts them: sidecars (restartable init
// containers) count in both; while init containers run, RESTARTS counts
// theirs; a restart without a known finish time has no "(ago)".
func TestReadyAndRestartsColumns(t *testing.T) {
	finished := func(cs v1.ContainerStatus, ago time.Duration) v1.ContainerStatus {
		cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-ago))}
		return cs
	}
	always := ptr.To(v1.ContainerRestartPolicyAlways)
	sidecarPod := pod(v1.PodRunning, []string{"app"}, finished(running("app", true, 1), 5*time.Minute))
	sidecarPod.Spec.InitContainers = []v1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: always}}
	sidecarPod.Status.InitContainerStatuses = []v1.ContainerStatus{
		finished(terminated("setup", "Completed", 0), 0), // its restarts count no more once initialized
		finished(v1.ContainerStatus{Name: "proxy", Ready: true, Started: ptr.To(true), RestartCount: 2, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}, 40*time.Second),
	}
	sidecarPod.Status.InitContainerStatuses[0].RestartCount = 7

	initLoop := pod(v1.PodPending, []string{"app"}, waiting("app", "PodInitializing"))
	initLoop.Spec.InitContainers = []v1.Container{{Name: "setup"}}
	initLoop.Status.InitContainerStatuses = []v1.ContainerStatus{finished(waiting("setup", "CrashLoopBackOff"), 10*time.Second)}
	initLoop.Status.InitContainerStatuses[0].RestartCount = 4

	noTime := pod(v1.PodRunning, []string{"app"}, running("app", false, 3))

	tests := []struct {
		name          string
		pod           v1.Pod
		ready, status string
		restarts      string
	}{
		{"sidecar counts in READY and RESTARTS", sidecarPod, "2/2", "Running", "3 (40s ago)"},
		{"init container in a crash loop", initLoop, "0/1", "Init:CrashLoopBackOff", "4 (10s ago)"},
		{"no finish time known", noTime, "0/1", "Running", "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := summarize(&tt.pod)
			if got := fmt.Sprintf("%d/%d", s.ready, s.total); got != tt.ready {
				t.Errorf("READY %q; want %q", got, tt.ready)
			}
			if s.status != tt.status {
				t.Errorf("STATUS %q; want %q", s.status, tt.status)
			}
			if got := s.restartsColumn(now); got != tt.restarts {
				t.Errorf("RESTARTS %q; want %q", got, tt.restarts)
			}
		})
	}
}

func TestFindPod(t *testing.T) {
	mk := func(ns, name, node string) v1.Pod {
		return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.PodSpec{NodeName: node}}
	}
	pods := []v1.Pod{mk("default", "web-node1", "Node1"), mk("default", "api", "node1"), mk("other", "api", "node1"), mk("default", "web-node1-node1", "node1")}
	tests := []struct {
		name, ns, want, err string
	}{
		{"web-node1", "", "default/web-node1", ""},
		{"web", "", "default/web-node1", ""},
		{"api", "", "", "more than one namespace"},
		{"api", "other", "other/api", ""},
		{"nope", "", "", `pod "nope" not found`},
	}
	for _, tt := range tests {
		p, err := findPod(pods, tt.name, tt.ns)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("findPod(%q, %q) error %v; want %q", tt.name, tt.ns, err, tt.err)
			}
		case err != nil || p.Namespace+"/"+p.Name != tt.want:
			t.Errorf("findPod(%q, %q) = %v, %v; want %s", tt.name, tt.ns, p, err, tt.want)
		}
	}
}

func TestDefaultContainer(t *testing.T) {
	p := pod(v1.PodRunning, []string{"a", "b"})
	if c, note := defaultContainer(&p); c != "a" || !strings.Contains(note, `Defaulted container "a" out of: a, b`) {
		t.Errorf("got %q %q", c, note)
	}
	p.Annotations = map[string]string{defaultContainerAnnotation: "b"}
	if c, note := defaultContainer(&p); c != "b" || note != "" {
		t.Errorf("annotation: got %q %q", c, note)
	}
}
