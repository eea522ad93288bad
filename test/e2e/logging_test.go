package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// TestDefaultVerbositySaysWhatHappens: at its default verbosity the agent
// says, once each and with the pod and its source, that a pod was added,
// updated (by `sed -i`, which writes a temp file and renames it over the
// manifest), that its containers started, were killed and restarted, and
// that the pod was removed and terminated; it says nothing of sed's temp
// file, and logs no error.
func TestDefaultVerbositySaysWhatHappens(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt, "-v", "0")
		manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: told
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "echo one; exec sleep 3600"]
`, env.busybox)
		a.writeManifest("told.yaml", manifest)
		before := a.waitRunning("told", 60*time.Second)
		firstID := containerStatus(before, "app").ContainerID

		sed := exec.Command("sed", "-i", "s/echo one/echo two/", filepath.Join(a.manifest, "told.yaml"))
		if out, err := sed.CombinedOutput(); err != nil {
			t.Fatalf("sed -i: %v: %s", err, out)
		}
		polltest.Until(t, 60*time.Second, "app restarted with the edited command", func() (bool, string) {
			p := a.pod("told")
			cs := containerStatus(p, "app")
			return cs != nil && cs.ContainerID != firstID && cs.State.Running != nil, describe(p)
		})

		a.removeManifest("told.yaml")
		podName := a.podName("told")
		polltest.Until(t, 60*time.Second, "the pod terminated", func() (bool, string) {
			return a.logContains("Pod terminated"), "no \"Pod terminated\" line yet"
		})

		data, err := os.ReadFile(a.logPath)
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		ofPod := func(msg string) []string {
			var out []string
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, `"`+msg+`"`) && strings.Contains(l, `pod="default/`+podName+`"`) {
					out = append(out, l)
				}
			}
			return out
		}
		for _, want := range []struct {
			msg   string
			times int
		}{
			{"Pod added", 1},
			{"Started container", 1},
			{"Pod updated", 1},
			// Once for the edit, once for the removal.
			{"Killing container", 2},
			{"Restarted container", 1},
			{"Pod removed", 1},
			{"Terminating pod", 1},
			{"Pod terminated: its sandbox, volumes and cgroup are gone", 1},
		} {
			lines := ofPod(want.msg)
			if len(lines) != want.times {
				t.Errorf("%q logged %d times for the pod at -v=0, want %d:\n%s", want.msg, len(lines), want.times, strings.Join(lines, "\n"))
			}
			for _, l := range lines {
				if !strings.Contains(l, `source="file"`) {
					t.Errorf("line does not name the pod's source: %s", l)
				}
			}
		}
		if l := ofPod("Pod added"); len(l) == 1 && !strings.Contains(l[0], `origin="`+filepath.Join(a.manifest, "told.yaml")+`"`) {
			t.Errorf("the added line does not name the manifest: %s", l[0])
		}
		// sed -i writes its temp file (sedXXXXXX) beside the manifest.
		if m := regexp.MustCompile(`.*\bsed[A-Za-z0-9]{6}\b.*`).FindString(log); m != "" {
			t.Errorf("sed's temp file logged at -v=0: %s", m)
		}
		for _, l := range strings.Split(log, "\n") {
			if strings.HasPrefix(l, "E") {
				t.Errorf("error logged in a normal run: %s", l)
			}
		}
	})
}
