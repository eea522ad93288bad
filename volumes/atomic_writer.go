package volumes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// The atomic writer's reserved names in a volume directory: every name
// starting with ".." is its own.
const (
	// dataLink points at the timestamped directory holding the current
	// content.
	dataLink = "..data"
	// dataLinkTmp is the next dataLink before it is renamed over it.
	dataLinkTmp = "..data_tmp"
	// tsDirLayout names timestamped directories (UTC), as the kubelet
	// does; a random suffix follows.
	tsDirLayout = "..2006_01_02_15_04_05."
)

// Limits on payload paths, as the kubelet's.
const (
	maxFileNameLength = 255
	maxPathLength     = 4096
)

// fileProjection is one file of a content volume.
type fileProjection struct {
	data []byte
	// mode is the file's permission bits.
	mode fs.FileMode
	// gid is the file's group; nil leaves the writer's (root).
	gid *int64
}

// atomicWriter publishes a set of files in a directory so that a reader
// sees either the whole old set or the whole new one, never a mix, as the
// kubelet's AtomicWriter does and with the same layout, which programs
// watching for updates rely on:
//
//	<dir>/..2026_11_21_10_04_05.123456789/   the files, one dir per version
//	<dir>/..data -> ..2026_11_21_10_04_05.123456789
//	<dir>/<key> -> ..data/<key>              one per top-level name
//
// A new version is written in full to a new timestamped directory, then
// ..data is switched to it by renaming a new symlink over it (rename is
// atomic), then user-visible links are added and removed and the old
// directories deleted. Nothing is written when the content and modes are
// unchanged. Calls for one directory must not overlap.
type atomicWriter struct {
	dir   string
	clock clock.Clock
}

// write publishes payload, whose keys are relative paths (no "..", not
// starting with ".."). It reports whether it wrote a new version.
func (w atomicWriter) write(ctx context.Context, payload map[string]fileProjection) (bool, error) {
	clean, err := validatePayload(payload)
	if err != nil {
		return false, err
	}
	oldTs, err := os.Readlink(filepath.Join(w.dir, dataLink))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", dataLink, err)
	}
	var stale []string
	if oldTs != "" {
		oldFiles, err := listFiles(filepath.Join(w.dir, oldTs))
		if err != nil {
			return false, err
		}
		stale = stalePaths(oldFiles, clean)
		same, err := sameContent(filepath.Join(w.dir, oldTs), clean)
		if err != nil {
			return false, err
		}
		if same && len(stale) == 0 {
			// Up to date; the links may still be missing (a crash
			// between the switch and their creation).
			return false, w.linkVisible(clean)
		}
	}

	tsDir, err := w.newTimestampDir()
	if err != nil {
		return false, err
	}
	published := false
	defer func() {
		if !published {
			_ = os.RemoveAll(tsDir) // roll back the unpublished version
		}
	}()
	if err := writeFiles(tsDir, clean); err != nil {
		return false, err
	}
	tmpLink := filepath.Join(w.dir, dataLinkTmp)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove stale %s: %w", dataLinkTmp, err)
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, fmt.Errorf("link new content: %w", err)
	}
	if err := os.Rename(tmpLink, filepath.Join(w.dir, dataLink)); err != nil {
		_ = os.Remove(tmpLink) // roll back: ..data still names the old version
		return false, fmt.Errorf("switch %s to the new content: %w", dataLink, err)
	}
	published = true
	if err := w.linkVisible(clean); err != nil {
		return true, err
	}
	for _, p := range stale {
		if strings.Contains(p, "/") {
			continue // gone with the old version's directory
		}
		if err := os.Remove(filepath.Join(w.dir, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return true, fmt.Errorf("remove %s, gone from the content: %w", p, err)
		}
	}
	if err := w.removeOldVersions(filepath.Base(tsDir)); err != nil {
		return true, err
	}
	klog.FromContext(ctx).V(4).Info("Wrote new volume content", "path", w.dir, "version", filepath.Base(tsDir), "files", len(clean))
	return true, nil
}

// validatePayload checks payload's paths and returns it keyed by the
// cleaned paths.
func validatePayload(payload map[string]fileProjection) (map[string]fileProjection, error) {
	clean := make(map[string]fileProjection, len(payload))
	for p, fp := range payload {
		if err := validatePayloadPath(p); err != nil {
			return nil, err
		}
		clean[path.Clean(p)] = fp
	}
	return clean, nil
}

