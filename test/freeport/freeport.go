package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
// kernel's ephemeral port range, and that no earlier Pick of this process
// or of another running one returned. Safe for concurrent use.
func Pick() (int, error) {
	hi := min(high, ephemeralLow())
	if hi <= low {
		return 0, fmt.Errorf("free port: the ephemeral port range starts at %d, below %d: no port is safe from it", hi, low)
	}
	var last error
	for range attempts {
		port := low + rand.IntN(hi-low)
		if err := reserve(port); err != nil {
			last = err
			continue
		}
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

// reserved are the ports this process was given: a port picked and not
// yet bound (a server about to start, or stopped to be started again on
// it) is free to the kernel, so Pick must remember it. The lock files of
// lockDir do the same across the test binaries that go test runs side by
// side; each lock is held until the process exits.
var reserved = struct {
	sync.Mutex
	ports map[int]*os.File
}{ports: map[int]*os.File{}}

// lockDir holds a lock file per port handed out by a running process.
var lockDir = filepath.Join(os.TempDir(), "minikubelet-freeport")

var errReserved = errors.New("reserved by this or another test process")

// reserve claims port for this process, or says it is another's.
func reserve(port int) error {
	reserved.Lock()
	defer reserved.Unlock()
	if _, ok := reserved.ports[port]; ok {
		return fmt.Errorf("port %d: %w", port, errReserved)
	}
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return fmt.Errorf("port lock dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("port %d lock: %w", port, err)
	}
	// The lock goes with the process (its descriptor), however it ends.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return fmt.Errorf("port %d: %w", port, errReserved)
	}
	reserved.ports[port] = f
	return nil
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
