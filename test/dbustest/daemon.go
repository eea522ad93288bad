package dbustest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// busConfig is a bus on one socket that lets every local user own any name
// and send anything. It has no <type>system</type>: that only makes
// dbus-daemon try to raise its file limit, which needs CAP_SYS_RESOURCE.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
`

// Daemon is a running private dbus-daemon.
type Daemon struct {
	// Address is the bus's D-Bus address, for DBUS_SYSTEM_BUS_ADDRESS. It
	// stays the same across Restart.
	Address string
	bin     string
	sock    string
	conf    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartDaemon starts a dbus-daemon for t, or skips t when dbus-daemon is not
// installed and MINIKUBELET_E2E is not "required". The daemon is killed
// when t ends.
func StartDaemon(t testing.TB) *Daemon {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		if os.Getenv("MINIKUBELET_E2E") == "required" {
			t.Fatalf("dbus-daemon is not installed (test/scripts/prepare.sh installs it): %v", err)
		}
		t.Skipf("dbus-daemon is not installed: %v", err)
	}
	dir := t.TempDir()
	d := &Daemon{
		bin:     bin,
		sock:    filepath.Join(dir, "bus.sock"),
		conf:    filepath.Join(dir, "bus.conf"),
		logPath: filepath.Join(dir, "dbus-daemon.log"),
	}
	if err := os.WriteFile(d.conf, fmt.Appendf(nil, busConfig, d.sock), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Kill()
		if t.Failed() {
			if b, err := os.ReadFile(d.logPath); err == nil && len(b) > 0 {
				t.Logf("dbus-daemon log:\n%s", b)
			}
		}
	})
	d.start(t)
	return d
}

// start runs the daemon on d's socket and waits until it listens.
func (d *Daemon) start(t testing.TB) {
	t.Helper()
	log, err := os.OpenFile(d.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(d.bin, "--config-file="+d.conf, "--nofork", "--nopidfile", "--print-address=1")
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	exited := make(chan struct{})
	d.cmd, d.exited = cmd, exited
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
		_ = cmd.Wait()
		close(exited)
	}()
	var addr string
	select {
	case addr = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon printed no address within 10s")
	}
	if addr == "" {
		b, _ := os.ReadFile(d.logPath)
		t.Fatalf("dbus-daemon exited without printing its address:\n%s", b)
	}
	// The printed address names the daemon's GUID, which clients check:
	// the address must stay valid across Restart, so it names the socket
	// only.
	d.Address = "unix:path=" + d.sock
}

// PID is the daemon's process ID.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Kill SIGKILLs the daemon, ending every connection, and waits for it.
// Idempotent.
func (d *Daemon) Kill() {
	if d.cmd == nil {
		return // never started
	}
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// Restart kills the daemon and starts a new one on the same socket, as
// when the system bus is restarted: every client loses its connection.
func (d *Daemon) Restart(t testing.TB) {
	t.Helper()
	d.Kill()
	if err := os.Remove(d.sock); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	d.start(t)
}

// Connect opens a connection to the bus that is closed when t ends.
func (d *Daemon) Connect(t testing.TB) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(d.Address)
	if err != nil {
		t.Fatalf("connect to %s: %v", d.Address, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// WaitName waits until name has an owner on the bus.
func WaitName(ctx context.Context, conn *dbus.Conn, name string) error {
	for {
		var has bool
		err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has)
		if err == nil && has {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no owner of %s on the bus: %w", name, errors.Join(ctx.Err(), err))
		case <-time.After(20 * time.Millisecond):
		}
	}
}
