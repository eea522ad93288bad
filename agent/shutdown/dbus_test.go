package shutdown

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/minikubelet/minikubelet/test/dbustest"
)

// fakeLogind serves logind's manager on a real bus: properties, Inhibit
// (the write end of a pipe, as logind hands out the write end of a FIFO)
// and, as systemd, KillUnit.
type fakeLogind struct {
	mu        sync.Mutex
	inhibits  [][]string
	readEnds  []*os.File
	writeEnds []*os.File
	killUnits [][]any
}

func (f *fakeLogind) get(iface, name string) (dbus.Variant, *dbus.Error) {
	switch iface + "." + name {
	case logindIface + ".InhibitDelayMaxUSec":
		return dbus.MakeVariant(uint64(7 * time.Second / time.Microsecond)), nil
	case logindIface + ".PreparingForShutdown":
		return dbus.MakeVariant(true), nil
	}
	return dbus.Variant{}, dbus.MakeFailedError(errors.New("no such property"))
}

func (f *fakeLogind) inhibit(what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inhibits = append(f.inhibits, []string{what, who, why, mode})
	f.readEnds = append(f.readEnds, r)
	f.writeEnds = append(f.writeEnds, w)
	return dbus.UnixFD(w.Fd()), nil
}

func (f *fakeLogind) killUnit(unit, who string, signal int32) *dbus.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killUnits = append(f.killUnits, []any{unit, who, signal})
	return nil
}

// The D-Bus client against a real dbus-daemon: it reads logind's
// properties, gets an inhibitor lock as a file descriptor whose close
// logind sees, makes systemd reload logind, receives logind's
// PrepareForShutdown in order and nobody else's, and notices when the bus
// goes away.
func TestBusConn(t *testing.T) {
	d := dbustest.StartDaemon(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	server := d.Connect(t)
	f := &fakeLogind{}
	for _, e := range []struct {
		path  dbus.ObjectPath
		iface string
		table map[string]any
	}{
		{logindPath, logindIface, map[string]any{"Inhibit": f.inhibit}},
		{logindPath, "org.freedesktop.DBus.Properties", map[string]any{"Get": f.get}},
		{systemdPath, systemdIface, map[string]any{"KillUnit": f.killUnit}},
	} {
		if err := server.ExportMethodTable(e.table, e.path, e.iface); err != nil {
			t.Fatal(err)
		}
	}

	b, err := dialBus(ctx, d.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// Before logind is on the bus: a clear error, not a hang.
	if _, err := b.InhibitDelayMax(ctx); err == nil {
		t.Error("InhibitDelayMax without logind on the bus succeeded")
	}
	for _, name := range []string{logindName, systemdName} {
		if reply, err := server.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("own %s: %v %v", name, reply, err)
		}
	}

	if got, err := b.InhibitDelayMax(ctx); err != nil || got != 7*time.Second {
		t.Errorf("InhibitDelayMax = %v, %v; want 7s", got, err)
	}
	if got, err := b.PreparingForShutdown(ctx); err != nil || !got {
		t.Errorf("PreparingForShutdown = %v, %v; want true", got, err)
	}

	lock, err := b.Inhibit(ctx, inhibitWhat, inhibitWho, inhibitWhy, inhibitMode)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if len(f.inhibits) != 1 || f.inhibits[0][0] != "shutdown" || f.inhibits[0][1] != "minikubelet" || f.inhibits[0][3] != "delay" {
		t.Errorf("Inhibit called with %q", f.inhibits)
	}
	// Logind keeps only the read end: the lock holds while the agent's
	// copy of the write end is open.
	f.writeEnds[0].Close()
	readEnd := f.readEnds[0]
	f.mu.Unlock()
	released := make(chan error, 1)
	go func() {
		_, err := readEnd.Read(make([]byte, 1))
		released <- err
	}()
	select {
	case err := <-released:
		t.Fatalf("the lock was released before Close: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-released:
		if !errors.Is(err, io.EOF) {
			t.Errorf("logind's end read %v after Close, want EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("logind's end did not see the lock released")
	}

	if err := b.ReloadLogind(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if len(f.killUnits) != 1 || f.killUnits[0][0] != "systemd-logind.service" || f.killUnits[0][1] != "all" || f.killUnits[0][2] != int32(syscall.SIGHUP) {
		t.Errorf("KillUnit called with %v", f.killUnits)
	}
	f.mu.Unlock()

	// A PrepareForShutdown from anyone but logind is not listened to.
	stranger := d.Connect(t)
	if err := stranger.Emit(logindPath, prepareForShutdown, true); err != nil {
		t.Fatal(err)
	}
	if err := stranger.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.Peer.Ping", 0).Err; err != nil {
		t.Fatal(err) // the daemon has routed the stranger's signal
	}
	for _, v := range []bool{false, true, false} {
		if err := server.Emit(logindPath, prepareForShutdown, v); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []bool{false, true, false} {
		got, err := b.NextPrepareForShutdown(ctx)
		if err != nil || got != want {
			t.Fatalf("signal %d: %v, %v; want %v", i, got, err, want)
		}
	}

	d.Kill()
	if _, err := b.NextPrepareForShutdown(ctx); !errors.Is(err, errConnectionLost) {
		t.Errorf("after the bus died: %v, want %v", err, errConnectionLost)
	}
}

// Without a bus there is an error at once.
func TestDialBusFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := dialBus(ctx, "unix:path="+t.TempDir()+"/none"); err == nil {
		t.Fatal("dial of a missing socket succeeded")
	}
}
