package volumes

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// subPathOf refuses what would leave the volume, whether written in
// subPath or produced by expanding subPathExpr with the container's env:
// validation can check only the expression, not what it expands to.
func TestSubPathOfRefusesEscapes(t *testing.T) {
	env := map[string]string{"UP": "..", "ABS": "/etc", "MIXED": "a/../../b", "NAME": "web-0", "DOTS": "..."}
	tests := []struct {
		name     string
		sub      string
		expr     string
		want     string
		wantErrs string
	}{
		{name: "plain", sub: "a/b", want: "a/b"},
		{name: "expression", expr: "logs/$(NAME)", want: "logs/web-0"},
		{name: "dots that are a name", expr: "$(DOTS)/x", want: ".../x"},
		{name: "subPath ../../etc", sub: "../../etc", wantErrs: `subPath "../../etc" must not contain '..'`},
		{name: "subPath absolute", sub: "/etc", wantErrs: `subPath "/etc" must be a relative path`},
		{name: "expression expanding to ..", expr: "$(UP)", wantErrs: `subPath ".." must not contain '..'`},
		{name: "expression expanding to ../x", expr: "$(UP)/x", wantErrs: `subPath "../x" must not contain '..'`},
		{name: "expression expanding to a .. inside", expr: "$(MIXED)", wantErrs: `subPath "a/../../b" must not contain '..'`},
		{name: "expression expanding to an absolute path", expr: "$(ABS)/shadow", wantErrs: `subPath "/etc/shadow" must be a relative path`},
		{name: "expression of an unset variable", expr: "$(NOPE)/x", wantErrs: "no value for $(NOPE)"},
		{name: "both", sub: "a", expr: "b", wantErrs: "mutually exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := subPathOf(&v1.VolumeMount{SubPath: tt.sub, SubPathExpr: tt.expr}, env)
			if tt.wantErrs != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrs) {
					t.Fatalf("subPathOf = %q, %v; want an error containing %q", got, err, tt.wantErrs)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("subPathOf = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// FuzzSubPath resolves fuzzed subPaths and subPathExprs (with fuzzed env
// values) as a container's mount would, inside a volume holding symlinks
// that lead in, out, up and round in circles: whatever it resolves is
// inside the volume, and what subPathOf returns is relative and free of
// "..". Nothing is mounted, so it runs without root.
func FuzzSubPath(f *testing.F) {
	for _, s := range []struct{ sub, expr, val string }{
		{"a/b", "", ""}, {"", "$(V)", ".."}, {"", "$(V)/x", "/etc"}, {"", "x/$(V)", "in/../../out"},
		{"in/x", "", ""}, {"out/passwd", "", ""}, {"up/etc", "", ""}, {"absin/x", "", ""}, {"loop/x", "", ""},
		{"chain", "", ""}, {"file/x", "", ""}, {"./a//b/./", "", ""}, {"", "$$(V)$(V", "v"}, {"new/" + strings.Repeat("d/", 50), "", ""},
	} {
		f.Add(s.sub, s.expr, s.val)
	}
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	outside := f.TempDir()
	for _, step := range []func() error{
		func() error { return os.MkdirAll(filepath.Join(root, "a/b"), 0o755) },
		func() error { return os.WriteFile(filepath.Join(root, "file"), nil, 0o644) },
		func() error { return os.Symlink("a/b", filepath.Join(root, "in")) },
		func() error { return os.Symlink(outside, filepath.Join(root, "out")) },
		func() error { return os.Symlink("../..", filepath.Join(root, "up")) },
		func() error { return os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "absin")) },
		func() error { return os.Symlink("loop", filepath.Join(root, "loop")) },
		func() error { return os.Symlink("in/../../up", filepath.Join(root, "chain")) },
		func() error { return os.Symlink("../../..", filepath.Join(root, "a/b/back")) },
	} {
		if err := step(); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, sub, expr, val string) {
		sub, err := subPathOf(&v1.VolumeMount{SubPath: sub, SubPathExpr: expr}, map[string]string{"V": val})
		if err != nil {
			return
		}
		if strings.HasPrefix(sub, "/") || slices.Contains(strings.Split(sub, "/"), "..") {
			t.Fatalf("subPathOf accepted %q", sub)
		}
		if len(sub) > 4096 || strings.IndexByte(sub, 0) >= 0 {
			return // beyond what a path may be; the kernel refuses it
		}
		fd, err := openInside(root, sub)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		got, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err != nil {
			t.Fatal(err)
		}
		if got != root && !strings.HasPrefix(got, root+"/") {
			t.Fatalf("subPath %q resolved to %s, outside the volume %s", sub, got, root)
		}
	})
}
