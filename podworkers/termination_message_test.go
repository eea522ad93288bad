package podworkers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criLine is one line of a CRI log file.
func criLine(stream, tag, content string) string {
	return fmt.Sprintf("2026-01-02T03:04:05.123456789Z %s %s %s\n", stream, tag, content)
}

func TestCRILogContent(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"full lines", []string{criLine("stdout", "F", "one"), criLine("stderr", "F", "two")}, "one\ntwo\n"},
		{"partial joins the next", []string{criLine("stdout", "P", "hel"), criLine("stdout", "P", "lo "), criLine("stdout", "F", "world")}, "hello world\n"},
		{"tags after the first", []string{criLine("stdout", "F:x", "a"), criLine("stdout", "P:y", "b"), criLine("stdout", "F", "c")}, "a\nbc\n"},
		{"empty line", []string{criLine("stdout", "F", "")}, "\n"},
		{"content with spaces", []string{criLine("stdout", "F", "a b  c")}, "a b  c\n"},
		{"unparsable lines skipped", []string{
			"garbage\n",
			"not-a-time stdout F x\n",
			"2026-01-02T03:04:05Z stdout\n",
			criLine("stdout", "F", "kept"),
		}, "kept\n"},
		{"no lines", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines [][]byte
			for _, l := range tt.lines {
				lines = append(lines, []byte(l))
			}
			if got := string(criLogContent(lines)); got != tt.want {
				t.Errorf("criLogContent = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTailCRILog(t *testing.T) {
	numbered := func(n, width int) (string, []string) {
		var file strings.Builder
		contents := make([]string, n)
		for i := range n {
			c := fmt.Sprintf("%0*d", width, i)
			contents[i] = c + "\n"
			file.WriteString(criLine("stdout", "F", c))
		}
		return file.String(), contents
	}
	last := func(contents []string, lines, bytes int) string {
		s := strings.Join(contents[max(0, len(contents)-lines):], "")
		if len(s) > bytes {
			s = s[len(s)-bytes:]
		}
		return s
	}
	few, fewC := numbered(5, 3)
	// More than 80 lines, whose last 80 hold less than 2048 bytes.
	many, manyC := numbered(200, 3)
	// The last 80 lines hold far more than 2048 bytes.
	long, longC := numbered(300, 1000)
	// A file much larger than the first window read.
	big, bigC := numbered(7000, 9)
	// Lines longer than the first window: it must grow.
	huge := strings.Repeat(criLine("stdout", "F", strings.Repeat("x", 100000)), 3)
	tests := []struct {
		name string
		file string
		want string
	}{
		{"few lines", few, last(fewC, 80, 2048)},
		{"last 80 lines", many, last(manyC, 80, 2048)},
		{"last 2048 bytes of them", long, last(longC, 80, 2048)},
		{"large file", big, last(bigC, 80, 2048)},
		{"lines longer than the window", huge, strings.Repeat("x", 2047) + "\n"},
		{"partial lines count as lines", strings.Repeat(criLine("stdout", "P", "ab"), 100) + criLine("stdout", "F", "end"),
			strings.Repeat("ab", 79) + "end\n"},
		{"empty file", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := tailCRILog(path, 80, 2048)
			if err != nil {
				t.Fatalf("tailCRILog: %v", err)
			}
			if got != tt.want {
				t.Errorf("tailCRILog = %q (%d bytes)\nwant %q (%d bytes)", abbrev(got), len(got), abbrev(tt.want), len(tt.want))
			}
		})
	}
	if _, err := tailCRILog(filepath.Join(t.TempDir(), "missing.log"), 80, 2048); err == nil {
		t.Error("tailCRILog of a missing file: no error")
	}
}

func abbrev(s string) string {
	if len(s) > 200 {
		return s[:100] + "..." + s[len(s)-100:]
	}
	return s
}

func TestReadTerminationMessage(t *testing.T) {
	long := strings.Repeat("a", 5000) + "THE END"
	tests := []struct {
		name     string
		policy   v1.TerminationMessagePolicy
		path     string // the container's terminationMessagePath
		file     *string
		log      *string
		exitCode int32
		reason   string
		want     string
	}{
		{name: "file", policy: v1.TerminationMessageReadFile, file: ptrTo("bye"), exitCode: 3, want: "bye"},
		{name: "file keeps its last 4096 bytes", policy: v1.TerminationMessageReadFile, file: &long, want: long[len(long)-4096:]},
		{name: "empty file", policy: v1.TerminationMessageReadFile, file: ptrTo(""), log: ptrTo(criLine("stdout", "F", "log")), exitCode: 1, want: ""},
		{name: "missing file", policy: v1.TerminationMessageReadFile, exitCode: 1, want: ""},
		{name: "fallback: empty file, failed", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptrTo(""), log: ptrTo(criLine("stdout", "F", "boom")), exitCode: 1, want: "boom\n"},
		{name: "fallback: empty file, succeeded", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptrTo(""), log: ptrTo(criLine("stdout", "F", "fine")), exitCode: 0, want: ""},
		{name: "fallback: file wins", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptrTo("written"), log: ptrTo(criLine("stdout", "F", "boom")), exitCode: 1, want: "written"},
		{name: "fallback: missing file", policy: v1.TerminationMessageFallbackToLogsOnError, log: ptrTo(criLine("stderr", "F", "boom")), exitCode: 2, want: "boom\n"},
		{name: "fallback: no path", policy: v1.TerminationMessageFallbackToLogsOnError, path: "-", log: ptrTo(criLine("stderr", "F", "boom")), exitCode: 2, want: "boom\n"},
		{name: "fallback: could not run", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptrTo(""), log: ptrTo(criLine("stdout", "F", "boom")), exitCode: 128, reason: "ContainerCannotRun", want: ""},
		{name: "fallback: no log", policy: v1.TerminationMessageFallbackToLogsOnError, file: ptrTo(""), exitCode: 1, want: "Error on reading termination message from logs: open log file "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podDir, logDir := t.TempDir(), t.TempDir()
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.TerminationMessagePolicy = tt.policy
				c.TerminationMessagePath = "/dev/termination-log"
				if tt.path == "-" {
					c.TerminationMessagePath = ""
				}
			})
			cs := ctrStatus(pod, "app", "c1", runtimeapi.ContainerState_CONTAINER_EXITED, 2, tt.exitCode, t0)
			cs.Reason = tt.reason
			if tt.file != nil {
				writeFile(t, terminationMessageFile(podDir, "app", 2), *tt.file)
			}
			if tt.log != nil {
				writeFile(t, filepath.Join(logDir, "app", "2.log"), *tt.log)
			}
			got := readTerminationMessage(pod, cs, podDir, logDir)
			if strings.HasSuffix(tt.want, " ") {
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("message = %q, want it to start with %q", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("message = %q, want %q", abbrev(got), abbrev(tt.want))
			}
		})
	}
}

