package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// A config file the agent cannot use stops the start with exit code 2, as
// a bad flag does.
func TestBadConfigFileExitsWith2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	tests := []struct {
		name string
		path string
	}{
		{"missing file", filepath.Join(dir, "missing.yaml")},
		{"not YAML", write("bad.yaml", "{{{")},
		{"wrong kind", write("kind.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n")},
		{"unknown field", write("typo.yaml", header+"staticPodPat: /x\n")},
		{"negative port", write("port.yaml", header+"readOnlyPort: -1\n")},
		{"bad duration", write("dur.yaml", header+"syncFrequency: soon\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code := run([]string{"--config", tt.path}); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
		})
	}
}

// A config file with several mistakes reports them all at once, one line
// each, each after the same prefix and naming the file and the field, in
// the order of the fields' names.
func TestConfigFileMistakesAllAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	content := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" +
		"syncFrequency: 5x\nreadOnlyPort: -5\nstaticPodPat: /etc/x\nmaxPods: \"abc\"\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	code := run([]string{"--config", path})
	os.Stderr = stderr
	_ = w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	fields := []string{"maxPods", "readOnlyPort", "staticPodPat", "syncFrequency"}
	if len(lines) != len(fields) {
		t.Fatalf("want one line per mistake (%v), got:\n%s", fields, out)
	}
	for i, f := range fields {
		if prefix := "minikubelet: config file " + path + ": " + f + ": "; !strings.HasPrefix(lines[i], prefix) {
			t.Errorf("line %d is %q, want it to start with %q", i, lines[i], prefix)
		}
	}
}

// The agent collects garbage at defaultGCPercent unless GOGC says
// otherwise, which the runtime honours.
func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	setGCPercent(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GC percent without GOGC = %d, want %d", got, defaultGCPercent)
	}
	setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set, setGCPercent changed the percent to %d; it must leave the runtime's", got)
	}
}
