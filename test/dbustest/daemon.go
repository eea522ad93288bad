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
	// Address is the bus's D-Bus address, for DBUS_SYSTEM_BUS_ADDRESS.
	Address string
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
	sock := filepath.Join(dir, "bus.sock")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, sock), 0o644); err != nil {
		t.Fatal(err)
	}
	d := &Daemon{exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	d.cmd.Stderr = os.Stderr
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("start dbus-daemon: %v", err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(d.Kill)

	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- strings.TrimSpace(line)
	}()
	select {
	case d.Address = <-lines:
	case <-time.After(10 * time.Second):
		t.Fatal("dbus-daemon printed no address within 10s")
	}
	if d.Address == "" {
		t.Fatal("dbus-daemon exited without printing its address")
	}
	return d
}

// PID is the daemon's process ID.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Kill SIGKILLs the daemon, ending every connection, and waits for it.
// Idempotent.
func (d *Daemon) Kill() {
	_ = d.cmd.Process.Kill()
	<-d.exited
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
