package cgroups

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	"k8s.io/klog/v2"
)

// enableBlkioAccounting turns the kernel's block I/O accounting on for
// every disk not yet seen, on cgroup v1 with Config.BlkioAccounting, by
// writing "MAJ:MIN 0" to blkio.throttle.read_bps_device of the cgroup that
// holds every pod. 0 means no limit, so the rule throttles nothing and is
// not even listed afterwards; writing it makes the kernel set throttling
// up for the disk, and since Linux 6.10 the per-cgroup
// blkio.throttle.io_service* statistics are kept only for such disks (for
// every cgroup, until the disk goes away). See doc.go. Failures are logged
// and not retried: stats for that disk read zero.
func (m *Manager) enableBlkioAccounting(ctx context.Context) {
	if m.version != 1 || !m.cfg.BlkioAccounting {
		return
	}
	logger := klog.FromContext(ctx)
	target := filepath.Join(m.cfg.MountRoot, string(cgroup1.Blkio), m.PodsCgroup(), "blkio.throttle.read_bps_device")
	for _, d := range m.disks() {
		m.mu.Lock()
		done := m.blkioDone[d.dev]
		m.blkioDone[d.dev] = true
		m.mu.Unlock()
		if done {
			continue
		}
		if err := os.WriteFile(target, []byte(d.dev+" 0"), 0o644); err != nil {
			logger.Info("Could not turn block I/O accounting on for a disk; its I/O stats will read 0", "disk", d.name, "device", d.dev, "err", err)
			continue
		}
		logger.Info("Turned block I/O accounting on for a disk (a no-op throttle rule; see --cgroup-v1-blkio-accounting)", "disk", d.name, "device", d.dev, "cgroup", m.PodsCgroup())
	}
}

type disk struct {
	name string // vda
	dev  string // 254:0
}

// disks lists the whole disks of the machine (SysRoot/block) that have a
// size: throttle rules apply to whole disks only, and an empty loop or
// zram device has no queue worth accounting.
func (m *Manager) disks() []disk {
	dir := filepath.Join(m.cfg.SysRoot, "block")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []disk
	for _, e := range entries {
		dev, err := os.ReadFile(filepath.Join(dir, e.Name(), "dev")) //nolint:gosec // G304: sysfs files of the machine's disks
		if err != nil {
			continue
		}
		size, err := os.ReadFile(filepath.Join(dir, e.Name(), "size")) //nolint:gosec // G304: sysfs files of the machine's disks
		if err != nil || strings.TrimSpace(string(size)) == "0" {
			continue
		}
		out = append(out, disk{name: e.Name(), dev: strings.TrimSpace(string(dev))})
	}
	return out
}

// readBlkioV1 reads a v1 blkio cgroup's per-disk bytes and operations from
// blkio.throttle.io_service_bytes_recursive and io_serviced_recursive: the
// recursive files, because a pod's own cgroup holds no process and its
// non-recursive files stay 0. A missing file wraps errdefs.ErrNotFound.
//
// The kernel writes both files from the same list, a line for each disk
// the cgroup (or one below it) has throttling state for, whatever its
// figures: when the first lists none, the second is not read (most
// cgroups, on a host whose disks have no throttle rule; see doc.go).
func readBlkioV1(r reader) ([]IOStats, error) {
	var out []IOStats
	for i, f := range []struct {
		file        statFile
		read, write func(*IOStats) *uint64
	}{
		{v1BlkioBytes, func(s *IOStats) *uint64 { return &s.ReadBytes }, func(s *IOStats) *uint64 { return &s.WriteBytes }},
		{v1BlkioOps, func(s *IOStats) *uint64 { return &s.ReadOps }, func(s *IOStats) *uint64 { return &s.WriteOps }},
	} {
		if i > 0 && len(out) == 0 {
			break // no disk
		}
		b, err := r.stat(f.file)
		if err != nil {
			return nil, err
		}
		for len(b) > 0 {
			var line []byte
			line, b, _ = bytes.Cut(b, []byte{'\n'})
			// "254:0 Read 4096"; the last line is "Total N".
			var fields [3][]byte
			if fieldsOf(line, fields[:]) != 3 {
				continue
			}
			major, minor, ok := parseDevice(fields[0])
			if !ok {
				continue
			}
			v, err := strconv.ParseUint(string(fields[2]), 10, 64)
			if err != nil {
				continue
			}
			var s *IOStats
			out, s = ioStatsOf(out, major, minor)
			switch string(fields[1]) {
			case "Read":
				*f.read(s) = v
			case "Write":
				*f.write(s) = v
			}
		}
	}
	return out, nil
}

// fieldsOf splits line at runs of spaces and tabs into fields, as
// bytes.Fields does for these files, without allocating: it returns how
// many fields line has (len(fields)+1 when it has more).
func fieldsOf(line []byte, fields [][]byte) int {
	n := 0
	for {
		for len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			line = line[1:]
		}
		if len(line) == 0 {
			return n
		}
		end := bytes.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		if n == len(fields) {
			return n + 1
		}
		fields[n] = line[:end]
		n++
		line = line[end:]
	}
}

// ioStatsOf returns the entry of out for the disk major:minor, added in
// the order of device numbers if out has none.
func ioStatsOf(out []IOStats, major, minor uint64) ([]IOStats, *IOStats) {
	i := 0
	for ; i < len(out); i++ {
		if d := &out[i]; d.Major == major && d.Minor == minor {
			return out, d
		} else if d.Major > major || (d.Major == major && d.Minor > minor) {
			break
		}
	}
	out = slices.Insert(out, i, IOStats{Major: major, Minor: minor})
	return out, &out[i]
}

// DeviceName is the name of a block device as cAdvisor labels it,
// /dev/<name>, read from sysfs; "" when the device is unknown.
func (m *Manager) DeviceName(major, minor uint64) string {
	f, err := os.Open(filepath.Join(m.cfg.SysRoot, "dev", "block", fmt.Sprintf("%d:%d", major, minor), "uevent"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "DEVNAME="); ok {
			return "/dev/" + v
		}
	}
	return ""
}
