package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

func sleeperPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, name, env.busybox)
}

// revisionPod is sleeperPod at revision rev: its container's REV env, so
// that an edit changes the pod.
func revisionPod(name string, rev int) string {
	return sleeperPod(name) + fmt.Sprintf(`    env:
    - name: REV
      value: "%d"
`, rev)
}

// The file source's cases: an in-place rewrite, ignored names, a symlinked
// manifest, a directory that appears after start, and the periodic rescan
// catching a change no notification reports (an edit of a symlink's
// target).
func TestFileSourceCases(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		// The manifest directory does not exist when the agent starts.
		a := startAgentWith(t, rt, agentOptions{missingManifestDir: true, args: []string{"--file-check-frequency", "2s"}})
		if err := os.Mkdir(a.manifest, 0o755); err != nil {
			t.Fatal(err)
		}
		a.writeManifest("late.yaml", sleeperPod("late"))
		a.waitRunning("late", 60*time.Second)

		// In-place rewrite (truncate and write, no rename).
		path := filepath.Join(a.manifest, "late.yaml")
		rewritten := strings.Replace(sleeperPod("late"), "metadata:\n", "metadata:\n  labels:\n    rewritten: \"yes\"\n", 1)
		if err := os.WriteFile(path, []byte(rewritten), 0o644); err != nil {
			t.Fatal(err)
		}
		polltest.Until(t, 5*time.Second, "in-place rewrite seen", func() (bool, string) {
			p := a.pod("late")
			return p != nil && p.Labels["rewritten"] == "yes", fmt.Sprint(p)
		})

		// Ignored names: dot files, editor backups and swap files.
		for _, name := range []string{".hidden.yaml", "backup.yaml~", ".late.yaml.swp", "notes.txt"} {
			if err := os.WriteFile(filepath.Join(a.manifest, name), []byte(sleeperPod("ignored")), 0o644); err != nil {
				t.Fatal(err)
			}
		}

		// A symlink to a manifest outside the directory is followed.
		outside := filepath.Join(a.dir, "elsewhere.yaml")
		if err := os.WriteFile(outside, []byte(sleeperPod("linked")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(a.manifest, "linked.yaml")); err != nil {
			t.Fatal(err)
		}
		a.waitRunning("linked", 60*time.Second)
		if p := a.pod("ignored"); p != nil {
			t.Errorf("a pod from an ignored file runs: %s", p.Name)
		}

		// Editing the target is invisible to the directory watch; the
		// rescan (every 2s here) picks it up.
		relabelled := strings.Replace(sleeperPod("linked"), "metadata:\n", "metadata:\n  labels:\n    via: rescan\n", 1)
		if err := os.WriteFile(outside, []byte(relabelled), 0o644); err != nil {
			t.Fatal(err)
		}
		polltest.Until(t, 10*time.Second, "rescan sees the symlink target's edit", func() (bool, string) {
			p := a.pod("linked")
			return p != nil && p.Labels["via"] == "rescan", fmt.Sprint(p)
		})

		// Removing the directory removes its pods.
		if err := os.RemoveAll(a.manifest); err != nil {
			t.Fatal(err)
		}
		polltest.Until(t, 15*time.Second, "pods of a removed directory gone", func() (bool, string) {
			pods, err := a.pods()
			return err == nil && len(pods) == 0, fmt.Sprintf("%d pods, %v", len(pods), err)
		})
	})
}

// manifestServer is a real HTTP server whose answer a test changes.
type manifestServer struct {
	*httptest.Server
	mu      sync.Mutex
	status  int
	body    string
	headers []http.Header
}

