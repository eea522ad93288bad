package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
	"github.com/minikubelet/minikubelet/test/dbustest"
)

// shutdownBed is a private system bus with Debian's real systemd-logind on
// it, and a stand-in for systemd (PID 1), which logind asks to power off.
type shutdownBed struct {
	bus     *dbustest.Daemon
	logind  *dbustest.Logind
	systemd *dbustest.Systemd
}

func startShutdownBed(t *testing.T) *shutdownBed {
	t.Helper()
	b := &shutdownBed{bus: dbustest.StartDaemon(t)}
	b.logind = dbustest.StartLogind(t, b.bus)
	b.systemd = dbustest.ServeSystemd(t, b.bus, b.logind)
	return b
}

// agentLock returns the inhibitor lock the agent holds, if any.
func (b *shutdownBed) agentLock(t *testing.T, a *agent) (dbustest.Inhibitor, bool) {
	t.Helper()
	list, err := b.logind.Inhibitors(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Who == "minikubelet" && int(in.PID) == a.cmd.Process.Pid {
			return in, true
		}
	}
	return dbustest.Inhibitor{}, false
}

// powerOff asks logind to power off and waits until it goes on with it
// (asks systemd to start poweroff.target), which it does once no delay lock
// holds it back any more, or InhibitDelayMaxSec has passed. It returns when
// the shutdown was asked for and when logind went on.
func (b *shutdownBed) powerOff(t *testing.T, timeout time.Duration) (asked, proceeded time.Time) {
	t.Helper()
	n := len(b.systemd.Starts())
	asked = time.Now()
	if err := b.logind.PowerOff(t.Context()); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, timeout, "logind to go on with the shutdown", func() (bool, string) {
		return len(b.systemd.Starts()) > n, fmt.Sprintf("%d StartUnit calls", len(b.systemd.Starts()))
	})
	st := b.systemd.Starts()[n]
	if st.Unit != "poweroff.target" {
		t.Errorf("logind started %s, want poweroff.target", st.Unit)
	}
	return asked, st.At
}

// endShutdown makes the last shutdown fail in systemd: logind then sends
// PrepareForShutdown(false), as for a cancelled shutdown.
func (b *shutdownBed) endShutdown(t *testing.T) {
	t.Helper()
	if err := b.systemd.EndJob(len(b.systemd.Starts())-1, "canceled"); err != nil {
		t.Fatal(err)
	}
}

