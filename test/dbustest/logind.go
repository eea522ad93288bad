package dbustest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	logindName  = "org.freedesktop.login1"
	logindPath  = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface = "org.freedesktop.login1.Manager"
)

// logindBinaries are where Debian installs systemd-logind.
var logindBinaries = []string{"/lib/systemd/systemd-logind", "/usr/lib/systemd/systemd-logind"}

// Logind is a running systemd-logind.
type Logind struct {
	// EtcSystemd is what logind sees as /etc/systemd; its drop-ins go to
	// EtcSystemd/logind.conf.d.
	EtcSystemd string
	bin        string
	bus        *Daemon
	t          testing.TB
	logPath    string

	mu     sync.Mutex
	conn   *dbus.Conn
	cmd    *exec.Cmd
	exited chan struct{}
}

// logindConf keeps the test's logind from touching the host's consoles
// (virtual terminals) and from acting on its keys and switches.
const logindConf = `[Login]
NAutoVTs=0
ReserveVT=0
HandlePowerKey=ignore
HandleRebootKey=ignore
HandleSuspendKey=ignore
HandleHibernateKey=ignore
HandleLidSwitch=ignore
HandleLidSwitchExternalPower=ignore
HandleLidSwitchDocked=ignore
KillUserProcesses=no
`

// StartLogind runs systemd-logind on d for t, in a mount namespace where
// /run/systemd is a fresh tmpfs and /etc/systemd is a directory of t's
// (holding a logind.conf that keeps logind off the host's consoles, and an
// empty logind.conf.d), and waits until it owns org.freedesktop.login1. It
// skips t when systemd-logind is not installed and MINIKUBELET_E2E is not
// "required". The process is killed when t ends.
func StartLogind(t testing.TB, d *Daemon) *Logind {
	t.Helper()
	var bin string
	for _, b := range logindBinaries {
		if _, err := os.Stat(b); err == nil {
			bin = b
			break
		}
	}
	if bin == "" {
		if os.Getenv("MINIKUBELET_E2E") == "required" {
			t.Fatalf("systemd-logind is not installed at %v (test/scripts/prepare.sh installs systemd)", logindBinaries)
		}
		t.Skipf("systemd-logind is not installed at %v", logindBinaries)
	}
	dir := t.TempDir()
	l := &Logind{
		bin:        bin,
		bus:        d,
		t:          t,
		EtcSystemd: filepath.Join(dir, "etc-systemd"),
		logPath:    filepath.Join(dir, "logind.log"),
	}
	if err := os.MkdirAll(filepath.Join(l.EtcSystemd, "logind.conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.EtcSystemd, "logind.conf"), []byte(logindConf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		l.kill()
		if t.Failed() {
			t.Logf("systemd-logind log:\n%s", l.Log())
		}
	})
	l.start(t)
	return l
}