func ptrTo(s string) *string { return &s }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTerminationMessagesFill(t *testing.T) {
	podDir, logDir := t.TempDir(), t.TempDir()
	pod := newPod("web", []string{"app", "side"}, func(p *v1.Pod) {
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].TerminationMessagePath = "/dev/termination-log"
			p.Spec.Containers[i].TerminationMessagePolicy = v1.TerminationMessageReadFile
		}
	})
	exited := ctrStatus(pod, "app", "app-0", runtimeapi.ContainerState_CONTAINER_EXITED, 0, 3, t0)
	exited.Message = "OOMKilled by the runtime"
	running := ctrStatus(pod, "side", "side-0", runtimeapi.ContainerState_CONTAINER_RUNNING, 0, 0, t0)
	writeFile(t, terminationMessageFile(podDir, "app", 0), "bye")
	writeFile(t, terminationMessageFile(podDir, "side", 0), "not read: still running")
	status := podStatus(pod, nil, exited, running)

	var m terminationMessages
	got := m.fill(pod, status, podDir, logDir)
	if got == status {
		t.Fatal("fill returned the cached status itself; want a copy")
	}
	if exited.Message != "OOMKilled by the runtime" {
		t.Errorf("the input status was modified: %q", exited.Message)
	}
	if msg := got.FindContainer("app").Message; msg != "OOMKilled by the runtime: bye" {
		t.Errorf("app message = %q, want the runtime's then the file's", msg)
	}
	if got.FindContainer("side") != running {
		t.Error("the running container's status was copied")
	}

	// Read once: a later change of the file is not seen.
	writeFile(t, terminationMessageFile(podDir, "app", 0), "changed")
	if msg := m.fill(pod, status, podDir, logDir).FindContainer("app").Message; msg != "OOMKilled by the runtime: bye" {
		t.Errorf("second fill: message = %q, want the one read first", msg)
	}

	// No exited container with a message: the status itself.
	quiet := podStatus(pod, nil, running)
	if m.fill(pod, quiet, podDir, logDir) != quiet {
		t.Error("fill copied a status it had nothing to add to")
	}
	m.mu.Lock()
	if _, ok := m.byPod[pod.UID]; ok {
		t.Error("the messages of containers gone from the status are still held")
	}
	m.mu.Unlock()

	m.fill(pod, status, podDir, logDir)
	m.forget(pod.UID)
	m.mu.Lock()
	if len(m.byPod) != 0 {
		t.Errorf("forget left %v", m.byPod)
	}
	m.mu.Unlock()
}

