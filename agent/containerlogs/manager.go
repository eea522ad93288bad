package containerlogs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Container is a running container whose log may need rotating.
type Container struct {
	ID string
	// LogPath is the container's absolute log file.
	LogPath string
}

// reopener asks the runtime to reopen a container's log file.
type reopener interface {
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Config configures a Manager.
type Config struct {
	Runtime reopener
	// Running lists the running containers; it is called once per
	// interval and must be cheap (the PLEG cache).
	Running func() []Container
	// MaxSize is the size in bytes over which a log is rotated; <= 0
	// turns rotation off.
	MaxSize int64
	// MaxFiles is how many files a container's log may have, the current
	// one included; at least 2.
	MaxFiles int
	// Interval is how often logs are checked.
	Interval time.Duration
	Clock    clock.WithTicker
}

// Manager rotates container logs. Run is its only entry point.
type Manager struct {
	cfg Config
}

// New returns a Manager; it does no I/O.
func New(cfg Config) *Manager {
	if cfg.MaxFiles < 2 {
		cfg.MaxFiles = 2
	}
	return &Manager{cfg: cfg}
}

// Run checks every running container's log each interval until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.MaxSize <= 0 {
		return
	}
	logger := klog.FromContext(ctx).WithName("containerlogs")
	t := m.cfg.Clock.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		for _, c := range m.cfg.Running() {
			if err := m.Rotate(ctx, c); err != nil {
				logger.Error(err, "Rotating a container log failed", "containerID", c.ID, "path", c.LogPath)
			}
		}
	}
}

// timestampFormat names rotated files, as the kubelet's.
const timestampFormat = "20060102-150405"

// Rotate cleans up a container's rotated logs and, when its log is over
// MaxSize, rotates it. It is idempotent and safe to call again after a
// failure.
func (m *Manager) Rotate(ctx context.Context, c Container) error {
	if !filepath.IsAbs(c.LogPath) {
		return nil
	}
	if err := m.removeExcess(c.LogPath, m.cfg.MaxFiles-1); err != nil {
		return err
	}
	if err := m.compressOld(c.LogPath); err != nil {
		return err
	}
	st, err := os.Stat(c.LogPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil // not written yet, or being reopened
	}
	if err != nil {
		return err
	}
	if st.Size() < m.cfg.MaxSize {
		return nil
	}
	// Make room for the file about to be rotated.
	if err := m.removeExcess(c.LogPath, m.cfg.MaxFiles-2); err != nil {
		return err
	}
	if err := m.compressOld(c.LogPath); err != nil {
		return err
	}
	rotated := c.LogPath + "." + m.cfg.Clock.Now().Format(timestampFormat)
	if _, err := os.Stat(rotated); err == nil {
		rotated += "-" + fmt.Sprint(m.cfg.Clock.Now().Nanosecond()) // rotated twice within a second
	}
	if err := os.Rename(c.LogPath, rotated); err != nil {
		return fmt.Errorf("rotate %s: %w", c.LogPath, err)
	}
	if err := m.cfg.Runtime.ReopenContainerLog(ctx, c.ID); err != nil {
		// The runtime still writes to the renamed file: put it back.
		if rerr := os.Rename(rotated, c.LogPath); rerr != nil {
			return errors.Join(fmt.Errorf("reopen log of container %s: %w", c.ID, err), fmt.Errorf("undo rotation of %s: %w", c.LogPath, rerr))
		}
		return fmt.Errorf("reopen log of container %s: %w", c.ID, err)
	}
	klog.FromContext(ctx).V(2).Info("Rotated container log", "containerID", c.ID, "path", c.LogPath, "size", st.Size())
	return nil
}

// rotatedFiles returns the rotated files of log (<log>.<timestamp>, and
// .gz), oldest first, and drops leftovers of interrupted compressions. It
// lists log's directory once: Rotate runs for every container every
// monitor interval.
func rotatedFiles(log string) ([]string, error) {
	dir, base := filepath.Split(log)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if len(name) <= len(base)+1 || !strings.HasPrefix(name, base) || name[len(base)] != '.' {
			continue
		}
		f := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(f) // an interrupted compression
			continue
		}
		out = append(out, f)
	}
	// The timestamps sort in time order; ".gz" does not change that.
	sort.Slice(out, func(i, j int) bool { return strings.TrimSuffix(out[i], ".gz") < strings.TrimSuffix(out[j], ".gz") })
	return out, nil
}

// removeExcess removes the oldest rotated files of log until keep remain.
func (m *Manager) removeExcess(log string, keep int) error {
	files, err := rotatedFiles(log)
	if err != nil {
		return err
	}
	for len(files) > max(keep, 0) {
		if err := os.Remove(files[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove rotated log: %w", err)
		}
		files = files[1:]
	}
	return nil
}

// compressOld gzips every rotated file of log but the newest.
func (m *Manager) compressOld(log string) error {
	files, err := rotatedFiles(log)
	if err != nil || len(files) < 2 {
		return err
	}
	for _, f := range files[:len(files)-1] {
		if strings.HasSuffix(f, ".gz") {
			continue
		}
		if err := compress(f); err != nil {
			return err
		}
	}
	return nil
}

// compress replaces f by f.gz, through a temp file so that a crash leaves
// either the one or the other.
func compress(f string) error {
	in, err := os.Open(f) //nolint:gosec // G304: a rotated file of a log the runtime reported
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := f + ".gz.tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640) //nolint:gosec // G304: beside that rotated file
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f+".gz")
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("compress %s: %w", f, err)
	}
	return os.Remove(f)
}
