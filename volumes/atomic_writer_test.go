package volumes

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// tsDirPattern is a version directory named at t0 (UTC).
var tsDirPattern = regexp.MustCompile(`^\.\.2026_11_21_10_04_05\.[0-9]+$`)

// entries lists dir's names, sorted, with "-> target" after symlinks.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		name := e.Name()
		if e.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			name += " -> " + target
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// version returns the directory ..data names.
func version(t *testing.T, dir string) string {
	t.Helper()
	v, err := os.Readlink(filepath.Join(dir, dataLink))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAtomicWriterLayout(t *testing.T) {
	dir := t.TempDir()
	clk := testingclock.NewFakeClock(t0)
	w := atomicWriter{dir: dir, clock: clk}
	changed, err := w.write(testCtx(t), map[string]fileProjection{
		"labels":        {data: []byte(`app="web"`), mode: 0o644},
		"sub/dir/file":  {data: []byte("nested"), mode: 0o600},
		"./cleaned/key": {data: []byte("x"), mode: 0o400},
	})
	if err != nil || !changed {
		t.Fatalf("write = %v, %v; want a new version", changed, err)
	}
	v := version(t, dir)
	if !tsDirPattern.MatchString(v) {
		t.Errorf("..data -> %q, want a directory named like ..2026_11_21_10_04_05.NNN", v)
	}
	want := []string{v, "..data -> " + v, "cleaned -> ..data/cleaned", "labels -> ..data/labels", "sub -> ..data/sub"}
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q", got, want)
	}
	for name, wantMode := range map[string]fs.FileMode{"labels": 0o644, "sub/dir/file": 0o600, "cleaned/key": 0o400} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != wantMode {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), wantMode)
		}
	}
	if got := readVolumeFile(t, dir, "sub/dir/file"); got != "nested" {
		t.Errorf("sub/dir/file = %q", got)
	}
	fi, err := os.Stat(filepath.Join(dir, v))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("version directory mode %v, want 0755", fi.Mode().Perm())
	}
}

// Successive writes of a volume: what is published, and when nothing is
// written at all.
func TestAtomicWriterUpdates(t *testing.T) {
	initial := map[string]fileProjection{
		"a":     {data: []byte("1"), mode: 0o644},
		"b":     {data: []byte("2"), mode: 0o644},
		"d/e/f": {data: []byte("3"), mode: 0o644},
	}
	tests := []struct {
		name    string
		next    map[string]fileProjection
		changed bool
		// entries are the user-visible names after the write.
		entries []string
		// content is what user-visible paths read after the write.
		content map[string]string
		// gone are paths that must no longer resolve.
		gone []string
	}{
		{
			name:    "unchanged payload writes nothing",
			next:    initial,
			changed: false,
			entries: []string{"a", "b", "d"},
			content: map[string]string{"a": "1", "b": "2", "d/e/f": "3"},
		},
		{
			name:    "changed content swaps the version",
			next:    map[string]fileProjection{"a": {data: []byte("1 bis"), mode: 0o644}, "b": {data: []byte("2"), mode: 0o644}, "d/e/f": {data: []byte("3"), mode: 0o644}},
			changed: true,
			entries: []string{"a", "b", "d"},
			content: map[string]string{"a": "1 bis", "b": "2", "d/e/f": "3"},
		},
		{
			name:    "removed keys disappear",
			next:    map[string]fileProjection{"a": {data: []byte("1"), mode: 0o644}},
			changed: true,
			entries: []string{"a"},
			content: map[string]string{"a": "1"},
			gone:    []string{"b", "d/e/f", "d"},
		},
		{
			name:    "a removed nested file keeps its directory's other files",
			next:    map[string]fileProjection{"a": {data: []byte("1"), mode: 0o644}, "b": {data: []byte("2"), mode: 0o644}, "d/g": {data: []byte("4"), mode: 0o644}},
			changed: true,
			entries: []string{"a", "b", "d"},
			content: map[string]string{"d/g": "4"},
			gone:    []string{"d/e/f", "d/e"},
		},
		{
			name:    "a mode change alone is written",
			next:    map[string]fileProjection{"a": {data: []byte("1"), mode: 0o600}, "b": {data: []byte("2"), mode: 0o644}, "d/e/f": {data: []byte("3"), mode: 0o644}},
			changed: true,
			entries: []string{"a", "b", "d"},
			content: map[string]string{"a": "1"},
		},
		{
			name:    "an empty payload empties the volume",
			next:    map[string]fileProjection{},
			changed: true,
			entries: nil,
			gone:    []string{"a", "b", "d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := testingclock.NewFakeClock(t0)
			w := atomicWriter{dir: dir, clock: clk}
			ctx := testCtx(t)
			if _, err := w.write(ctx, initial); err != nil {
				t.Fatal(err)
			}
			before := version(t, dir)
			beforeInfo, err := os.Stat(filepath.Join(dir, before, "a"))
			if err != nil {
				t.Fatal(err)
			}
			clk.Step(time.Second)
			changed, err := w.write(ctx, tt.next)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			after := version(t, dir)
			if tt.changed {
				if after == before {
					t.Errorf("..data still names %s", before)
				}
				if _, err := os.Stat(filepath.Join(dir, before)); !os.IsNotExist(err) {
					t.Errorf("old version %s not removed (%v)", before, err)
				}
				if !strings.HasPrefix(after, "..2026_11_21_10_04_06.") {
					t.Errorf("new version %s not named by the clock's time", after)
				}
			} else {
				if after != before {
					t.Errorf("..data moved from %s to %s with nothing to write", before, after)
				}
				afterInfo, err := os.Stat(filepath.Join(dir, after, "a"))
				if err != nil {
					t.Fatal(err)
				}
				if !os.SameFile(beforeInfo, afterInfo) || !afterInfo.ModTime().Equal(beforeInfo.ModTime()) {
					t.Errorf("file a was rewritten")
				}
			}
			var visible []string
			for _, e := range entries(t, dir) {
				if !strings.HasPrefix(e, "..") {
					name, _, _ := strings.Cut(e, " -> ")
					visible = append(visible, name)
				}
			}
			if !slices.Equal(visible, tt.entries) {
				t.Errorf("user-visible entries = %q, want %q", visible, tt.entries)
			}
			for p, want := range tt.content {
				if got := readVolumeFile(t, dir, p); got != want {
					t.Errorf("%s = %q, want %q", p, got, want)
				}
			}
			for _, p := range tt.gone {
				if _, err := os.Stat(filepath.Join(dir, p)); !os.IsNotExist(err) {
					t.Errorf("%s still there (%v)", p, err)
				}
			}
			// Exactly one version directory is left.
			n := 0
			for _, e := range entries(t, dir) {
				if tsDirPattern.MatchString(e) || strings.HasPrefix(e, "..2026_11_21_10_04_06.") && !strings.Contains(e, "->") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d version directories left: %q", n, entries(t, dir))
			}
		})
	}
}

