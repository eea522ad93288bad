package freeport

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A picked port is below the ephemeral range, free, and usable.
func TestPickBelowEphemeralRange(t *testing.T) {
	eph := ephemeralLow()
	for range 50 {
		port := Must(t)
		if port < low || port >= min(high, eph) {
			t.Fatalf("port %d outside [%d, %d)", port, low, min(high, eph))
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d picked but not free: %v", port, err)
		}
		_ = l.Close()
	}
}

// A port taken by a listener is never picked.
func TestPickSkipsTakenPorts(t *testing.T) {
	var held []net.Listener
	taken := map[int]bool{}
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for range 200 {
		port := Must(t)
		if taken[port] {
			t.Fatalf("port %d picked while a listener holds it", port)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		taken[port] = true
	}
}

// Pick never hands out the same port twice, even once it is free again,
// nor one another process holds.
func TestPickNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port := Must(t)
		if seen[port] {
			t.Fatalf("port %d picked twice", port)
		}
		seen[port] = true
	}
	// Another process's lock: a held lock file makes reserve refuse.
	port := low + 1
	for seen[port] {
		port++
	}
	other, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("port %d lock held elsewhere: %v", port, err)
	}
	// flock locks belong to open file descriptions: the reserve below opens
	// its own and so is refused, as another process would be.
	if err := reserve(port); !errors.Is(err, errReserved) {
		t.Errorf("reserve(%d) with its lock held elsewhere = %v, want errReserved", port, err)
	}
}
