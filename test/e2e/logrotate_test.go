package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// TestContainerLogRotation: a chatty container's log is rotated at
// --container-log-max-size, at most --container-log-max-files files are
// kept (older rotated ones gzipped), and the container keeps writing to
// the reopened log.
func TestContainerLogRotation(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt, "--container-log-max-size=16Ki", "--container-log-max-files=3", "--container-log-monitor-interval=1s")
		a.writeManifest("chatty.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: chatty
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  containers:
  - name: talk
    image: %s
    command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo line-$i-%s; sleep 0.02; done"]
`, env.busybox, strings.Repeat("x", 200)))
		pod := a.waitRunning("chatty", 60*time.Second)
		dir := filepath.Dir(a.containerLog(pod, "talk", 0))
		list := func() []string {
			entries, _ := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				// A rotated file being compressed shows for a moment as
				// X, X.gz.tmp and X.gz: count it once.
				n := strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".tmp"), ".gz")
				if len(names) == 0 || names[len(names)-1] != n {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			return names
		}
		polltest.Until(t, 60*time.Second, "two rotations, one of them gzipped", func() (bool, string) {
			entries, _ := os.ReadDir(dir)
			var names []string
			gz := 0
			for _, e := range entries {
				names = append(names, e.Name())
				if strings.HasSuffix(e.Name(), ".gz") {
					gz++
				}
			}
			return len(names) == 3 && gz == 1, strings.Join(names, " ")
		})
		// Keep watching: never more than 3 files, and the current log keeps
		// growing (the runtime reopened it).
		for range 5 {
			time.Sleep(time.Second)
			if names := list(); len(names) > 3 {
				t.Fatalf("%d log files: %v", len(names), names)
			}
		}
		// The current log is briefly absent while it is rotated (renamed,
		// then reopened by the runtime): wait for it to be back and written.
		polltest.Until(t, 10*time.Second, "the runtime writing the current log again", func() (bool, string) {
			st, err := os.Stat(filepath.Join(dir, "0.log"))
			if err != nil {
				return false, err.Error()
			}
			return st.Size() > 0, fmt.Sprintf("%d bytes", st.Size())
		})
		// A rotation can land between the check above and this read, leaving
		// the current log empty for a moment: read until a line is there.
		polltest.Until(t, 10*time.Second, "the last line through `minikubelet logs`", func() (bool, string) {
			out, _, err := a.cli("logs", "chatty", "--tail", "1")
			if err != nil {
				return false, err.Error()
			}
			return strings.HasPrefix(out, "line-"), fmt.Sprintf("%q", out)
		})
	})
}
