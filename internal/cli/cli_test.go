package cli

import (
	"bytes"
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
	a.Status.PodIP = "10.88.0.5"
	a.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Hour))
	b := pod(v1.PodRunning, []string{"app"}, running("app", true, 2))
	b.Name, b.Namespace = "db-node1", "kube-system"
	b.Status.StartTime = &metav1.Time{Time: now.Add(-90 * time.Second)}
	b.Status.ContainerStatuses[0].LastTerminationState.Terminated = &v1.ContainerStateTerminated{FinishedAt: metav1.NewTime(now.Add(-30 * time.Second))}
	var out bytes.Buffer
	printPods(&out, []v1.Pod{a, b}, now)
	want := strings.Join([]string{
		"NAMESPACE     NAME        READY   STATUS    RESTARTS      AGE   IP",
		"default       web-node1   1/2     Running   0             3h    10.88.0.5",
		"kube-system   db-node1    1/1     Running   2 (30s ago)   90s   <none>",
		"",
	}, "\n")
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
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
