package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Bad manifests beside good ones: each is reported once, naming the file
// and the field; the good pods keep running untouched; a pod whose manifest
// turns bad keeps running its last good version; the agent stays up.
func TestMalformedManifestBesideGoodOnes(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		good := fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: good
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sleep", "3600"]
`, env.busybox)
		a.writeManifest("good.yaml", good)
		before := a.waitRunning("good", 60*time.Second)
		id := containerStatus(before, "main").ContainerID

		bad := []struct {
			file, content string
			// want are strings the log line must hold besides the file.
			want []string
		}{
			{"not-yaml.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", nil},
			{"service.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n", []string{"kind"}},
			{"no-image.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: noimage\nspec:\n  containers:\n  - name: main\n", []string{"spec.containers[0].image"}},
			{"typo.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"typo"},"spec":{"containers":[{"name":"main","imagee":"x"}]}}`, []string{"spec.containers[0].imagee"}},
			{"dup.yml", fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: dup\nspec:\n  containers:\n  - name: app\n    image: %[1]s\n  - name: app\n    image: %[1]s\n", env.busybox), []string{"spec.containers[1].name", "Duplicate value"}},
		}
		for _, b := range bad {
			a.writeManifest(b.file, b.content)
		}
		for _, b := range bad {
			polltest.Until(t, 10*time.Second, "error for "+b.file, func() (bool, string) {
				line := a.logLineWith(b.file)
				if line == "" {
					return false, "no log line names the file"
				}
				for _, w := range b.want {
					if !strings.Contains(line, w) {
						return false, fmt.Sprintf("log line %q lacks %q", line, w)
					}
				}
				return true, ""
			})
		}

		// The good pod was not touched, and no bad one was started.
		pods, err := a.pods()
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 1 || pods[0].Name != a.podName("good") {
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
			}
			t.Errorf("/pods lists %v, want only the good pod", names)
		}
		if got := containerStatus(a.pod("good"), "main").ContainerID; got != id {
			t.Errorf("good pod's container changed from %s to %s", id, got)
		}

		// The good file turns bad: its last good version keeps running.
		a.writeManifest("good.yaml", strings.Replace(good, "containers:", "containerz:", 1))
		polltest.Until(t, 10*time.Second, "error for good.yaml", func() (bool, string) {
			line := a.logLineWith("good.yaml")
			return strings.Contains(line, "containerz"), line
		})
		// Give a wrong reaction time to happen: two relist periods.
		time.Sleep(2 * time.Second)
		after := a.pod("good")
		if after == nil || !allRunning(after) || containerStatus(after, "main").ContainerID != id {
			t.Fatalf("the pod of a manifest that turned bad was disturbed: %v", after)
		}
		if !a.alive() {
			t.Fatal("the agent exited")
		}
		if body, code, err := a.get(a.healthz, "/healthz"); err != nil || code != 200 {
			t.Errorf("/healthz: %d %q %v", code, body, err)
		}
		// Each bad file is reported once, not at every rescan.
		if n := a.countLogLines("not-yaml.yaml"); n != 1 {
			t.Errorf("not-yaml.yaml reported %d times, want once", n)
		}
	})
}