// start runs logind and waits until it is on the bus.
func (l *Logind) start(t testing.TB) {
	t.Helper()
	log, err := os.OpenFile(l.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	// unshare execs sh, which execs logind: the PID is logind's. The
	// namespace ends with it.
	const script = `mkdir -p /run/systemd && mount -t tmpfs -o mode=0755 tmpfs /run/systemd && mount --bind "$1" /etc/systemd && exec "$2"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", l.EtcSystemd, l.bin)
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+l.bus.Address, "SYSTEMD_LOG_LEVEL=debug")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start systemd-logind: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	l.mu.Lock()
	l.cmd, l.exited = cmd, exited
	l.mu.Unlock()
	l.WaitOnBus(t)
}

// kill SIGKILLs logind, if it runs, and waits for it.
func (l *Logind) kill() {
	l.mu.Lock()
	cmd, exited := l.cmd, l.exited
	l.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart kills logind and starts it again with the same /etc/systemd.
// Logind does not connect to a restarted bus by itself: restart it after
// Daemon.Restart. Its inhibitor locks are gone with its /run/systemd.
func (l *Logind) Restart(t testing.TB) {
	t.Helper()
	l.kill()
	l.start(t)
}

// WaitOnBus waits until logind owns its name on the bus.
func (l *Logind) WaitOnBus(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitName(ctx, l.client(), logindName); err != nil {
		t.Fatalf("systemd-logind is not on the bus: %v; its log:\n%s", err, l.Log())
	}
}

// client is a connection to the bus, made again after a restart of it.
func (l *Logind) client() *dbus.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil || !l.conn.Connected() {
		l.conn = l.bus.Connect(l.t)
	}
	return l.conn
}

// PID is logind's process ID.
func (l *Logind) PID() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmd.Process.Pid
}

func (l *Logind) object() dbus.BusObject { return l.client().Object(logindName, logindPath) }

// PowerOff asks logind to power the machine off, as `systemctl poweroff`
// does: logind sends PrepareForShutdown(true), waits for the delay locks
// (at most InhibitDelayMaxSec), then asks systemd to start
// poweroff.target, which ServeSystemd only records.
func (l *Logind) PowerOff(ctx context.Context) error {
	if err := l.object().CallWithContext(ctx, logindIface+".PowerOff", 0, false).Err; err != nil {
		return fmt.Errorf("logind PowerOff: %w", err)
	}
	return nil
}

// InhibitDelayMax is logind's InhibitDelayMaxUSec.
func (l *Logind) InhibitDelayMax(ctx context.Context) (time.Duration, error) {
	var v dbus.Variant
	if err := l.object().CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, logindIface, "InhibitDelayMaxUSec").Store(&v); err != nil {
		return 0, fmt.Errorf("read InhibitDelayMaxUSec: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("InhibitDelayMaxUSec is %s, not a uint64", v.Signature())
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// Inhibitor is one entry of logind's ListInhibitors.
type Inhibitor struct {
	What, Who, Why, Mode string
	UID, PID             uint32
}

// Inhibitors lists logind's inhibitor locks.
func (l *Logind) Inhibitors(ctx context.Context) ([]Inhibitor, error) {
	var list []Inhibitor
	if err := l.object().CallWithContext(ctx, logindIface+".ListInhibitors", 0).Store(&list); err != nil {
		return nil, fmt.Errorf("logind ListInhibitors: %w", err)
	}
	return list, nil
}

// Log returns what logind wrote so far.
func (l *Logind) Log() string {
	b, _ := os.ReadFile(l.logPath)
	return string(b)
}

// Systemd stands in for PID 1's systemd on the bus, for logind.
type Systemd struct {
	conn   *dbus.Conn
	logind *Logind

	mu     sync.Mutex
	starts []UnitStart
	kills  []string
	jobs   int
}

// UnitStart is a StartUnit logind sent: the moment it went on with a
// shutdown.
type UnitStart struct {
	Unit, Mode string
	Job        dbus.ObjectPath
	At         time.Time
}

const (
	systemdName  = "org.freedesktop.systemd1"
	systemdPath  = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdIface = "org.freedesktop.systemd1.Manager"
)

// ServeSystemd owns org.freedesktop.systemd1 on d for t, relaying the
// reloads of logind to l. After a restart of the bus, serve it again.
func ServeSystemd(t testing.TB, d *Daemon, l *Logind) *Systemd {
	t.Helper()
	s := &Systemd{conn: d.Connect(t), logind: l}
	if err := s.conn.ExportMethodTable(map[string]any{
		"StartUnit": s.startUnit,
		"KillUnit":  s.killUnit,
		"Subscribe": func() *dbus.Error { return nil },
	}, systemdPath, systemdIface); err != nil {
		t.Fatal(err)
	}
	// logind checks that the target of a shutdown is loaded.
	for _, unit := range []string{"poweroff_2etarget", "reboot_2etarget", "halt_2etarget"} {
		if err := s.conn.ExportMethodTable(map[string]any{"Get": unitProperty}, systemdPath+"/unit/"+dbus.ObjectPath(unit), "org.freedesktop.DBus.Properties"); err != nil {
			t.Fatal(err)
		}
	}
	reply, err := s.conn.RequestName(systemdName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: reply %v, %v", systemdName, reply, err)
	}
	return s
}

func unitProperty(iface, name string) (dbus.Variant, *dbus.Error) {
	if iface == "org.freedesktop.systemd1.Unit" && name == "LoadState" {
		return dbus.MakeVariant("loaded"), nil
	}
	return dbus.Variant{}, dbus.MakeFailedError(fmt.Errorf("the stand-in has no property %s.%s", iface, name))
}

func (s *Systemd) startUnit(unit, mode string) (dbus.ObjectPath, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs++
	job := dbus.ObjectPath(fmt.Sprintf("%s/job/%d", systemdPath, s.jobs))
	s.starts = append(s.starts, UnitStart{Unit: unit, Mode: mode, Job: job, At: time.Now()})
	return job, nil
}

func (s *Systemd) killUnit(unit, who string, signal int32) *dbus.Error {
	s.mu.Lock()
	s.kills = append(s.kills, fmt.Sprintf("%s %s %d", unit, who, signal))
	s.mu.Unlock()
	if unit != "systemd-logind.service" {
		return dbus.MakeFailedError(fmt.Errorf("the stand-in only knows systemd-logind.service, not %s", unit))
	}
	if err := syscall.Kill(s.logind.PID(), syscall.Signal(signal)); err != nil {
		return dbus.MakeFailedError(err)
	}
	return nil
}

// Starts returns the StartUnit calls received so far.
func (s *Systemd) Starts() []UnitStart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]UnitStart(nil), s.starts...)
}

// Kills returns the KillUnit calls received so far, as "unit who signal".
func (s *Systemd) Kills() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.kills...)
}

// EndJob ends the job of StartUnit call i with result ("canceled",
// "failed", "done"): logind then sends PrepareForShutdown(false), as after a
// shutdown that did not happen.
func (s *Systemd) EndJob(i int, result string) error {
	s.mu.Lock()
	st := s.starts[i]
	s.mu.Unlock()
	var id uint32
	if _, err := fmt.Sscanf(string(st.Job), string(systemdPath)+"/job/%d", &id); err != nil {
		return fmt.Errorf("job %s: %w", st.Job, err)
	}
	return s.conn.Emit(systemdPath, systemdIface+".JobRemoved", id, st.Job, st.Unit, result)
}
