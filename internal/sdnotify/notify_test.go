package sdnotify

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		wantEnabled  bool
		wantWatchdog time.Duration
		wantErr      string
	}{
		{name: "no supervisor", env: nil},
		{name: "watchdog without a socket is no use", env: map[string]string{EnvWatchdogUS: "1000000"}},
		{name: "path socket", env: map[string]string{EnvSocket: "/run/systemd/notify"}, wantEnabled: true},
		{name: "abstract socket", env: map[string]string{EnvSocket: "@/org/freedesktop/systemd1/notify/123"}, wantEnabled: true},
		{name: "watchdog for this process", env: map[string]string{EnvSocket: "/run/n", EnvWatchdogUS: "120000000", EnvWatchdogPID: "42"}, wantEnabled: true, wantWatchdog: 2 * time.Minute},
		{name: "watchdog without a pid", env: map[string]string{EnvSocket: "/run/n", EnvWatchdogUS: "500000"}, wantEnabled: true, wantWatchdog: 500 * time.Millisecond},
		{name: "watchdog for another process", env: map[string]string{EnvSocket: "/run/n", EnvWatchdogUS: "120000000", EnvWatchdogPID: "7"}, wantEnabled: true},
		{name: "relative socket", env: map[string]string{EnvSocket: "run/n"}, wantErr: "NOTIFY_SOCKET"},
		{name: "vsock", env: map[string]string{EnvSocket: "vsock:2:1234"}, wantErr: "NOTIFY_SOCKET"},
		{name: "bad watchdog", env: map[string]string{EnvSocket: "/run/n", EnvWatchdogUS: "2min"}, wantErr: "WATCHDOG_USEC"},
		{name: "zero watchdog", env: map[string]string{EnvSocket: "/run/n", EnvWatchdogUS: "0"}, wantErr: "WATCHDOG_USEC"},
		{name: "bad watchdog pid", env: map[string]string{EnvSocket: "/run/n", EnvWatchdogUS: "1", EnvWatchdogPID: "x"}, wantErr: "WATCHDOG_PID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := FromEnv(env(tt.env), 42)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n.Enabled() != tt.wantEnabled || n.WatchdogInterval() != tt.wantWatchdog {
				t.Errorf("Enabled %v WatchdogInterval %v, want %v %v", n.Enabled(), n.WatchdogInterval(), tt.wantEnabled, tt.wantWatchdog)
			}
		})
	}
}

// listen makes a unixgram socket as a service manager does.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func receive(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func TestNotifySendsOneDatagram(t *testing.T) {
	for _, socket := range []string{
		filepath.Join(t.TempDir(), "notify"),
		fmt.Sprintf("@minikubelet-sdnotify-test-%d", os.Getpid()),
	} {
		t.Run(socket, func(t *testing.T) {
			conn := listen(t, socket)
			n, err := FromEnv(env(map[string]string{EnvSocket: socket}), 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Notify(context.Background(), "READY=1", "STATUS=Running 2 pods"); err != nil {
				t.Fatal(err)
			}
			if got, want := receive(t, conn), "READY=1\nSTATUS=Running 2 pods\n"; got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestNotifyRefusesWhatIsNotOneLine(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "notify")
	listen(t, socket)
	n, _ := FromEnv(env(map[string]string{EnvSocket: socket}), 1)
	for _, bad := range []string{"STATUS=a\nREADY=1", "READY"} {
		if err := n.Notify(context.Background(), bad); err == nil {
			t.Errorf("Notify(%q) succeeded", bad)
		}
	}
}

func TestNotifyWithoutSupervisorDoesNothing(t *testing.T) {
	var zero *Notifier
	for _, n := range []*Notifier{zero, {}} {
		if err := n.Notify(context.Background(), "READY=1"); err != nil || n.Enabled() || n.WatchdogInterval() != 0 {
			t.Errorf("Notify = %v, Enabled %v, WatchdogInterval %v", err, n.Enabled(), n.WatchdogInterval())
		}
	}
}

func TestNotifyReportsAMissingSocket(t *testing.T) {
	n, _ := FromEnv(env(map[string]string{EnvSocket: filepath.Join(t.TempDir(), "gone")}), 1)
	if err := n.Notify(context.Background(), "READY=1"); err == nil {
		t.Error("Notify to a socket nobody listens on succeeded")
	}
}
