package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// podLog reads /containerLogs/{ns}/{pod}/{container}?query from the
// agent's read-only port.
func (a *agent) podLog(ns, pod, container, query string) (string, int) {
	a.t.Helper()
	body, code, err := a.local(fmt.Sprintf("/containerLogs/%s/%s/%s?%s", ns, pod, container, query))
	if err != nil {
		a.t.Fatalf("containerLogs of %s/%s/%s: %v", ns, pod, container, err)
	}
	return body, code
}

// podLogDir is the log directory of a pod the agent shows on /pods.
func (a *agent) podLogDir(p *v1.Pod) string {
	return filepath.Join(a.logsDir, fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
}

// runtimeContainers counts the containers the runtime holds for the pod
// of that UID, whatever their sandbox is named.
func runtimeContainers(t *testing.T, rt *ctrdtest.Containerd, uid string) int {
	t.Helper()
	return len(podContainers(t, rt, uid))
}

// podContainers returns the runtime's containers of the pod uid, in any
// state.
func podContainers(t *testing.T, rt *ctrdtest.Containerd, uid string) []*runtimeapi.Container {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctrs, err := rt.Runtime().ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*runtimeapi.Container
	for _, c := range ctrs {
		if c.GetLabels()["io.kubernetes.pod.uid"] == uid {
			out = append(out, c)
		}
	}
	return out
}

// finishedPodScript is a container that fails once and then succeeds,
// leaving its mark in an emptyDir between the runs. Its stderr line comes
// a second after its stdout line: the two streams are copied to the log
// apart, so their order is only known across a pause.
const finishedPodScript = `if [ -f /state/ran ]; then echo attempt-2; sleep 1; echo err-2 >&2; exit 0; fi; touch /state/ran; echo attempt-1; exit 1`

// TestLogsOfFinishedPods: a pod that has finished keeps its last
// container and its log until it is removed, as the kubelet's container
// GC keeps them: an API pod until it is deleted in the API (it used to
// lose its log the moment the API said Succeeded), a static pod until its
// manifest is removed. Meanwhile syncs and housekeeping run (resync every
// 2s) and start nothing.
func TestLogsOfFinishedPods(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		n := startNodeAgent(t, rt, nil, "--sync-frequency", "2s")
		n.waitNodeReady(30 * time.Second)
		n.kubectl(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: job}
spec:
  nodeName: %s
  restartPolicy: OnFailure
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
    volumeMounts: [{name: state, mountPath: /state}]
  volumes: [{name: state, emptyDir: {}}]
`, n.a.node, env.busybox, finishedPodScript), "apply", "-f", "-")
		// The first run fails; the crash-loop back-off delays the second
		// by 10s.
		pod := n.waitAPIPod("job", 90*time.Second, "pod job Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
		local := n.localPod("job")
		if local == nil {
			t.Fatalf("pod job is no longer on /pods once it Succeeded")
		}
		dir := n.a.podLogDir(local)
		// The sync after the API says Succeeded removes the failed first
		// run, as the kubelet's container GC would (one dead container
		// per name); the last one stays.
		kept := func() (bool, string) {
			out, code := n.a.podLog(n.ns, "job", "app", "")
			if code != http.StatusOK || out != "attempt-2\nerr-2\n" {
				return false, fmt.Sprintf("containerLogs: HTTP %d %q", code, out)
			}
			if c := runtimeContainers(t, rt, string(pod.UID)); c != 1 {
				return false, fmt.Sprintf("the runtime holds %d containers of the pod, want its last one", c)
			}
			p := n.localPod("job")
			if p == nil || p.Status.Phase != v1.PodSucceeded {
				return false, fmt.Sprintf("pod on /pods: %v", p)
			}
			if cs := containerStatus(p, "app"); cs == nil || cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
				return false, describe(p)
			}
			return true, ""
		}
		polltest.Until(t, 30*time.Second, "the finished pod's last container and log kept", kept)
		polltest.Holds(t, 8*time.Second, "the finished pod's last container and log stay", kept)
		if out, code := n.a.podLog(n.ns, "job", "app", "tailLines=1&timestamps=true"); code != http.StatusOK || !strings.HasSuffix(out, "Z err-2\n") || strings.Count(out, "\n") != 1 {
			t.Errorf("tailLines=1&timestamps=true: HTTP %d %q", code, out)
		}
		// kubectl's view, through the apiserver, needs the kubelet port
		// (issue 18, s18); the agent's own endpoint answers above.

		n.kubectl("", "delete", "pod", "job", "--wait=true", "--timeout=60s")
		polltest.Until(t, 30*time.Second, "the deleted pod's containers and log directory removed", func() (bool, string) {
			c := runtimeContainers(t, rt, string(pod.UID))
			_, err := os.Stat(dir)
			return c == 0 && errors.Is(err, os.ErrNotExist), fmt.Sprintf("%d containers; log directory: %v", c, err)
		})
		if _, err := n.client.CoreV1().Pods(n.ns).Get(n.ctx(), "job", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod job still in the API: %v", err)
		}

		// A static pod: kept until its manifest goes.
		n.a.writeManifest("static-job.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: static-job}
spec:
  restartPolicy: Never
  hostNetwork: true
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "echo static-done"]
`, env.busybox))
		var static *v1.Pod
		polltest.Until(t, 60*time.Second, "static-job Succeeded", func() (bool, string) {
			static = n.a.pod("static-job")
			return static != nil && static.Status.Phase == v1.PodSucceeded, fmt.Sprint(static)
		})
		polltest.Holds(t, 5*time.Second, "the finished static pod's log stays", func() (bool, string) {
			out, code := n.a.podLog(static.Namespace, static.Name, "app", "")
			return code == http.StatusOK && out == "static-done\n", fmt.Sprintf("HTTP %d %q", code, out)
		})
		n.a.removeManifest("static-job.yaml")
		polltest.Until(t, 30*time.Second, "the static pod's log directory removed with its manifest", func() (bool, string) {
			_, err := os.Stat(n.a.podLogDir(static))
			return errors.Is(err, os.ErrNotExist), fmt.Sprint(err)
		})
	})
}

