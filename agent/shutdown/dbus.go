package shutdown

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

// D-Bus names of logind's and systemd's managers.
const (
	logindName   = "org.freedesktop.login1"
	logindPath   = dbus.ObjectPath("/org/freedesktop/login1")
	logindIface  = "org.freedesktop.login1.Manager"
	systemdName  = "org.freedesktop.systemd1"
	systemdPath  = dbus.ObjectPath("/org/freedesktop/systemd1")
	systemdIface = "org.freedesktop.systemd1.Manager"
	logindUnit   = "systemd-logind.service"

	prepareForShutdown = logindIface + ".PrepareForShutdown"

	// defaultSystemBusAddress is where the system bus listens when
	// DBUS_SYSTEM_BUS_ADDRESS does not say otherwise.
	defaultSystemBusAddress = "unix:path=/var/run/dbus/system_bus_socket"
	// callTimeout bounds one method call, as D-Bus's default reply timeout.
	callTimeout = 25 * time.Second
	// signalsCap buffers signals between godbus and NextPrepareForShutdown;
	// godbus queues more behind it, in order.
	signalsCap = 8
)

// errConnectionLost is NextPrepareForShutdown's error once the bus
// connection is gone.
var errConnectionLost = errors.New("the D-Bus connection was lost")

// busConn is logind over one private connection to the system bus.
type busConn struct {
	conn *dbus.Conn
	// signals receives the signals routed to the connection, in order:
	// written by godbus's sequential handler, closed by godbus when the
	// connection ends, read by NextPrepareForShutdown.
	signals chan *dbus.Signal
}

var _ logind = (*busConn)(nil)

// dialBus connects to the system bus at address (see Config.BusAddress)
// and subscribes to logind's PrepareForShutdown. The connection is closed
// when ctx ends.
func dialBus(ctx context.Context, address string) (*busConn, error) {
	if address == "" {
		address = os.Getenv("DBUS_SYSTEM_BUS_ADDRESS")
	}
	if address == "" {
		address = defaultSystemBusAddress
	}
	conn, err := dbus.Connect(address, dbus.WithContext(ctx), dbus.WithSignalHandler(dbus.NewSequentialSignalHandler()))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", address, err)
	}
	if !conn.SupportsUnixFDs() {
		_ = conn.Close()
		return nil, fmt.Errorf("the bus at %s cannot pass file descriptors, which logind's inhibitor locks are", address)
	}
	b := &busConn{conn: conn, signals: make(chan *dbus.Signal, signalsCap)}
	conn.Signal(b.signals)
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err = conn.AddMatchSignalContext(callCtx,
		dbus.WithMatchSender(logindName),
		dbus.WithMatchObjectPath(logindPath),
		dbus.WithMatchInterface(logindIface),
		dbus.WithMatchMember("PrepareForShutdown"))
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("subscribe to logind's PrepareForShutdown on %s: %w", address, err)
	}
	return b, nil
}

func (b *busConn) call(ctx context.Context, name string, path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return b.conn.Object(name, path).CallWithContext(ctx, method, 0, args...)
}

// property stores the logind manager's property name into v.
func (b *busConn) property(ctx context.Context, name string, v any) error {
	var variant dbus.Variant
	if err := b.call(ctx, logindName, logindPath, "org.freedesktop.DBus.Properties.Get", logindIface, name).Store(&variant); err != nil {
		return fmt.Errorf("read logind's %s: %w", name, err)
	}
	if err := variant.Store(v); err != nil {
		return fmt.Errorf("read logind's %s: %w", name, err)
	}
	return nil
}

func (b *busConn) InhibitDelayMax(ctx context.Context) (time.Duration, error) {
	var usec uint64
	if err := b.property(ctx, "InhibitDelayMaxUSec", &usec); err != nil {
		return 0, err
	}
	if usec > math.MaxInt64/uint64(time.Microsecond) {
		return time.Duration(math.MaxInt64), nil // "infinity"
	}
	return time.Duration(usec) * time.Microsecond, nil
}

func (b *busConn) PreparingForShutdown(ctx context.Context) (bool, error) {
	var preparing bool
	err := b.property(ctx, "PreparingForShutdown", &preparing)
	return preparing, err
}

func (b *busConn) Inhibit(ctx context.Context, what, who, why, mode string) (io.Closer, error) {
	var fd dbus.UnixFD
	if err := b.call(ctx, logindName, logindPath, logindIface+".Inhibit", what, who, why, mode).Store(&fd); err != nil {
		return nil, fmt.Errorf("logind Inhibit: %w", err)
	}
	if fd < 0 {
		return nil, fmt.Errorf("logind Inhibit: got file descriptor %d", fd)
	}
	return os.NewFile(uintptr(fd), "logind-inhibitor"), nil
}

// ReloadLogind asks systemd to send logind SIGHUP, as the kubelet does.
func (b *busConn) ReloadLogind(ctx context.Context) error {
	if err := b.call(ctx, systemdName, systemdPath, systemdIface+".KillUnit", logindUnit, "all", int32(syscall.SIGHUP)).Err; err != nil {
		return fmt.Errorf("systemd KillUnit %s SIGHUP: %w", logindUnit, err)
	}
	return nil
}

func (b *busConn) NextPrepareForShutdown(ctx context.Context) (bool, error) {
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case s, ok := <-b.signals:
			if !ok {
				return false, errConnectionLost
			}
			if s.Name != prepareForShutdown || s.Path != logindPath || len(s.Body) != 1 {
				continue // the bus's own signals (NameAcquired, ...)
			}
			if active, ok := s.Body[0].(bool); ok {
				return active, nil
			}
		}
	}
}

func (b *busConn) Close() error { return b.conn.Close() }
