package eviction

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// CgroupNotifications arms the kernel's memory notifications on the
// cgroup hierarchy mounted at MountRoot (/sys/fs/cgroup):
//   - cgroup v1: a memory threshold (cgroup.event_control with an eventfd
//     on memory.usage_in_bytes, as the kubelet's memcg notifier), which
//     fires when the cgroup's usage crosses the threshold either way;
//   - cgroup v2, which has no usage threshold: a PSI trigger on the
//     cgroup's memory.pressure (/proc/pressure/memory for the node), which
//     fires when tasks stall on memory for 150ms within 2s, as reclaim
//     begins near the limit.
type CgroupNotifications struct {
	MountRoot string
	// Version is the cgroup version: 1 or 2.
	Version int
	// ProcRoot is where procfs is mounted ("/proc" when empty).
	ProcRoot string
}

var _ notifierFactory = CgroupNotifications{}

// New implements notifierFactory.
func (c CgroupNotifications) New(cgroup string, usage int64) (notification, error) {
	if c.Version == 2 {
		path := filepath.Join(c.MountRoot, cgroup, "memory.pressure")
		if cgroup == "/" || cgroup == "" {
			proc := c.ProcRoot
			if proc == "" {
				proc = "/proc"
			}
			path = filepath.Join(proc, "pressure", "memory")
		}
		return newPSITrigger(path)
	}
	return newMemcgThreshold(filepath.Join(c.MountRoot, "memory", cgroup), usage)
}

// memcgThreshold is a cgroup v1 memory threshold: the kernel signals the
// eventfd when memory.usage_in_bytes crosses the threshold.
type memcgThreshold struct {
	event *os.File // the eventfd, non-blocking, so that Close ends a Read
	usage *os.File // memory.usage_in_bytes, kept open while armed
}

func newMemcgThreshold(dir string, usage int64) (*memcgThreshold, error) {
	u, err := os.Open(filepath.Join(dir, "memory.usage_in_bytes")) //nolint:gosec // G304: a cgroup's interface file
	if err != nil {
		return nil, fmt.Errorf("memory threshold on %s: %w", dir, err)
	}
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = u.Close()
		return nil, fmt.Errorf("memory threshold on %s: eventfd: %w", dir, err)
	}
	event := os.NewFile(uintptr(fd), "eventfd")
	ctl := fmt.Sprintf("%d %d %d", fd, u.Fd(), usage)
	//nolint:gosec // G306,G703: a cgroup's interface file below the cgroup mount
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(ctl), 0o600); err != nil {
		event.Close()
		u.Close()
		return nil, fmt.Errorf("memory threshold on %s: %w", dir, err)
	}
	return &memcgThreshold{event: event, usage: u}, nil
}

func (t *memcgThreshold) Wait() error {
	buf := make([]byte, 8)
	_, err := t.event.Read(buf)
	return err
}

func (t *memcgThreshold) Close() error {
	// Closing the eventfd unregisters the threshold.
	return errors.Join(t.event.Close(), t.usage.Close())
}

// psiTrigger is a PSI trigger: the kernel raises POLLPRI on the pressure
// file when the stall exceeds the trigger's in its window. The window is
// 2s, the shortest allowed without CAP_SYS_RESOURCE.
type psiTrigger struct {
	fd     int
	mu     sync.Mutex
	closed bool
}

// psiTriggerSpec: 150ms of some tasks stalled within 2s. NUL-terminated:
// the kernel refuses it otherwise.
const psiTriggerSpec = "some 150000 2000000\x00"

// psiPoll is how often Wait checks whether it was closed.
const psiPoll = 200 * time.Millisecond

func newPSITrigger(path string) (*psiTrigger, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("memory pressure trigger on %s: %w", path, err)
	}
	if _, err := unix.Write(fd, []byte(psiTriggerSpec)); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("memory pressure trigger on %s: %w", path, err)
	}
	return &psiTrigger{fd: fd}, nil
}

func (t *psiTrigger) Wait() error {
	for {
		n, fds, err := t.poll()
		switch {
		case errors.Is(err, errClosed):
			return err
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n > 0 && fds[0].Revents&unix.POLLERR != 0:
			return fmt.Errorf("memory pressure trigger: %w", unix.EINVAL)
		case n > 0 && fds[0].Revents&unix.POLLPRI != 0:
			return nil
		}
	}
}

// poll polls the trigger once, for at most psiPoll, holding mu so that
// Close cannot close the descriptor (and its number be reused) meanwhile.
func (t *psiTrigger) poll() (int, []unix.PollFd, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, nil, errClosed
	}
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLPRI}}
	n, err := unix.Poll(fds, int(psiPoll/time.Millisecond))
	return n, fds, err
}

// Close waits for a poll in progress (at most psiPoll).
func (t *psiTrigger) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	return unix.Close(t.fd)
}
