package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Bounds of the range Pick draws from: above the ports of kube-apiserver
// (6443), etcd (2379-2380), the kubelet (10248-10259) and the test
// registry, and below the ephemeral range (32768 on Linux unless
// configured lower; see ephemeralLow).
const (
	low  = 20000
	high = 32768
)

// attempts is how many random ports Pick tries before giving up.
const attempts = 100

// Pick returns a port on 127.0.0.1 that is free now and below the
// kernel's ephemeral port range.
func Pick() (int, error) {
	hi := min(high, ephemeralLow())
	if hi <= low {
		return 0, fmt.Errorf("free port: the ephemeral port range starts at %d, below %d: no port is safe from it", hi, low)
	}
	var last error
	for range attempts {
		port := low + rand.IntN(hi-low)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		return port, nil
	}
	return 0, fmt.Errorf("free port: %d ports in [%d, %d) taken, the last: %w", attempts, low, hi, last)
}

// Must is Pick for a test: it fails t when no port is found.
func Must(t testing.TB) int {
	t.Helper()
	port, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// ephemeralLow returns the first port of the kernel's ephemeral range, or
// high when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return high
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return high
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil || n <= 0 {
		return high
	}
	return n
}
