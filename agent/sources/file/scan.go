package file

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
)

// run is the state of one Source.Run; only its goroutine touches it.
type run struct {
	s      *Source
	logger klog.Logger

	watcher    *fsnotify.Watcher // nil while the directory is missing or unwatchable
	watchedDir os.FileInfo       // the directory the watcher watches

	// files by base name: every manifest file present at the last scan.
	files map[string]*fileState
	// dirErr is why the directory could not be listed (other than missing);
	// the files keep their last state while it lasts.
	dirErr error
	// dirMissing records that the directory was missing at the last scan.
	dirMissing bool
	// skipped holds the names found that are not manifests, with when a
	// scan first found each. A name is logged once it has stayed for
	// QuietPeriod, so the temp files of editors and `sed -i`, renamed over
	// a manifest within milliseconds, are never logged.
	skipped map[string]skippedName

	// outbox holds the snapshot waiting to be sent.
	outbox sources.Outbox
}

// fileState is what the source knows of one manifest file.
type fileState struct {
	// hash identifies the content last read (or the read error).
	hash [sha256.Size]byte
	// good is the pod of the last good content, nil if there was none;
	// goodHash identifies that content.
	good     *v1.Pod
	goodHash [sha256.Size]byte
	// err is the reported error of the current content; nil when the
	// content is good or its error is not reported yet. errHash identifies
	// the content err was reported for.
	err     error
	errHash [sha256.Size]byte
	// pendingErr is the error of current content that is not stable yet,
	// first read at pendingSince; nil when there is none.
	pendingErr   error
	pendingSince time.Time
	// dupMsg is the duplicate-name error last logged for the file.
	dupMsg string
	// goneSince is when a scan first found the file missing; zero while
	// it exists. A vanished file keeps its place in the snapshot until
	// RecreateWindow has passed since then.
	goneSince time.Time
}

// skippedName is one name that is not read: why, since when, and whether
// that was logged.
type skippedName struct {
	since  time.Time
	msg    string
	kv     []any
	logged bool
}

// gone reports whether the file vanished and waits out RecreateWindow.
func (st *fileState) gone() bool { return !st.goneSince.IsZero() }

func newRun(s *Source, logger klog.Logger) *run {
	return &run{
		s:       s,
		logger:  logger,
		files:   map[string]*fileState{},
		skipped: map[string]skippedName{},
	}
}

// scan reads every manifest in the directory whose content changed since
// the last scan, and forgets the files that are gone. dirInfo and statErr
// are the result of ensureWatch's stat of the directory.
func (r *run) scan(dirInfo os.FileInfo, statErr error) {
	var entries []os.DirEntry
	err := statErr
	switch {
	case err == nil && !dirInfo.IsDir():
		err = fmt.Errorf("%s is not a directory: the static pod path must name a directory of manifests", r.s.dir)
	case err == nil:
		entries, err = os.ReadDir(r.s.dir)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !r.dirMissing {
			r.logger.Info("Static pod directory does not exist, waiting for it")
		}
		r.dirMissing, r.dirErr = true, nil
		// A directory swapped for a new one may be missing for a moment:
		// its files wait out the window like any vanished file.
		r.vanish(map[string]bool{})
		return
	case err != nil:
		if r.dirErr == nil || r.dirErr.Error() != err.Error() {
			r.logger.Error(err, "Cannot list static pod directory, keeping its pods")
		}
		r.dirErr = err
		return
	}
	if r.dirMissing {
		r.logger.Info("Static pod directory appeared")
	}
	r.dirMissing, r.dirErr = false, nil

	present := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if ignored(name) {
			continue
		}
		full := filepath.Join(r.s.dir, name)
		if !isManifestName(name) {
			r.skip(name, "Ignoring file: a static pod manifest's name must end in .yaml, .yml or .json")
			continue
		}
		fi, err := os.Stat(full) // follows symlinks
		switch {
		case errors.Is(err, fs.ErrNotExist) && e.Type()&fs.ModeSymlink == 0:
			continue // removed since the listing; its event follows
		case err == nil && !fi.Mode().IsRegular():
			r.skip(name, "Ignoring manifest name that is not a regular file", "mode", fi.Mode().String())
			continue
		}
		present[name] = true
		var data []byte
		if err == nil {
			data, err = readManifest(full)
		}
		r.observe(name, data, err)
	}
	r.vanish(present)
	for name := range r.skipped {
		if _, err := os.Lstat(filepath.Join(r.s.dir, name)); err != nil {
			delete(r.skipped, name)
		}
	}
}

