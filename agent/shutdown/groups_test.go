package shutdown

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestGroupPods(t *testing.T) {
	tests := []struct {
		name         string
		pod          *v1.Pod
		wantCritical bool
		// wantGrace is the pod's grace period with 20s in all, 5s of them
		// for critical pods.
		wantGrace int64
	}{
		{"no priority", pod("a"), false, 15},
		{"own grace shorter", pod("a", grace(4)), false, 4},
		{"own grace longer", pod("a", grace(60)), false, 15},
		{"own grace zero", pod("a", grace(0)), false, 0},
		{"negative own grace", pod("a", grace(-1)), false, 0},
		{"other priority class", pod("a", priorityClass("high")), false, 15},
		{"system-node-critical", pod("a", priorityClass("system-node-critical")), true, 5},
		{"system-cluster-critical", pod("a", priorityClass("system-cluster-critical"), grace(2)), true, 2},
		{"priority below critical", pod("a", priority(1999999999)), false, 15},
		{"priority critical", pod("a", priority(2000000000)), true, 5},
		{"priority of system-node-critical", pod("a", priority(2000001000)), true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups := groupPods([]*v1.Pod{tt.pod}, 20*time.Second, 5*time.Second)
			if len(groups) != 2 || groups[0].name != "regular" || groups[1].name != "critical" {
				t.Fatalf("groups %+v, want regular then critical", groups)
			}
			g := groups[0]
			if tt.wantCritical {
				g = groups[1]
			}
			if len(g.pods) != 1 {
				t.Fatalf("pod not in the %s group: %+v", g.name, groups)
			}
			if got := g.podGracePeriod(tt.pod); got != tt.wantGrace {
				t.Errorf("grace period %d, want %d", got, tt.wantGrace)
			}
		})
	}
}

func TestWriteDropIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logind.conf.d")
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{20 * time.Second, "InhibitDelayMaxSec=20\n"},
		{1500 * time.Millisecond, "InhibitDelayMaxSec=2\n"},
	} {
		path, err := writeDropIn(dir, tt.d)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, "99-minikubelet.conf") {
			t.Errorf("path %s", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := "[Login]\n" + tt.want; len(b) < len(want) || string(b[len(b)-len(want):]) != want {
			t.Errorf("drop-in for %v:\n%s\nwant it to end with:\n%s", tt.d, b, want)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want 0644", fi.Mode())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the drop-in dir, want only the drop-in", len(entries))
	}
}
