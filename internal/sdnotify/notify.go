package sdnotify

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Environment variables the service manager sets.
const (
	EnvSocket      = "NOTIFY_SOCKET"
	EnvWatchdogUS  = "WATCHDOG_USEC"
	EnvWatchdogPID = "WATCHDOG_PID"
)

// Notifier sends notifications to the service manager. The zero value, and
// a Notifier made where $NOTIFY_SOCKET is unset, sends nothing. Its methods
// are safe for concurrent use.
type Notifier struct {
	// addr is the manager's socket; nil when nobody listens.
	addr *net.UnixAddr
	// watchdog is the manager's watchdog timeout; 0 for none.
	watchdog time.Duration
}

// FromEnv returns the Notifier the environment describes. getenv is
// os.Getenv in a real process and pid the process's own id: a watchdog
// whose $WATCHDOG_PID names another process is not this process's. An
// error means the manager set a variable this package cannot use.
func FromEnv(getenv func(string) string, pid int) (*Notifier, error) {
	n := &Notifier{}
	socket := getenv(EnvSocket)
	if socket == "" {
		return n, nil
	}
	if !strings.HasPrefix(socket, "/") && !strings.HasPrefix(socket, "@") {
		return nil, fmt.Errorf("%s=%q: only a unix socket path or an abstract name (@name) is supported", EnvSocket, socket)
	}
	// The net package maps a leading '@' to the abstract namespace's NUL.
	n.addr = &net.UnixAddr{Name: socket, Net: "unixgram"}

	usec := getenv(EnvWatchdogUS)
	if usec == "" {
		return n, nil
	}
	if p := getenv(EnvWatchdogPID); p != "" {
		wpid, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: not a process id", EnvWatchdogPID, p)
		}
		if wpid != pid {
			return n, nil
		}
	}
	us, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || us == 0 {
		return nil, fmt.Errorf("%s=%q: want a positive number of microseconds", EnvWatchdogUS, usec)
	}
	n.watchdog = time.Duration(us) * time.Microsecond
	return n, nil
}

// Enabled reports whether a service manager listens.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != nil }

// WatchdogInterval returns the manager's watchdog timeout for this process:
// WATCHDOG=1 must arrive at least this often (systemd advises every half of
// it). 0 means no watchdog.
func (n *Notifier) WatchdogInterval() time.Duration {
	if !n.Enabled() {
		return 0
	}
	return n.watchdog
}

// Notify sends states, such as "READY=1" or "STATUS=Running 3 pods", in one
// datagram. A state must not contain a newline. It returns at once when
// nobody listens; otherwise a full socket buffer blocks it until ctx's
// deadline, if any.
func (n *Notifier) Notify(ctx context.Context, states ...string) error {
	if !n.Enabled() || len(states) == 0 {
		return nil
	}
	for _, s := range states {
		if strings.ContainsRune(s, '\n') || !strings.Contains(s, "=") {
			return fmt.Errorf("notify: %q is not one KEY=VALUE line", s)
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unixgram", n.addr.Name)
	if err != nil {
		return fmt.Errorf("notify %s: %w", n.addr.Name, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		if err := conn.SetWriteDeadline(deadline); err != nil {
			return fmt.Errorf("notify %s: %w", n.addr.Name, err)
		}
	}
	msg := strings.Join(states, "\n") + "\n"
	if _, err := conn.Write([]byte(msg)); err != nil {
		return fmt.Errorf("notify %s: %w", n.addr.Name, err)
	}
	return nil
}
