package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// stopGrace is how long a component has between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// proc is one running component: its command, its log file and a channel
// closed once the process has exited and been reaped.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// exited is closed by the goroutine that waits for the process.
	exited chan struct{}
}

// launch starts bin with args, its stdout and stderr appended to logPath.
// The process gets SIGKILL if the test process dies first (Pdeathsig), so
// a crashed test leaves no component running.
func launch(name, bin, logPath string, env []string, args ...string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// pid is the process's ID, or 0 when it is nil or has exited.
func (p *proc) pid() int {
	if p == nil || !p.running() {
		return 0
	}
	return p.cmd.Process.Pid
}

// stop sends SIGTERM, then SIGKILL after stopGrace, and waits until the
// process is reaped. Safe on a nil or exited proc.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return
	case <-time.After(stopGrace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// errExited says a component is gone, with the end of its log.
func (p *proc) errExited() error {
	return fmt.Errorf("%s exited (%s); its log ends:\n%s", p.name, p.cmd.ProcessState, tailFile(p.logPath, 20))
}

// poll calls check every interval until it returns nil, ctx ends, or one
// of the watched processes exits; the error names what was awaited and
// check's last error.
func poll(ctx context.Context, what string, interval time.Duration, check func(context.Context) error, watch ...*proc) error {
	var last error
	for {
		if last = check(ctx); last == nil {
			return nil
		}
		for _, p := range watch {
			if !p.running() {
				return fmt.Errorf("%s: %w", what, p.errExited())
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %w)", what, ctx.Err(), last)
		case <-time.After(interval):
		}
	}
}

// tailFile returns the last n lines of a file, or why it cannot.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// errNotYet marks a readiness check that should be retried.
var errNotYet = errors.New("not yet")
