package freeport

import (
	"net"
	"strconv"
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