// openLog opens a container's log before the agent removes it: what was
// written stays readable through the open file.
func openLog(t *testing.T, a *agent, pod *v1.Pod, container string) *os.File {
	t.Helper()
	f, err := os.Open(a.containerLog(pod, container, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readAll(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitUp waits until the container of a trapPod has set its trap: until
// then SIGTERM would kill its shell outright.
func waitUp(t *testing.T, a *agent, pod *v1.Pod, name string) {
	t.Helper()
	polltest.Until(t, 30*time.Second, name+" to set its trap", func() (bool, string) {
		b, err := os.ReadFile(a.containerLog(pod, "main", 0))
		return err == nil && strings.Contains(string(b), name+"-up"), fmt.Sprintf("log %q, %v", b, err)
	})
}

// trapPod is a pod whose container says when it gets SIGTERM and when it
// exits, after pause seconds.
func trapPod(name, priorityClass string, pause int) string {
	pc := ""
	if priorityClass != "" {
		pc = "\n  priorityClassName: " + priorityClass
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 30%[2]s
  containers:
  - name: main
    image: %[3]s
    command: ["sh", "-c", "trap 'echo %[1]s-term; sleep %[4]d; echo %[1]s-exit; exit 0' TERM; echo %[1]s-up; while true; do sleep 1 & wait; done"]
`, name, pc, env.busybox, pause)
}

// With --shutdown-grace-period, a node shutdown announced by the real
// systemd-logind terminates the regular pod first and the critical pod
// after it, marks both Failed/Terminated, and only then releases the
// agent's delay lock, well within the grace period; the agent raised
// logind's InhibitDelayMaxSec for that. When the shutdown is called off,
// the agent takes its lock again and the pods run again.
func TestShutdownGraceful(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		bed := startShutdownBed(t)
		ctx := t.Context()
		if d, err := bed.logind.InhibitDelayMax(ctx); err != nil || d != 5*time.Second {
			t.Fatalf("logind's InhibitDelayMax before the agent = %v, %v; want its default 5s", d, err)
		}
		dropIns := filepath.Join(bed.logind.EtcSystemd, "logind.conf.d")
		a := startAgentWith(t, rt, agentOptions{
			args: []string{"--shutdown-grace-period=20s", "--shutdown-grace-period-critical-pods=5s", "--logind-conf-dir", dropIns},
			env:  []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bed.bus.Address},
		})
		polltest.Until(t, 20*time.Second, "the agent's inhibitor lock", func() (bool, string) {
			_, ok := bed.agentLock(t, a)
			return ok, "none"
		})
		lock, _ := bed.agentLock(t, a)
		if lock.What != "shutdown" || lock.Mode != "delay" || lock.Why != "minikubelet needs time to stop pods gracefully" {
			t.Errorf("the agent's lock: %+v", lock)
		}
		if d, err := bed.logind.InhibitDelayMax(ctx); err != nil || d != 20*time.Second {
			t.Errorf("logind's InhibitDelayMax = %v, %v; want 20s after the agent's drop-in", d, err)
		}
		if b, err := os.ReadFile(filepath.Join(dropIns, "99-minikubelet.conf")); err != nil || !strings.Contains(string(b), "[Login]\nInhibitDelayMaxSec=20\n") {
			t.Errorf("drop-in: %q, %v", b, err)
		}
		if got, want := bed.systemd.Kills(), []string{"systemd-logind.service all 1"}; !slices.Equal(got, want) {
			t.Errorf("KillUnit calls = %q, want %q (logind reloaded with SIGHUP)", got, want)
		}

		a.writeManifest("app.yaml", trapPod("app", "", 1))
		a.writeManifest("critical.yaml", trapPod("critical", "system-node-critical", 0))
		app := a.waitRunning("app", 60*time.Second)
		critical := a.waitRunning("critical", 60*time.Second)
		appLog, critLog := openLog(t, a, app, "main"), openLog(t, a, critical, "main")
		waitUp(t, a, app, "app")
		waitUp(t, a, critical, "critical")

		asked, released := bed.powerOff(t, 30*time.Second)
		// logind went on at once when the agent closed its lock: by then no
		// container of the node ran.
		_, ctrs, err := runtimePods(ctx, rt, a.node)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range ctrs {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Errorf("container %s (%s) still runs after the lock was released", c.Metadata.Name, c.Id)
			}
		}
		if took := released.Sub(asked); took >= 20*time.Second {
			t.Errorf("logind went on %v after the shutdown began: the grace period ran out instead of the agent releasing its lock", took)
		} else {
			t.Logf("the agent released its lock %v after PowerOff", took.Round(time.Millisecond))
		}
		if _, held := bed.agentLock(t, a); held {
			t.Error("logind still lists the agent's lock")
		}

		appOut, critOut := readAll(t, appLog), readAll(t, critLog)
		appTerm, appExit := criLogTime(t, appOut, "app-term"), criLogTime(t, appOut, "app-exit")
		critTerm, critExit := criLogTime(t, critOut, "critical-term"), criLogTime(t, critOut, "critical-exit")
		if appTerm.Before(asked) || !critTerm.After(appExit) {
			t.Errorf("PowerOff at %v; app got SIGTERM at %v and exited at %v; critical got SIGTERM at %v: want the critical pod only after the app exited",
				asked.Format(time.StampMicro), appTerm.Format(time.StampMicro), appExit.Format(time.StampMicro), critTerm.Format(time.StampMicro))
		}
		if !released.After(critExit) {
			t.Errorf("the lock was released at %v, before the critical pod exited at %v", released.Format(time.StampMicro), critExit.Format(time.StampMicro))
		}

		for _, name := range []string{"app", "critical"} {
			var pod *v1.Pod
			polltest.Until(t, 10*time.Second, name+" Failed/Terminated", func() (bool, string) {
				pod = a.pod(name)
				if pod == nil {
					return false, "not on /pods"
				}
				return pod.Status.Phase == v1.PodFailed && pod.Status.Reason == "Terminated", describe(pod) + " reason=" + pod.Status.Reason
			})
			if pod.Status.Message != "Pod was terminated in response to imminent node shutdown." {
				t.Errorf("%s: message %q", name, pod.Status.Message)
			}
			var disrupted bool
			for _, c := range pod.Status.Conditions {
				disrupted = disrupted || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet")
			}
			if !disrupted {
				t.Errorf("%s: no DisruptionTarget condition in %+v", name, pod.Status.Conditions)
			}
		}

		// A pod added while the node shuts down does not start.
		a.writeManifest("late.yaml", trapPod("late", "", 0))
		polltest.Until(t, 10*time.Second, "the late pod on /pods", func() (bool, string) { return a.pod("late") != nil, "not yet" })
		polltest.Holds(t, 2*time.Second, "no pod starting while the node shuts down", func() (bool, string) {
			late, old := sandboxExists(ctx, t, rt, a.podName("late")), sandboxExists(ctx, t, rt, app.Name)
			return !late && !old, fmt.Sprintf("sandbox of late: %v, of app: %v", late, old)
		})

		// Called off: the lock is taken again, and the pods run again.
		bed.endShutdown(t)
		polltest.Until(t, 20*time.Second, "the agent's lock again", func() (bool, string) {
			_, ok := bed.agentLock(t, a)
			return ok, "none"
		})
		for _, name := range []string{"app", "critical", "late"} {
			pod := a.waitRunning(name, 60*time.Second)
			if pod.Status.Phase != v1.PodRunning || pod.Status.Reason != "" {
				t.Errorf("%s after the cancellation: phase %s reason %q", name, pod.Status.Phase, pod.Status.Reason)
			}
		}
		if !a.logContains("Released the inhibitor lock: the node's shutdown proceeds") {
			t.Error("the agent's log does not say it released its lock")
		}
	})
}

// Without --shutdown-grace-period the agent takes no lock and a node
// shutdown leaves its pods running, as the kubelet's default.
func TestShutdownWithoutGracePeriod(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		bed := startShutdownBed(t)
		a := startAgentWith(t, rt, agentOptions{env: []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bed.bus.Address}})
		a.writeManifest("app.yaml", trapPod("app", "", 0))
		app := a.waitRunning("app", 60*time.Second)
		appLog := openLog(t, a, app, "main")
		waitUp(t, a, app, "app")
		if _, held := bed.agentLock(t, a); held {
			t.Fatal("the agent holds an inhibitor lock without --shutdown-grace-period")
		}

		asked, proceeded := bed.powerOff(t, 10*time.Second)
		if took := proceeded.Sub(asked); took > 3*time.Second {
			t.Errorf("logind went on %v after PowerOff; nothing should have delayed it", took)
		}
		polltest.Holds(t, 3*time.Second, "the pod untouched after PowerOff", func() (bool, string) {
			pod := a.pod("app")
			return pod != nil && allRunning(pod) && pod.Status.ContainerStatuses[0].RestartCount == 0, fmt.Sprintf("%+v", pod)
		})
		if out := readAll(t, appLog); strings.Contains(out, "app-term") {
			t.Errorf("the app got SIGTERM:\n%s", out)
		}
		bed.endShutdown(t)
	})
}

// When the system bus restarts (and logind with it: it does not reconnect
// by itself), the agent connects again with back-off, takes a new lock, and
// a shutdown after that still terminates its pods gracefully before the
// lock is released.
func TestShutdownReconnect(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		bed := startShutdownBed(t)
		a := startAgentWith(t, rt, agentOptions{
			args: []string{"--shutdown-grace-period=10s", "--logind-conf-dir", filepath.Join(bed.logind.EtcSystemd, "logind.conf.d")},
			env:  []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bed.bus.Address},
		})
		a.writeManifest("app.yaml", trapPod("app", "", 0))
		app := a.waitRunning("app", 60*time.Second)
		appLog := openLog(t, a, app, "main")
		waitUp(t, a, app, "app")
		polltest.Until(t, 20*time.Second, "the agent's inhibitor lock", func() (bool, string) {
			_, ok := bed.agentLock(t, a)
			return ok, "none"
		})

		bed.bus.Restart(t)
		bed.logind.Restart(t)
		bed.systemd = dbustest.ServeSystemd(t, bed.bus, bed.logind)
		polltest.Until(t, 20*time.Second, "the agent's lock on the new bus", func() (bool, string) {
			_, ok := bed.agentLock(t, a)
			return ok, "none"
		})
		// It logs so just after it took the lock.
		polltest.Until(t, 5*time.Second, "the agent to log its reconnection", func() (bool, string) {
			return a.logContains("Reconnected to systemd-logind"), "not yet"
		})
		if d, err := bed.logind.InhibitDelayMax(t.Context()); err != nil || d != 10*time.Second {
			t.Errorf("the new logind's InhibitDelayMax = %v, %v; want the agent's drop-in's 10s", d, err)
		}

		asked, released := bed.powerOff(t, 20*time.Second)
		if took := released.Sub(asked); took >= 10*time.Second {
			t.Errorf("logind went on %v after PowerOff: the grace period ran out", took)
		}
		out := readAll(t, appLog)
		if exit := criLogTime(t, out, "app-exit"); !released.After(exit) {
			t.Errorf("the lock was released at %v, before the app exited at %v", released.Format(time.StampMicro), exit.Format(time.StampMicro))
		}
		polltest.Until(t, 10*time.Second, "app Failed", func() (bool, string) {
			pod := a.pod("app")
			return pod != nil && pod.Status.Phase == v1.PodFailed && pod.Status.Reason == "Terminated", fmt.Sprintf("%+v", pod)
		})
		bed.endShutdown(t)
	})
}

// With --shutdown-grace-period but no logind to talk to, the agent says
// graceful node shutdown is off, and runs its pods all the same.
func TestShutdownWithoutLogind(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		bus := dbustest.StartDaemon(t) // a bus, but no logind on it
		for _, addr := range []string{bus.Address, "unix:path=" + filepath.Join(t.TempDir(), "no-bus")} {
			a := startAgentWith(t, rt, agentOptions{
				args: []string{"--shutdown-grace-period=20s"},
				env:  []string{"DBUS_SYSTEM_BUS_ADDRESS=" + addr},
			})
			polltest.Until(t, 20*time.Second, "the agent to say graceful shutdown is off", func() (bool, string) {
				return a.logContains("Graceful node shutdown is OFF"), "not yet"
			})
			a.writeManifest("app.yaml", trapPod("app", "", 0))
			a.waitRunning("app", 60*time.Second)
			a.stop()
			if !a.logContains("Stopping minikubelet") {
				t.Errorf("the agent on %s did not stop cleanly", addr)
			}
		}
	})
}