func newManifestServer(t *testing.T) *manifestServer {
	s := &manifestServer{status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.headers = append(s.headers, r.Header.Clone())
		w.WriteHeader(s.status)
		_, _ = w.Write([]byte(s.body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *manifestServer) set(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *manifestServer) sawHeader(key, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.headers {
		if h.Get(key) == value {
			return true
		}
	}
	return false
}

func podList(pods ...string) string {
	var items []string
	for _, p := range pods {
		items = append(items, "- "+strings.ReplaceAll(strings.TrimPrefix(p, "\n"), "\n", "\n  "))
	}
	return "apiVersion: v1\nkind: PodList\nitems:\n" + strings.Join(items, "\n")
}

// manifestErrors returns /manifests/errors.
func (a *agent) manifestErrors() []map[string]string {
	a.t.Helper()
	body, code, err := a.local("/manifests/errors")
	if err != nil || code != 200 {
		a.t.Fatalf("/manifests/errors: %d %v", code, err)
	}
	var out struct {
		Errors []map[string]string `json:"errors"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		a.t.Fatal(err)
	}
	return out.Errors
}

// The HTTP source against a real local server: a PodList runs, headers are
// sent, an edit updates the same pod, and a server error, a bad body or a
// server that is gone keep the last good set running with the error
// reported; a pod with the same name as a file's pod is refused, naming
// both origins.
func TestHTTPSource(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		srv := newManifestServer(t)
		srv.set(200, podList(sleeperPod("from-url"), sleeperPod("clash")))
		a := startAgentWith(t, rt, agentOptions{args: []string{
			"--manifest-url", srv.URL + "/pods.yaml",
			"--manifest-url-header", "Authorization:Bearer s3cret,X-Node:test",
			"--http-check-frequency", "1s",
		}})
		// A file pod with the name the URL also serves: the first one seen
		// keeps running.
		a.writeManifest("clash.yaml", sleeperPod("clash"))
		before := a.waitRunning("from-url", 60*time.Second)
		a.waitRunning("clash", 60*time.Second)
		if before.Annotations["kubernetes.io/config.source"] != "http" {
			t.Errorf("config.source = %q, want http", before.Annotations["kubernetes.io/config.source"])
		}
		if !srv.sawHeader("Authorization", "Bearer s3cret") || !srv.sawHeader("X-Node", "test") {
			t.Errorf("the server did not get the --manifest-url-header headers")
		}
		polltest.Until(t, 10*time.Second, "the clash reported", func() (bool, string) {
			for _, e := range a.manifestErrors() {
				if strings.Contains(e["error"], "clash") && strings.Contains(e["error"], "clash.yaml") && strings.Contains(e["error"], srv.URL) {
					return true, ""
				}
			}
			return false, fmt.Sprint(a.manifestErrors())
		})

		// An edit of the body updates the same pod (same UID).
		edited := strings.Replace(sleeperPod("from-url"), "metadata:\n", "metadata:\n  labels:\n    edited: \"true\"\n", 1)
		srv.set(200, podList(edited))
		polltest.Until(t, 10*time.Second, "edit from the URL", func() (bool, string) {
			p := a.pod("from-url")
			return p != nil && p.Labels["edited"] == "true", fmt.Sprint(p)
		})
		if p := a.pod("from-url"); p.UID != before.UID {
			t.Errorf("UID changed on edit: %s -> %s", before.UID, p.UID)
		}
		id := containerStatus(a.pod("from-url"), "main").ContainerID

		// Failures keep the last good set running, each reported.
		failures := []struct {
			name   string
			set    func()
			reason string
		}{
			{"server error", func() { srv.set(500, "oops") }, "500"},
			{"bad body", func() {
				srv.set(200, "apiVersion: v1\nkind: PodList\nitems:\n- kind: Pod\n  apiVersion: v1\n  metadata: {name: x}\n")
			}, "items[0]"},
			{"server gone", func() { srv.Close() }, "connect"},
		}
		for _, f := range failures {
			f.set()
			polltest.Until(t, 10*time.Second, f.name+" reported", func() (bool, string) {
				for _, e := range a.manifestErrors() {
					if e["source"] == "http" && strings.Contains(e["error"], f.reason) {
						return true, ""
					}
				}
				return false, fmt.Sprint(a.manifestErrors())
			})
			p := a.pod("from-url")
			if p == nil || !allRunning(p) || containerStatus(p, "main").ContainerID != id {
				t.Fatalf("after %s the URL's pod was disturbed: %v", f.name, p)
			}
		}
		if body, _, _ := a.get(a.port, "/metrics"); !strings.Contains(body, `minikubelet_manifest_errors_total{source="http"}`) {
			t.Errorf("/metrics lacks minikubelet_manifest_errors_total for http")
		}
	})
}
