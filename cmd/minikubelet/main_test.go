package main

import (
	"os"
	"path/filepath"
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