// agentMemory reads the agent's peak and current resident set (VmHWM,
// VmRSS of /proc/<pid>/status), in bytes.
func (a *agent) agentMemory() (hwm, rss int64) {
	a.t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", a.cmd.Process.Pid))
	if err != nil {
		a.t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[2] != "kB" {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			hwm = v << 10
		case "VmRSS:":
			rss = v << 10
		}
	}
	return hwm, rss
}

// TestContainerLogLongLine: a container writes 200 MiB without a
// newline. containerd splits it into partial entries of 16 KiB; the agent
// streams the line out as it reads it, and its heap and resident set
// stay where they were (the old reader joined the partial entries in
// memory: 200 MiB and more). The bound is a memory bound with slack, not
// a time.
func TestContainerLogLongLine(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		// One log file: no rotation in the middle of the line.
		a := startAgent(t, rt, "--container-log-max-size", "1Gi")
		const size = 200 << 20
		a.writeManifest("long.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: long}
spec:
  restartPolicy: Never
  hostNetwork: true
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "head -c %d /dev/zero | tr '\\0' a"]
`, env.busybox, size))
		var pod *v1.Pod
		polltest.Until(t, 120*time.Second, "pod long Succeeded", func() (bool, string) {
			pod = a.pod("long")
			return pod != nil && pod.Status.Phase == v1.PodSucceeded, fmt.Sprint(pod)
		})
		st, err := os.Stat(a.containerLog(pod, "app", 0))
		if err != nil || st.Size() < size {
			t.Fatalf("log file: %v, %v bytes", err, st)
		}
		allocBefore, ok := a.metric("go_memstats_alloc_bytes_total", "")
		if !ok {
			t.Fatal("no go_memstats_alloc_bytes_total on /metrics")
		}
		hwmBefore, rssBefore := a.agentMemory()

		// The whole line, as the last line of the log: the tail is found
		// reading back through 12,800 partial entries.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/containerLogs/%s/%s/app?tailLines=1", a.streamPort(), pod.Namespace, pod.Name), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var as, other int64
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			for _, c := range buf[:n] {
				if c == 'a' {
					as++
				} else {
					other++
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || as != size || other != 0 {
			t.Errorf("HTTP %d: %d bytes of 'a' and %d others; want the %d-byte line with no newline (the container wrote none)", resp.StatusCode, as, other, size)
		}

		allocAfter, _ := a.metric("go_memstats_alloc_bytes_total", "")
		hwmAfter, rssAfter := a.agentMemory()
		t.Logf("reading the log: %d MiB allocated; RSS %d -> %d MiB, peak %d -> %d MiB", int64(allocAfter-allocBefore)>>20, rssBefore>>20, rssAfter>>20, hwmBefore>>20, hwmAfter>>20)
		// Everything the agent allocated meanwhile, its own work
		// included, is far below the line's size.
		if d := allocAfter - allocBefore; d > 48<<20 {
			t.Errorf("the agent allocated %d MiB while serving a %d MiB line", int64(d)>>20, size>>20)
		}
		if d := hwmAfter - hwmBefore; d > 48<<20 {
			t.Errorf("the agent's peak resident set grew by %d MiB while serving a %d MiB line", d>>20, size>>20)
		}
	})
}

// restartedScript fails once, writing two lines; its second run writes
// two lines to stdout, then, a second later (stdout and stderr are copied
// to the log apart, so their order is only known across a pause), one to
// stderr, and sleeps.
const restartedScript = `if [ -f /state/ran ]; then echo second-1; echo second-2; sleep 1; echo second-err >&2; exec sleep 3600; fi; touch /state/ran; echo first-1; echo first-2; exit 1`

// TestContainerLogsQuery: /containerLogs against containerd's real log
// files, with every query parameter kubectl logs sends: previous (the
// run before a restart), tailLines and the old tail, limitBytes,
// timestamps, sinceSeconds and sinceTime, stream (with the
// PodLogsQuerySplitStreams gate), follow (new lines as they come; the end
// of a dead container's log ends the stream) and the errors.
func TestContainerLogsQuery(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt, "--feature-gates", "PodLogsQuerySplitStreams=true")
		a.writeManifest("logs.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: logs}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    command: ["sh", "-c", %[2]q]
    volumeMounts: [{name: state, mountPath: /state}]
  - name: ticker
    image: %[1]s
    command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 1; done"]
  volumes: [{name: state, emptyDir: {}}]
`, env.busybox, restartedScript))
		// The restart waits out the 10s crash-loop back-off.
		var pod *v1.Pod
		polltest.Until(t, 90*time.Second, "app restarted once and wrote its lines", func() (bool, string) {
			pod = a.pod("logs")
			if pod == nil {
				return false, "not on /pods"
			}
			if !allRunning(pod) || containerStatus(pod, "app").RestartCount != 1 {
				return false, describe(pod)
			}
			out, code := a.podLog(pod.Namespace, pod.Name, "app", "")
			return code == http.StatusOK && strings.HasSuffix(out, "second-err\n"), fmt.Sprintf("HTTP %d %q", code, out)
		})
		ns, name := pod.Namespace, pod.Name
		for _, tt := range []struct{ query, want string }{
			{"", "second-1\nsecond-2\nsecond-err\n"},
			{"previous=true", "first-1\nfirst-2\n"},
			{"previous=true&tailLines=1", "first-2\n"},
			{"tailLines=2", "second-2\nsecond-err\n"},
			{"tailLines=0", ""},
			{"tail=1", "second-err\n"},
			{"tail=all", "second-1\nsecond-2\nsecond-err\n"},
			{"limitBytes=10", "second-1\ns"},
			{"tailLines=1&limitBytes=3", "sec"},
			{"stream=Stdout", "second-1\nsecond-2\n"},
			{"stream=Stderr", "second-err\n"},
			{"previous=true&stream=Stderr", ""},
			// A dead container's log: follow ends at its end.
			{"previous=true&follow=true", "first-1\nfirst-2\n"},
		} {
			if out, code := a.podLog(ns, name, "app", tt.query); code != http.StatusOK || out != tt.want {
				t.Errorf("?%s: HTTP %d %q, want %q", tt.query, code, out, tt.want)
			}
		}
		for _, tt := range []struct {
			container, query string
			code             int
		}{
			{"app", "tailLines=-1", http.StatusUnprocessableEntity},
			{"app", "limitBytes=0", http.StatusUnprocessableEntity},
			{"app", "sinceSeconds=1&sinceTime=2020-01-01T00:00:00Z", http.StatusUnprocessableEntity},
			{"app", "tailLines=1&stream=Stderr", http.StatusUnprocessableEntity},
			{"app", "tailLines=x", http.StatusBadRequest},
			{"nosuch", "", http.StatusNotFound},
			{"ticker", "previous=true", http.StatusBadRequest},
		} {
			if out, code := a.podLog(ns, name, tt.container, tt.query); code != tt.code {
				t.Errorf("%s?%s: HTTP %d %q, want HTTP %d", tt.container, tt.query, code, out, tt.code)
			}
		}

		// timestamps: each line prefixed with the time containerd read
		// it, RFC 3339 with nanoseconds, in order, within the container's
		// run.
		started := containerStatus(pod, "app").State.Running.StartedAt.Time
		out, code := a.podLog(ns, name, "app", "timestamps=true")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != http.StatusOK || len(lines) != 3 {
			t.Fatalf("timestamps=true: HTTP %d %q", code, out)
		}
		var stamps []time.Time
		for i, line := range lines {
			ts, text, _ := strings.Cut(line, " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || text != strings.Split("second-1 second-2 second-err", " ")[i] {
				t.Fatalf("timestamps=true: line %q: %v", line, err)
			}
			if at.Before(started.Add(-time.Second)) || at.After(time.Now()) {
				t.Errorf("timestamps=true: line %q is not within the container's run (started %s)", line, started)
			}
			stamps = append(stamps, at)
		}
		if !stamps[1].Before(stamps[2]) || stamps[2].Sub(stamps[1]) < 900*time.Millisecond {
			t.Errorf("timestamps=true: the stderr line, written a second after the others: %q", out)
		}
		// sinceTime (whole seconds) at the second after the stdout lines:
		// only the stderr line, a second later.
		if since := stamps[1].Truncate(time.Second).Add(time.Second); !since.After(stamps[2]) {
			if out, code := a.podLog(ns, name, "app", "sinceTime="+since.UTC().Format(time.RFC3339)); code != http.StatusOK || out != "second-err\n" {
				t.Errorf("sinceTime=%s: HTTP %d %q, want the stderr line", since.Format(time.RFC3339), code, out)
			}
		}

		// sinceSeconds on the ticker, once it has run for 8s: only the
		// lines of the last 3 seconds.
		polltest.Until(t, 30*time.Second, "the ticker wrote 8 lines", func() (bool, string) {
			out, _ := a.podLog(ns, name, "ticker", "")
			return strings.Count(out, "\n") >= 8, out
		})
		asked := time.Now()
		out, code = a.podLog(ns, name, "ticker", "sinceSeconds=3&timestamps=true")
		lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if code != http.StatusOK || out == "" || len(lines) > 5 {
			t.Fatalf("sinceSeconds=3: HTTP %d %q", code, out)
		}
		for _, line := range lines {
			ts, text, _ := strings.Cut(line, " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || !strings.HasPrefix(text, "tick-") || at.Before(asked.Add(-3*time.Second)) {
				t.Errorf("sinceSeconds=3, asked at %s: line %q (%v)", asked.Format(time.RFC3339Nano), line, err)
			}
		}
		if all, _ := a.podLog(ns, name, "ticker", ""); !strings.HasPrefix(all, "tick-1\n") || strings.Count(all, "\n") <= len(lines) {
			t.Errorf("the ticker's whole log %q is not longer than its last 3 seconds %q", all, out)
		}

		// follow: with tailLines=0 only what the ticker writes from now
		// on, line after line, until the client goes.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/containerLogs/%s/%s/ticker?follow=true&tailLines=0", a.streamPort(), ns, name), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("follow: HTTP %d", resp.StatusCode)
		}
		before, _ := a.podLog(ns, name, "ticker", "tailLines=1")
		br := bufio.NewReader(resp.Body)
		var got []int
		for len(got) < 3 {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("follow: after %v: %v", got, err)
			}
			n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "tick-"))
			if err != nil {
				t.Fatalf("follow: line %q", line)
			}
			got = append(got, n)
		}
		last, _ := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(before), "tick-"))
		if got[0] > last+1 || got[1] != got[0]+1 || got[2] != got[1]+1 {
			t.Errorf("follow: lines %v, the log's last line when it began was %q", got, before)
		}
		// By now (three lines followed) the app has written nothing for
		// over a second.
		if age := time.Since(stamps[2]); age < 1100*time.Millisecond {
			t.Fatalf("the app's last line is only %s old", age)
		}
		if out, code := a.podLog(ns, name, "app", "sinceSeconds=1"); code != http.StatusOK || out != "" {
			t.Errorf("sinceSeconds=1 on a quiet container: HTTP %d %q", code, out)
		}
	})
}
