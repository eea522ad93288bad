package file

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/agent/sources"
)

// DefaultCheckFrequency is the rescan period when Config.CheckFrequency is
// zero; it matches the kubelet's fileCheckFrequency.
const DefaultCheckFrequency = 20 * time.Second

// QuietPeriod is how long a bad manifest's content must stay unchanged
// before it is reported: an editor, or `cat > file`, writes a file in
// several steps, and the source must not report a half-written file. A good
// manifest is taken at once.
const QuietPeriod = 150 * time.Millisecond

// RecreateWindow is how long the pod of a manifest that vanished is kept
// before the source reports it gone. Many tools replace a file by deleting
// it and creating it again (`git checkout`, `rm f && cp g f`, a config
// manager's delete then write, a directory swapped for a new one): a new
// file at the same path within the window is read as an edit of the old
// one (the same pod, DESIGN.md rule 7: an UPDATE, or nothing when the
// content is the same) instead of a REMOVE followed by an ADD. A real
// deletion reaches the agent this much later than it would without the
// window. The kubelet has no such window: it recreates the pod.
const RecreateWindow = 500 * time.Millisecond

// Config configures a Source.
type Config struct {
	// Path is the directory of manifests. A relative path is made absolute
	// by New, as the pods' UIDs derive from the file paths.
	Path string
	// NodeName is this node's name, as the pods' static identity needs it.
	NodeName string
	// CheckFrequency is the period of the full rescan and of the check for
	// a missing directory; DefaultCheckFrequency when zero.
	CheckFrequency time.Duration
	// Clock is the source of time; the real clock when nil.
	Clock clock.WithTicker
}

// Source is the static pod file source. It holds only its configuration:
// all state of a run lives in Run, so a Source is safe to share.
type Source struct {
	dir            string
	nodeName       string
	checkFrequency time.Duration
	clock          clock.WithTicker
}

// New returns a Source for cfg.
func New(cfg Config) *Source {
	dir := filepath.Clean(cfg.Path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	s := &Source{
		dir:            dir,
		nodeName:       cfg.NodeName,
		checkFrequency: cfg.CheckFrequency,
		clock:          cfg.Clock,
	}
	if s.checkFrequency <= 0 {
		s.checkFrequency = DefaultCheckFrequency
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	return s
}

// Run watches the directory and sends snapshots to out until ctx is done.
// The first snapshot is sent right after the first scan. A send blocks until
// out takes it, but never stalls the watch: while out is not ready, changes
// are still read and the snapshot waiting to be sent is replaced by the
// newest one. Run neither owns nor closes out. Call Run once per Source at a
// time; two concurrent runs would each send their own snapshots.
func (s *Source) Run(ctx context.Context, out chan<- sources.Update) {
	logger := klog.FromContext(ctx).WithValues("source", sources.File, "path", s.dir)
	r := newRun(s, logger)
	defer r.closeWatch()

	ticker := s.clock.NewTicker(s.checkFrequency)
	defer ticker.Stop()
	// wake fires when the first bad file is due for a re-read or the first
	// vanished file's window ends; nil when neither waits.
	var wake clock.Timer
	defer func() {
		if wake != nil {
			wake.Stop()
		}
	}()

	rescan := true
	for {
		if rescan {
			rescan = false
			r.scan(r.ensureWatch())
			r.prepare()
			if wake != nil {
				wake.Stop()
				wake = nil
			}
			if d, ok := r.nextDeadline(); ok {
				wake = s.clock.NewTimer(d)
			}
		}

		// Nil channels disable their cases: sending when nothing waits to be
		// sent, receiving from a watch or a timer that does not exist.
		var (
			sendC   chan<- sources.Update
			pending sources.Update
			wakeC   <-chan time.Time
			eventsC <-chan fsnotify.Event
			errorsC <-chan error
		)
		if u, ok := r.outbox.Pending(); ok {
			sendC, pending = out, u
		}
		if wake != nil {
			wakeC = wake.C()
		}
		if r.watcher != nil {
			eventsC, errorsC = r.watcher.Events, r.watcher.Errors
		}

		select {
		case <-ctx.Done():
			return
		case sendC <- pending:
			r.outbox.Sent()
		case <-ticker.C():
			rescan = true
		case <-wakeC:
			wake = nil
			rescan = true
		case ev, ok := <-eventsC:
			rescan = true
			if !ok {
				r.closeWatch()
				break
			}
			r.handleEvent(ev)
			r.drainEvents()
		case err, ok := <-errorsC:
			rescan = true
			if !ok {
				r.closeWatch()
				break
			}
			// Most likely an event queue overflow: the rescan catches up.
			logger.Error(err, "Watch error, rescanning static pod directory")
		}
	}
}

// ensureWatch watches the directory when it exists and is not watched yet,
// and drops the watch when the directory is gone or was replaced. It
// returns the result of its stat of the directory, which scan then trusts:
// were scan to look again, a directory appearing between the two looks
// would be read but not watched until the next check.
func (r *run) ensureWatch() (os.FileInfo, error) {
	fi, err := os.Stat(r.s.dir)
	exists := err == nil && fi.IsDir()
	if r.watcher != nil && (!exists || !os.SameFile(fi, r.watchedDir)) {
		r.closeWatch()
	}
	if r.watcher != nil || !exists {
		return fi, err
	}
	w, werr := fsnotify.NewWatcher()
	if werr != nil {
		r.logger.Error(werr, "Cannot watch static pod directory, relying on the periodic rescan")
		return fi, err
	}
	if werr := w.Add(r.s.dir); werr != nil {
		_ = w.Close()
		r.logger.Error(werr, "Cannot watch static pod directory, relying on the periodic rescan")
		return fi, err
	}
	r.watcher, r.watchedDir = w, fi
	r.logger.V(2).Info("Watching static pod directory")
	return fi, err
}

// closeWatch stops the watch, if any; fsnotify's goroutine ends with it.
func (r *run) closeWatch() {
	if r.watcher == nil {
		return
	}
	if err := r.watcher.Close(); err != nil {
		r.logger.V(2).Info("Closing the directory watch failed", "err", err)
	}
	r.watcher, r.watchedDir = nil, nil
}

// handleEvent drops the watch when the directory itself was removed or
// moved away: its watch is gone, and ensureWatch must set up a new one (or
// wait for the directory to come back). Any other event only asks for the
// rescan Run does after it.
func (r *run) handleEvent(ev fsnotify.Event) {
	r.logger.V(5).Info("Directory event", "event", ev.String())
	if filepath.Clean(ev.Name) == r.s.dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		r.closeWatch()
	}
}

// maxDrain bounds how many queued events one rescan coalesces, so that a
// storm of events cannot postpone the rescan without limit.
const maxDrain = 1024

// drainEvents takes the events that are already queued, without waiting for
// more, so that one burst (an editor's save, a `cp -r`) costs one rescan.
func (r *run) drainEvents() {
	for range maxDrain {
		if r.watcher == nil {
			return
		}
		select {
		case ev, ok := <-r.watcher.Events:
			if !ok {
				r.closeWatch()
				return
			}
			r.handleEvent(ev)
		default:
			return
		}
	}
}
