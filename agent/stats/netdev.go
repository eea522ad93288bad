package stats

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	sysunix "golang.org/x/sys/unix"
)

// netInterface is one interface's counters from /proc/<pid>/net/dev.
type netInterface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// ignoredInterface reports the interfaces cAdvisor leaves out of a
// network's figures: loopback, and the host ends of container links.
func ignoredInterface(name string) bool {
	return name == "lo" || strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "docker")
}

// readNetDev reads a net/dev file of procfs, which describes the network
// namespace of the process it belongs to, into p.netBuf, and parses it
// (parseNetDev). p.mu must be held.
func (p *Provider) readNetDev(path string) ([]netInterface, error) {
	return p.readNetDevAt(sysunix.AT_FDCWD, path)
}

// readNetDevAt is readNetDev of the file at path relative to the
// directory dirfd.
func (p *Provider) readNetDevAt(dirfd int, path string) ([]netInterface, error) {
	b, err := readRaw(dirfd, path, &p.netBuf)
	if err != nil {
		return nil, err
	}
	return parseNetDev(path, b)
}

// sandboxProc is the process of a pod's sandbox that its network is read
// through: its /proc directory, kept open (an O_PATH descriptor, which
// holds the process's struct pid and nothing of its network namespace),
// through which net/dev is opened with no lookup of the PID and no read
// of the sandbox's cgroup.procs to find it; the file cannot be opened
// once the process is gone, even if its PID is used again.
type sandboxProc struct {
	pid   int
	dirfd int
}

// sandboxNet reads the network of the pod whose sandbox has the cgroup
// at sandbox through its process (sandboxProc), found in a walk of the
// cgroup (walk) if none is kept or the kept one is gone, and ok is false
// when no process of the cgroup has a net/dev. The process found is kept
// in p.sandboxes. p.mu must be held.
func (p *Provider) sandboxNet(sandbox string, walk func(path string, known []string, each func(pid int) bool)) (ifs []netInterface, ok bool) {
	if sp := p.sandboxes[sandbox]; sp != nil {
		if ifs, err := p.readNetDevAt(sp.dirfd, "net/dev"); err == nil {
			return ifs, true
		}
		p.forgetSandbox(sandbox)
	}
	walk(sandbox, nil, func(pid int) bool {
		dir := filepath.Join(p.cfg.ProcRoot, strconv.Itoa(pid))
		dirfd, err := openRetry(sysunix.AT_FDCWD, dir, sysunix.O_PATH|sysunix.O_DIRECTORY|sysunix.O_CLOEXEC)
		if err != nil {
			return true // gone meanwhile
		}
		if ifs, err = p.readNetDevAt(dirfd, "net/dev"); err != nil {
			_ = sysunix.Close(dirfd)
			return true
		}
		p.sandboxes[sandbox], ok = &sandboxProc{pid: pid, dirfd: dirfd}, true
		return false
	})
	return ifs, ok
}

// forgetSandbox closes what is kept of the sandbox process of the cgroup
// at sandbox. p.mu must be held.
func (p *Provider) forgetSandbox(sandbox string) {
	if sp := p.sandboxes[sandbox]; sp != nil {
		_ = sysunix.Close(sp.dirfd)
		delete(p.sandboxes, sandbox)
	}
}

func openRetry(dirfd int, path string, flags int) (int, error) {
	for {
		fd, err := sysunix.Openat(dirfd, path, flags, 0)
		if !errors.Is(err, sysunix.EINTR) {
			return fd, err
		}
	}
}

// readRaw reads the file at path (relative to the directory dirfd) into
// *buf, growing it as needed, with plain open/read/close calls: os.Open
// would register each file with the runtime's poller, a cost the stats
// reads make a hundred times a scrape.
func readRaw(dirfd int, path string, buf *[]byte) ([]byte, error) {
	fd, err := openRetry(dirfd, path, sysunix.O_RDONLY|sysunix.O_CLOEXEC)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer sysunix.Close(fd) //nolint:errcheck // read-only
	if len(*buf) == 0 {
		*buf = make([]byte, 4096)
	}
	b, n := *buf, 0
	for {
		if n == len(b) {
			b = append(b, make([]byte, len(b))...)
			*buf = b
		}
		m, err := sysunix.Read(fd, b[n:])
		if errors.Is(err, sysunix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return b[:n], nil
		}
		n += m
	}
}

// parseNetDev parses the content of a net/dev file read from path,
// leaving out ignoredInterface. Interfaces are sorted by name.
func parseNetDev(path string, b []byte) ([]netInterface, error) {
	var out []netInterface
	for line := 0; len(b) > 0; line++ {
		var text []byte
		text, b, _ = bytes.Cut(b, []byte{'\n'})
		if line < 2 {
			continue // two header lines
		}
		rawName, rest, ok := bytes.Cut(text, []byte{':'})
		if !ok {
			continue
		}
		name := string(bytes.TrimSpace(rawName))
		if ignoredInterface(name) {
			continue
		}
		var v [16]uint64
		for i := range v {
			rest = bytes.TrimLeft(rest, " \t")
			end := bytes.IndexAny(rest, " \t")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, fmt.Errorf("%s: interface %s has %d fields, want 16", path, name, i)
			}
			var err error
			if v[i], err = strconv.ParseUint(string(rest[:end]), 10, 64); err != nil {
				return nil, fmt.Errorf("%s: interface %s: %w", path, name, err)
			}
			rest = rest[end:]
		}
		// Receive: bytes packets errs drop fifo frame compressed multicast;
		// transmit: bytes packets errs drop fifo colls carrier compressed.
		out = append(out, netInterface{
			Name:    name,
			RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[8], TxPackets: v[9], TxErrors: v[10], TxDropped: v[11],
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
