package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// writePause writes the binary into a temp dir and returns its path.
func writePause(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("no machine code for %s (prepare.sh builds ./portable there)", runtime.GOARCH)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, elf(amd64Code), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// start starts the binary with attr and stops it (SIGKILL) at the end of
// the test if it is still there.
func start(t *testing.T, path string, attr *syscall.SysProcAttr) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(path)
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	return cmd
}

// killAtEnd stops the started cmd (SIGKILL) at the end of the test if it
// is still there.
func killAtEnd(t *testing.T, cmd *exec.Cmd) {
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
}

// asleep waits until pid sleeps (in pause(2), its handlers in place).
func asleep(t *testing.T, pid int) {
	t.Helper()
	polltest.Until(t, 5*time.Second, "pause asleep", func() (bool, string) {
		st := status(pid, "State")
		return strings.HasPrefix(st, "S"), "state " + st
	})
}

// status returns field of /proc/pid/status.
func status(pid int, field string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestPauseOneThreadExitsOnTermAndInt(t *testing.T) {
	path := writePause(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := start(t, path, nil)
		// Its handlers are in place once it sleeps in pause(2).
		asleep(t, cmd.Process.Pid)
		if got := status(cmd.Process.Pid, "Threads"); got != "1" {
			t.Errorf("threads = %q, want 1", got)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("after %v: %v, want exit status 0", sig, err)
		}
	}
	// Other signals keep the action they came with: SIGUSR1's default
	// kills it, unless whatever started the test ignores SIGUSR1 (an
	// ignored signal stays ignored across exec, as nohup's SIGHUP does).
	if signal.Ignored(syscall.SIGUSR1) {
		t.Log("SIGUSR1 is ignored here: not checking that pause keeps its default")
		return
	}
	cmd := start(t, path, nil)
	asleep(t, cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGUSR1)
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGUSR1 {
		t.Errorf("after SIGUSR1: %v, want killed by it", err)
	}
}

// As PID 1 of a PID namespace, pause reaps an orphan re-parented to it.
func TestPauseReapsOrphans(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace needs root")
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		t.Skip("no nsenter")
	}
	path := writePause(t)
	cmd := start(t, path, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID})
	pid := cmd.Process.Pid
	asleep(t, pid)
	if got := status(pid, "NSpid"); !strings.HasSuffix(got, "\t1") {
		t.Fatalf("NSpid = %q, want PID 1 in its namespace", got)
	}
	// The subshell exits at once; its sleep is re-parented to pause. Once
	// it is there the test kills it, and pause must reap it.
	out, err := exec.Command(nsenter, "-t", strconv.Itoa(pid), "-p", "--", "sh", "-c", "(sleep 60 </dev/null >/dev/null 2>&1 &); exit 0").CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	// A child, zombie or not, is listed until pause reaps it.
	children := func() string {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		return strings.TrimSpace(string(b))
	}
	var orphan int
	polltest.Until(t, 10*time.Second, "the orphan re-parented to pause", func() (bool, string) {
		c := children()
		orphan, _ = strconv.Atoi(c)
		return orphan > 0, "children: " + c
	})
	if err := syscall.Kill(orphan, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the orphan %d: %v", orphan, err)
	}
	polltest.Until(t, 10*time.Second, "the orphan reaped", func() (bool, string) {
		c := children()
		return c == "", "children: " + c
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after SIGTERM: %v, want exit status 0", err)
	}
}

// TestPortableBuilds: where there is no machine code, the generator
// builds the Go stand-in, a static executable that ends on SIGTERM.
func TestPortableBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := portable(path); err != nil {
		t.Fatal(err)
	}
	// Not PID 1, it says so once its handlers are in place.
	cmd := exec.Command(path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killAtEnd(t, cmd)
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, "not running as PID 1") {
		t.Fatalf("the stand-in's first words: %q, %v", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the stand-in did not end cleanly on SIGTERM: %v", err)
	}
}
