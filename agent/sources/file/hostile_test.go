package file

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/agent/manifest"
)

// TestHostileManifest puts one hostile file among good manifests: the good
// pods are delivered at once, the hostile file is reported (once its quiet
// period passed) with a short error naming the problem, and the source
// keeps running.
func TestHostileManifest(t *testing.T) {
	laughs := func() string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: m\n  annotations:\n    l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n")
		for i := 1; i < 10; i++ {
			fmt.Fprintf(&b, "    l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
		}
		return b.String()
	}
	aliased := func() string {
		var b strings.Builder
		b.WriteString(podYAML("m", "x:1") + "    env:\n    - {name: V0, value: &v " + strings.Repeat("a", 1<<20) + "}\n")
		for i := 1; i <= 20; i++ {
			fmt.Fprintf(&b, "    - {name: V%d, value: *v}\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name    string
		content func() string
		// wantErr is a substring of the error reported for m.yaml; empty
		// when the file is not reported (it is not read).
		wantErr string
		// link makes m.yaml a symlink to this path instead of a file.
		link string
	}{
		{name: "billion laughs", content: laughs, wantErr: "document contains excessive aliasing"},
		{name: "a megabyte aliased 20 times", content: aliased, wantErr: "aliases (*name) expand it to more than"},
		{name: "over MaxSize", content: func() string { return podYAML("m", "x:1") + "#" + strings.Repeat("x", manifest.MaxSize) },
			wantErr: "manifest is larger than 10485760 bytes"},
		{name: "invalid UTF-8", content: func() string { return podYAML("m\xff", "x:1") }, wantErr: "not valid UTF-8: line 4"},
		{name: "10,000 brackets deep", content: func() string {
			return podYAML("m", "x:1") + "    args: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "\n"
		}, wantErr: "nests more than 100 levels deep"},
		{name: "a million empty containers", content: func() string {
			return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"m"},"spec":{"containers":[` + strings.TrimSuffix(strings.Repeat("{},", 1e6), ",") + `]}}`
		}, wantErr: "the manifest holds more than 10000 containers"},
		{name: "a quantity of a million digits", content: func() string {
			return podYAML("m", "x:1") + "    resources: {limits: {memory: \"1" + strings.Repeat("0", 1e6) + "\"}}\n"
		}, wantErr: "resources.limits[memory]: the quantity is 1000001 characters long"},
		{name: "hostPath traversal", content: func() string {
			return podYAML("m", "x:1") + "    volumeMounts: [{name: h, mountPath: /h}]\n  volumes: [{name: h, hostPath: {path: /var/../etc}}]\n"
		}, wantErr: `spec.volumes[0].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`},
		{name: "binary", content: func() string { return "\x7fELF\x02\x01\x01\x00\x00\x00" + strings.Repeat("\x00\xff", 1000) }, wantErr: "not valid UTF-8"},
		{name: "a symlink to /dev/zero", link: "/dev/zero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "a.yaml"), podYAML("a", "a:1"))
			write(t, filepath.Join(dir, "z.yaml"), podYAML("z", "z:1"))
			if tt.link != "" {
				if err := os.Symlink(tt.link, filepath.Join(dir, "m.yaml")); err != nil {
					t.Fatal(err)
				}
			} else {
				write(t, filepath.Join(dir, "m.yaml"), tt.content())
			}
			h := start(t, dir, long)
			good := []string{"a-node1=a:1", "z-node1=z:1"}
			h.expect(0, snap{pods: good})
			if tt.wantErr == "" {
				// Nothing more to report: a rescan sends nothing new.
				h.clock.Step(long)
				select {
				case u := <-h.updates:
					t.Fatalf("unexpected Update %v", summarize(u))
				case <-time.After(200 * time.Millisecond):
				}
				return
			}
			u := h.expect(tick, snap{pods: good, errs: []string{"m.yaml"}})
			msg := u.Errors[0].Err.Error()
			if !strings.Contains(msg, tt.wantErr) {
				t.Errorf("error = %.2000q, want it to contain %q", msg, tt.wantErr)
			}
			if len(msg) > 8<<10 || strings.Contains(msg, "\n") {
				t.Errorf("error is %d bytes and %d lines, want one short line", len(msg), strings.Count(msg, "\n")+1)
			}
		})
	}
}
