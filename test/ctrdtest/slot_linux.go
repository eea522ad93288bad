package ctrdtest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultSlotDir is where instances reserve their network slot. It lives on
// /run because a slot guards a bridge, and bridges do not survive a reboot.
const DefaultSlotDir = "/run/minikubelet-bed/slots"

// maxSlot bounds N in 10.88.N.0/24.
const maxSlot = 254

// reserveSlot picks the lowest N whose slot file is free (or names an
// instance dir that no longer exists), whose bridge does not exist and
// whose subnet no host route overlaps, and records dir in the slot file.
// Reservations are serialised by an flock on slotDir/.lock, so concurrent
// processes never get the same N.
func reserveSlot(slotDir, dir string) (int, string, error) {
	if err := os.MkdirAll(slotDir, 0o755); err != nil {
		return 0, "", fmt.Errorf("create slot dir %q: %w", slotDir, err)
	}
	unlock, err := lockFile(filepath.Join(slotDir, ".lock"))
	if err != nil {
		return 0, "", err
	}
	defer unlock()
	routes, err := hostRoutes()
	if err != nil {
		return 0, "", err
	}
	for n := 1; n <= maxSlot; n++ {
		file := filepath.Join(slotDir, strconv.Itoa(n))
		if !slotFree(file, n, routes) {
			continue
		}
		if err := os.WriteFile(file, []byte(dir+"\n"), 0o644); err != nil {
			return 0, "", fmt.Errorf("write slot file %q: %w", file, err)
		}
		return n, file, nil
	}
	return 0, "", fmt.Errorf("no free network slot in %q (1..%d all taken; run bedclean)", slotDir, maxSlot)
}

// slotFree reports whether slot n can be taken.
func slotFree(file string, n int, routes []ipv4Route) bool {
	if owner, err := os.ReadFile(file); err == nil {
		d := strings.TrimSpace(string(owner))
		if _, err := os.Stat(filepath.Join(d, stateFile)); err == nil {
			return false // a live (or not yet cleaned) instance holds it
		}
	}
	if _, err := os.Lstat(filepath.Join("/sys/class/net", "mkbed"+strconv.Itoa(n))); err == nil {
		return false
	}
	subnet, mask := uint32(10)<<24|uint32(88)<<16|uint32(n)<<8, uint32(0xffffff00)
	for _, r := range routes {
		if m := r.mask & mask; r.dst&m == subnet&m { // equal under the shorter prefix
			return false
		}
	}
	return true
}

// releaseSlot removes the slot file if it still names dir.
func releaseSlot(file, dir string) error {
	if file == "" {
		return nil
	}
	owner, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read slot file %q: %w", file, err)
	}
	if strings.TrimSpace(string(owner)) != dir {
		return nil
	}
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove slot file %q: %w", file, err)
	}
	return nil
}

// lockFile takes an exclusive flock on path and returns its release.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %q: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %q: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}

// ipv4Route is one row of /proc/net/route in host byte order.
type ipv4Route struct{ dst, mask uint32 }

// hostRoutes reads the IPv4 routing table (default routes excluded).
func hostRoutes() ([]ipv4Route, error) {
	const path = "/proc/net/route"
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read-only
	var out []ipv4Route
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		dst, err1 := parseHexLE(fields[1])
		mask, err2 := parseHexLE(fields[7])
		if err1 != nil || err2 != nil || mask == 0 {
			continue
		}
		out = append(out, ipv4Route{dst: dst, mask: mask})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %q: %w", path, err)
	}
	return out, nil
}

// parseHexLE parses /proc/net/route's little-endian hex address.
func parseHexLE(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, err
	}
	b := uint32(v)
	return b<<24 | (b<<8)&0xff0000 | (b>>8)&0xff00 | b>>24, nil
}