// vanish handles the files that the scan did not find (those not in
// present): a file's pod is kept until RecreateWindow has passed since the
// first scan that missed it, so that a delete-then-create is an edit. A
// file that has no good pod has nothing to keep and is forgotten at once.
func (r *run) vanish(present map[string]bool) {
	now := r.s.clock.Now()
	for name, st := range r.files {
		switch {
		case present[name]:
		case st.good == nil:
			delete(r.files, name)
		case !st.gone():
			// What was read last is gone with the file: a content not yet
			// judged (pendingErr) is dropped, and the file's next content
			// is compared with its good and reported ones only.
			st.goneSince, st.hash, st.pendingErr = now, [sha256.Size]byte{}, nil
			r.logger.V(4).Info("Manifest file gone, keeping its pod in case the file is re-created",
				"file", filepath.Join(r.s.dir, name), "window", RecreateWindow)
		case now.Sub(st.goneSince) >= RecreateWindow:
			delete(r.files, name)
			r.logger.V(4).Info("Manifest file still gone after the window, dropping its pod",
				"file", filepath.Join(r.s.dir, name), "pod", st.good.Namespace+"/"+st.good.Name)
		}
	}
}

// skip records why a file is not read, and logs it once per name when the
// name has been there for QuietPeriod.
func (r *run) skip(name, msg string, kv ...any) {
	now := r.s.clock.Now()
	sk, seen := r.skipped[name]
	if !seen || sk.msg != msg {
		sk = skippedName{since: now, msg: msg, kv: kv}
	}
	if !sk.logged && now.Sub(sk.since) >= QuietPeriod {
		sk.logged = true
		r.logger.Info(msg, append([]any{"file", filepath.Join(r.s.dir, name)}, sk.kv...)...)
	}
	r.skipped[name] = sk
}

// readManifest reads at most one byte more than manifest.MaxSize, enough
// for manifest.Decode to report a file that is too large.
func readManifest(path string) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // G304: reading the manifests of the configured directory is the point.
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, manifest.MaxSize+1))
}

// observe records the content (or read error) of one manifest file.
//
// A good content is taken at once. A bad one is reported only once the
// same content is read again at least QuietPeriod after it was first read;
// until then the file keeps its last reported state. Each reported bad
// content is logged once.
func (r *run) observe(name string, data []byte, readErr error) {
	var h [sha256.Size]byte
	if readErr != nil {
		h = sha256.Sum256([]byte("\x00read error\x00" + readErr.Error()))
	} else {
		h = sha256.Sum256(data)
	}
	st := r.files[name]
	now := r.s.clock.Now()
	if st != nil && st.gone() {
		// Re-created within the window: from here on, an edit.
		st.goneSince = time.Time{}
		r.logger.V(4).Info("Manifest file re-created within the window: same pod, read as an edit",
			"file", filepath.Join(r.s.dir, name))
	}
	if st == nil {
		st = &fileState{}
		r.files[name] = st
	} else if h == st.hash {
		if st.pendingErr != nil && now.Sub(st.pendingSince) >= QuietPeriod {
			st.err, st.errHash, st.pendingErr = st.pendingErr, h, nil
			r.logger.Error(st.err, "Skipping bad manifest", "file", filepath.Join(r.s.dir, name))
		}
		return
	}
	st.hash = h

	// Back to a content already judged (an identical rewrite, read half
	// written in between): no new parse, no new log line.
	switch {
	case st.good != nil && h == st.goodHash:
		st.err, st.pendingErr = nil, nil
		return
	case st.err != nil && h == st.errHash:
		st.pendingErr = nil
		return
	}
	err := readErr
	var pod *v1.Pod
	if err == nil {
		pod, err = manifest.Load(data, manifest.Identity{
			NodeName: r.s.nodeName,
			Source:   sources.File,
			Origin:   filepath.Join(r.s.dir, name),
			Seen:     now,
		})
	}
	if err != nil {
		st.pendingErr, st.pendingSince = err, now
		return
	}
	st.good, st.goodHash = pod, h
	st.err, st.pendingErr = nil, nil
}