// What a crash leaves (a ..data_tmp link, an unpublished version, a
// missing user-visible link) is repaired by the next write.
func TestAtomicWriterRecovers(t *testing.T) {
	dir := t.TempDir()
	w := atomicWriter{dir: dir, clock: testingclock.NewFakeClock(t0)}
	ctx := testCtx(t)
	payload := map[string]fileProjection{"a": {data: []byte("1"), mode: 0o644}}
	if _, err := w.write(ctx, payload); err != nil {
		t.Fatal(err)
	}
	v := version(t, dir)

	// A lost user-visible link comes back without a new version.
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if changed, err := w.write(ctx, payload); err != nil || changed {
		t.Fatalf("write = %v, %v; want the link back and no new version", changed, err)
	}
	if got := readVolumeFile(t, dir, "a"); got != "1" || version(t, dir) != v {
		t.Errorf("a = %q, version %s (was %s)", got, version(t, dir), v)
	}

	// A crash mid-write left a link and a version that never got published.
	if err := os.Symlink("nowhere", filepath.Join(dir, dataLinkTmp)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "..2026_11_21_09_00_00.42"), 0o755); err != nil {
		t.Fatal(err)
	}
	payload["a"] = fileProjection{data: []byte("2"), mode: 0o644}
	if changed, err := w.write(ctx, payload); err != nil || !changed {
		t.Fatalf("write = %v, %v", changed, err)
	}
	v2 := version(t, dir)
	want := []string{v2, "..data -> " + v2, "a -> ..data/a"}
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("entries = %q, want %q", got, want)
	}
}

func TestAtomicWriterRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../x", "a/../../b", "..data", "..hidden/x", strings.Repeat("x", 256)} {
		t.Run(p, func(t *testing.T) {
			dir := t.TempDir()
			w := atomicWriter{dir: dir, clock: testingclock.NewFakeClock(t0)}
			_, err := w.write(testCtx(t), map[string]fileProjection{p: {data: []byte("x"), mode: 0o644}})
			if err == nil || !strings.Contains(err.Error(), "invalid path") {
				t.Errorf("write(%q) = %v, want an invalid path error", p, err)
			}
			if got := entries(t, dir); len(got) != 0 {
				t.Errorf("left %q", got)
			}
		})
	}
}