func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: empty")
	case path.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case len(p) > maxPathLength:
		return fmt.Errorf("invalid path %q: longer than %d characters", p, maxPathLength)
	}
	elems := strings.Split(p, "/")
	for _, e := range elems {
		if e == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
		if len(e) > maxFileNameLength {
			return fmt.Errorf("invalid path %q: a name is longer than %d characters", p, maxFileNameLength)
		}
	}
	if strings.HasPrefix(elems[0], "..") {
		return fmt.Errorf("invalid path %q: must not start with '..' (reserved)", p)
	}
	return nil
}

// listFiles returns every path (files and directories) under root,
// relative to it. A root that does not exist has none.
func listFiles(root string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, p); rel != "." {
			out[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list current content: %w", err)
	}
	return out, nil
}

// stalePaths are the paths of the current version that the new payload
// has neither as a file nor as a parent directory, sorted.
func stalePaths(current map[string]bool, payload map[string]fileProjection) []string {
	keep := map[string]bool{}
	for p := range payload {
		for q := p; q != "." && q != "/"; q = path.Dir(q) {
			keep[q] = true
		}
	}
	var out []string
	for p := range current {
		if !keep[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// sameContent reports whether every file of payload is in dir with the
// same bytes and mode.
func sameContent(dir string, payload map[string]fileProjection) (bool, error) {
	for p, fp := range payload {
		full := filepath.Join(dir, p)
		fi, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("check current content: %w", err)
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != fp.mode.Perm() || fi.Size() != int64(len(fp.data)) {
			return false, nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fp.gid != nil && int64(st.Gid) != *fp.gid {
			return false, nil
		}
		data, err := os.ReadFile(full) //nolint:gosec // G304: a file of the volume's own version directory
		if err != nil {
			return false, fmt.Errorf("read current content: %w", err)
		}
		if !bytes.Equal(data, fp.data) {
			return false, nil
		}
	}
	return true, nil
}

// newTimestampDir creates an empty version directory, mode 0755 so that
// any user may traverse it.
func (w atomicWriter) newTimestampDir() (string, error) {
	tsDir, err := os.MkdirTemp(w.dir, w.clock.Now().UTC().Format(tsDirLayout))
	if err != nil {
		return "", fmt.Errorf("create version directory: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil { //nolint:gosec // G302: readable by the containers' users, as the kubelet makes it
		return "", fmt.Errorf("set mode of version directory: %w", err)
	}
	return tsDir, nil
}

// writeFiles writes payload into dir, each file with its mode whatever the
// umask.
func writeFiles(dir string, payload map[string]fileProjection) error {
	for p, fp := range payload {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create directory of %s: %w", p, err)
		}
		if err := os.WriteFile(full, fp.data, fp.mode.Perm()); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if fp.gid != nil {
			if err := os.Lchown(full, -1, int(*fp.gid)); err != nil {
				return fmt.Errorf("hand %s to group %d: %w", p, *fp.gid, err)
			}
		}
		if err := os.Chmod(full, fp.mode.Perm()); err != nil {
			return fmt.Errorf("set mode of %s: %w", p, err)
		}
	}
	return nil
}

// linkVisible makes sure each top-level name of payload is a symlink to
// ..data/<name>.
func (w atomicWriter) linkVisible(payload map[string]fileProjection) error {
	done := map[string]bool{}
	for p := range payload {
		top, _, _ := strings.Cut(p, "/")
		if done[top] {
			continue
		}
		done[top] = true
		link := filepath.Join(w.dir, top)
		want := dataLink + "/" + top
		got, err := os.Readlink(link)
		if err == nil && got == want {
			continue
		}
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			// A wrong link or something else: replace it.
			if err := os.RemoveAll(link); err != nil {
				return fmt.Errorf("replace %s: %w", top, err)
			}
		}
		if err := os.Symlink(want, link); err != nil {
			return fmt.Errorf("link %s: %w", top, err)
		}
	}
	return nil
}

// removeOldVersions removes every version directory but current: the one
// it replaced, and any a crash left behind.
func (w atomicWriter) removeOldVersions(current string) error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("list old versions: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "..") || name == current {
			continue
		}
		if err := os.RemoveAll(filepath.Join(w.dir, name)); err != nil {
			return fmt.Errorf("remove old version %s: %w", name, err)
		}
	}
	return nil
}
