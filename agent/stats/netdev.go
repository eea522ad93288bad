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
	b, err := readRaw(path, &p.netBuf)
	if err != nil {
		return nil, err
	}
	return parseNetDev(path, b)
}

// sandboxNetDev is the net/dev file of a pod's sandbox's process, kept
// open and read again from offset 0, at which procfs writes it afresh
// (4 us a read here, against 14 for the open, read and close of
// /proc/<pid>/net/dev, whose open makes a dentry and an inode each time
// and whose path must be found by a read of the sandbox's cgroup.procs).
// It describes the network namespace of the process as it was when
// opened, which a sandbox never changes; it also keeps that namespace
// from being freed while open, even once the sandbox is gone: so it is
// closed once its sandbox is not in a snapshot, and every kept file is
// closed once the Provider has read nothing for keepIdle FsMaxAges (see
// Run).
type sandboxNetDev struct {
	fd int
}

// sandboxNet reads the network of the pod whose sandbox has the cgroup
// at sandbox through the net/dev file kept of its process, or through the
// first process of a walk of the cgroup (walk) that has one, which is
// then kept in p.sandboxes; ok is false when none has. p.mu must be held.
func (p *Provider) sandboxNet(sandbox string, walk func(path string, known []string, each func(pid int) bool)) (ifs []netInterface, ok bool) {
	if nd := p.sandboxes[sandbox]; nd != nil {
		if b, err := preadRaw(nd.fd, &p.netBuf); err == nil {
			if ifs, err := parseNetDev(sandbox, b); err == nil {
				return ifs, true
			}
		}
		p.forgetSandbox(sandbox)
	}
	walk(sandbox, nil, func(pid int) bool {
		path := filepath.Join(p.cfg.ProcRoot, strconv.Itoa(pid), "net", "dev")
		fd, err := openRetry(sysunix.AT_FDCWD, path, sysunix.O_RDONLY|sysunix.O_CLOEXEC)
		if err != nil {
			return true // gone meanwhile
		}
		b, err := preadRaw(fd, &p.netBuf)
		if err == nil {
			ifs, err = parseNetDev(path, b)
		}
		if err != nil {
			_ = sysunix.Close(fd)
			return true
		}
		p.sandboxes[sandbox], ok = &sandboxNetDev{fd: fd}, true
		return false
	})
	return ifs, ok
}

// forgetSandbox closes the net/dev file kept of the sandbox whose cgroup
// is at sandbox. p.mu must be held.
func (p *Provider) forgetSandbox(sandbox string) {
	if nd := p.sandboxes[sandbox]; nd != nil {
		_ = sysunix.Close(nd.fd)
		delete(p.sandboxes, sandbox)
	}
}

// netDevEnds is the length up to which a short read of a net/dev file is
// its end. The file is a seq_file of one record a line, and a read of it
// stops short of the buffer only at the end or where the next record
// would overflow the kernel's buffer, a page (4 KiB or more); a line is
// at most some 350 bytes (a name and 16 numbers of up to 20 digits each).
// A read this short is the whole file, which spares the read that would
// return 0: one pread a pod's network instead of two (some 4 us each here).
const netDevEnds = 4096 - 512

// preadRaw reads the whole of the open file fd, a net/dev file, from
// offset 0 into *buf, growing it as needed, to the end of the file (it is
// made of many records, which a read returns up to a page of; see
// netDevEnds).
func preadRaw(fd int, buf *[]byte) ([]byte, error) {
	if len(*buf) == 0 {
		*buf = make([]byte, 4096)
	}
	b, n := *buf, 0
	for {
		if n == len(b) {
			b = append(b, make([]byte, len(b))...)
			*buf = b
		}
		m, err := sysunix.Pread(fd, b[n:], int64(n))
		if errors.Is(err, sysunix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return b[:n], nil
		}
		n += m
		if n < len(b) && n <= netDevEnds {
			return b[:n], nil
		}
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

// readRaw reads the net/dev file at path into *buf, growing it as needed,
// to its end (see netDevEnds), with plain open/read/close calls: os.Open
// would register each file with the runtime's poller, a cost the stats
// reads make a hundred times a scrape.
func readRaw(path string, buf *[]byte) ([]byte, error) {
	fd, err := openRetry(sysunix.AT_FDCWD, path, sysunix.O_RDONLY|sysunix.O_CLOEXEC)
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
		if n < len(b) && n <= netDevEnds {
			return b[:n], nil
		}
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