// nextDeadline returns how long until the next rescan is due on its own:
// the first bad content due for its re-read, or the first vanished file
// whose window ends; false when nothing waits.
func (r *run) nextDeadline() (time.Duration, bool) {
	var first time.Time
	found := false
	due := func(t time.Time) {
		if !found || t.Before(first) {
			first, found = t, true
		}
	}
	for _, sk := range r.skipped {
		if !sk.logged {
			due(sk.since.Add(QuietPeriod))
		}
	}
	for _, st := range r.files {
		if st.pendingErr != nil {
			due(st.pendingSince.Add(QuietPeriod))
		}
		if st.gone() {
			due(st.goneSince.Add(RecreateWindow))
		}
	}
	if !found {
		return 0, false
	}
	return max(0, first.Sub(r.s.clock.Now())), true
}

// prepare builds the snapshot of the current state and makes it pending
// unless it equals the last one sent.
func (r *run) prepare() {
	r.outbox.Offer(r.snapshot())
}

// snapshot returns the Update of the current state, and a key that is equal
// for two snapshots exactly when they hold the same pods (by file and
// content) and the same errors.
//
// Two files may not define the same pod: the first in name order keeps it,
// the others are reported. A vanished file waiting out RecreateWindow keeps
// its pod and its place, and a duplicate it is part of stays reported as it
// was before it vanished, no more: a file renamed (a.yaml to b.yaml) is not
// reported as a duplicate of itself while the window runs.
func (r *run) snapshot() (sources.Update, string) {
	u := sources.Update{Source: sources.File, Pods: []*v1.Pod{}, Origins: map[types.UID]string{}}
	var key strings.Builder
	if r.dirErr != nil {
		u.Incomplete = true
		u.Errors = append(u.Errors, sources.ManifestError{Source: sources.File, Origin: r.s.dir, Err: r.dirErr})
		key.WriteString("D\x00" + r.dirErr.Error() + "\n")
	}
	names := make([]string, 0, len(r.files))
	for name := range r.files {
		names = append(names, name)
	}
	slices.Sort(names)

	owner := map[string]string{} // pod namespace/name -> file defining it
	for _, name := range names {
		st := r.files[name]
		path := filepath.Join(r.s.dir, name)
		reported := st.err
		dupMsg := ""
		if st.good != nil {
			podName := st.good.Namespace + "/" + st.good.Name
			if other, taken := owner[podName]; taken {
				if st.gone() || r.files[filepath.Base(other)].gone() {
					dupMsg = st.dupMsg // as it was: the window settles it
				} else {
					dupMsg = fmt.Sprintf("pod %s is also defined in %s, which comes first: give each static pod its own name", podName, other)
				}
			} else {
				owner[podName] = path
				u.Pods = append(u.Pods, st.good)
				u.Origins[st.good.UID] = path
				key.WriteString("P\x00" + path + "\x00" + hex.EncodeToString(st.goodHash[:]) + "\n")
			}
		}
		var dupErr error
		if dupMsg != "" {
			dupErr = errors.New(dupMsg)
		}
		if dupMsg != st.dupMsg {
			if dupErr != nil {
				r.logger.Error(dupErr, "Skipping duplicate static pod", "file", path)
			}
			st.dupMsg = dupMsg
		}
		if reported == nil {
			reported = dupErr
		}
		if reported != nil {
			u.Errors = append(u.Errors, sources.ManifestError{Source: sources.File, Origin: path, Err: reported})
			key.WriteString("E\x00" + path + "\x00" + reported.Error() + "\n")
		}
	}
	return u, key.String()
}

// isManifestName reports whether name has a manifest extension.
func isManifestName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// ignored reports whether name is a file that is never a manifest and not
// worth a log line: dotfiles (also the ..data links of projected volumes),
// editor backups, swap, lock and temporary files.
func ignored(name string) bool {
	switch {
	case strings.HasPrefix(name, "."),
		strings.HasSuffix(name, "~"),
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"), // emacs auto-save
		name == "4913": // vim's probe for a writable directory
		return true
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".swp", ".swx", ".swo", ".tmp":
		return true
	}
	return false
}
