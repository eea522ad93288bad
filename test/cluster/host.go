package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// hostLockPath serialises clusters on one host: kube-proxy owns the
// host's KUBE-* iptables chains, so two clusters at once would overwrite
// each other's service rules.
const hostLockPath = "/run/lock/minikubelet-cluster.lock"

// lockHost takes the host-wide cluster lock, waiting for another cluster
// to stop until ctx ends. The returned func releases it; the kernel also
// releases it when the process dies.
func lockHost(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(hostLockPath), 0o755); err != nil {
		return nil, fmt.Errorf("cluster lock dir: %w", err)
	}
	f, err := os.OpenFile(hostLockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cluster lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("cluster lock %s: %w", hostLockPath, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("another test cluster runs on this host (lock %s held): %w", hostLockPath, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// primaryIP is the IPv4 address the host sends from towards the default
// route: connecting a UDP socket sends nothing, it only picks the route.
func primaryIP() (net.IP, error) {
	conn, err := net.Dial("udp4", "198.51.100.1:9") // TEST-NET-2: routed by the default route
	if err != nil {
		return nil, fmt.Errorf("find the host's primary IP (is there a default route?): %w", err)
	}
	defer conn.Close()
	addr, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok || addr.IP.IsLoopback() || addr.IP.IsUnspecified() {
		return nil, fmt.Errorf("find the host's primary IP: got %v", conn.LocalAddr())
	}
	return addr.IP.To4(), nil
}

// freePort returns a TCP port free on ip right now.
func freePort(ip net.IP) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, fmt.Errorf("free port on %s: %w", ip, err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("free port: not a TCP address")
	}
	return addr.Port, nil
}

// freeUDPAndTCPPort returns a port free for both TCP and UDP on ip (a DNS
// server listens on both).
func freeUDPAndTCPPort(ip net.IP) (int, error) {
	for range 20 {
		port, err := freePort(ip)
		if err != nil {
			return 0, err
		}
		c, err := net.ListenPacket("udp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
		if err == nil {
			return port, c.Close()
		}
	}
	return 0, fmt.Errorf("no port free for both TCP and UDP on %s", ip)
}

// tunables are the kernel settings the kubelet sets (as every kubelet
// does unless protectKernelDefaults). Stop puts back what was there.
// (IPv4 forwarding, which the cluster turns on, is not among them: the CNI
// bridge plugin of every bed containerd turns it on with its first pod.)
var tunables = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// readTunables reads the current value of every tunable.
func readTunables() (map[string]string, error) {
	out := make(map[string]string, len(tunables))
	for _, name := range tunables {
		b, err := os.ReadFile(filepath.Join("/proc/sys", name))
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", name, err)
		}
		out[name] = strings.TrimSpace(string(b))
	}
	return out, nil
}

// setTunable writes one sysctl.
func setTunable(name, value string) error {
	if err := os.WriteFile(filepath.Join("/proc/sys", name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("set sysctl %s=%s: %w", name, value, err)
	}
	return nil
}

// restoreTunables writes back every saved value that differs now.
func restoreTunables(saved map[string]string) error {
	now, err := readTunables()
	if err != nil {
		return err
	}
	var errs []error
	for name, v := range saved {
		if now[name] != v {
			errs = append(errs, setTunable(name, v))
		}
	}
	return errors.Join(errs...)
}