func TestAddTerminationMessageMount(t *testing.T) {
	podDir := t.TempDir()
	c := &v1.Container{Name: "app", TerminationMessagePath: "/dev/termination-log"}
	path := terminationMessageFile(podDir, "app", 4)
	writeFile(t, path, "left by an earlier container")

	cfg := &runtimeapi.ContainerConfig{}
	if err := addTerminationMessageMount(cfg, podDir, c, 4); err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.Mount{ContainerPath: "/dev/termination-log", HostPath: filepath.Join(podDir, "containers", "app", "4")}
	if len(cfg.Mounts) != 1 || cfg.Mounts[0].String() != want.String() {
		t.Errorf("mounts = %v, want %v", cfg.Mounts, want)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 || fi.Mode().Perm() != 0o666 {
		t.Errorf("file size %d mode %v, want empty and 0666", fi.Size(), fi.Mode().Perm())
	}

	cfg = &runtimeapi.ContainerConfig{}
	if err := addTerminationMessageMount(cfg, podDir, &v1.Container{Name: "quiet"}, 0); err != nil || len(cfg.Mounts) != 0 {
		t.Errorf("no terminationMessagePath: mounts %v, err %v; want none", cfg.Mounts, err)
	}
}

// Through the syncer: the container is created with its termination
// message mount, and once it has exited the file's content is reported
// as its message.
func TestSyncTerminationMessage(t *testing.T) {
	f := newSyncer(t)
	pod := newPod("web", []string{"app"}, withRestartPolicy(v1.RestartPolicyNever), func(p *v1.Pod) {
		p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
		p.Spec.Containers[0].TerminationMessagePolicy = v1.TerminationMessageReadFile
	})
	f.observe(t, pod)
	f.mustSync(t, pod)
	f.rt.mu.Lock()
	created := f.rt.created
	f.rt.mu.Unlock()
	// The pod's /etc/hosts, then the termination message file.
	if len(created) != 1 || len(created[0].Mounts) != 2 || created[0].Mounts[0].ContainerPath != "/etc/hosts" {
		t.Fatalf("created %v, want one container with two mounts", created)
	}
	host := created[0].Mounts[1].HostPath
	if host != filepath.Join(f.root, "pods", string(pod.UID), "containers", "app", "0") {
		t.Errorf("termination message file %s", host)
	}
	if err := os.WriteFile(host, []byte("bye"), 0o600); err != nil {
		t.Fatal(err)
	}
	id := containerID(pod, 0, "app", 0)
	f.exit(t, id, 3, t0, t0.Add(time.Second))
	f.observe(t, pod)
	f.mustSync(t, pod)
	cs := f.status.last(t).status.FindContainer("app")
	if cs == nil || cs.Message != "bye" {
		t.Errorf("reported status %+v, want message bye", cs)
	}
	if cached := f.cached(t, pod).FindContainer("app"); cached.Message != "" {
		t.Errorf("the cache's status was modified: message %q", cached.Message)
	}
}
