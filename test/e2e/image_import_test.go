package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Helpers of TestImageImport: archives as docker save writes them, and
// containerd's own tool (ctr, of the runtime's build) to check what the
// agent imported against what containerd makes of the same archives.

// writeDockerSavePlain writes the image of the OCI layout tarball src as
// "docker save | gzip" does, tagged ref: its layers uncompressed, the
// whole tarball gzip-compressed. The uncompressed tarball goes to plain.
func writeDockerSavePlain(t *testing.T, src, ref, plain, dst string) {
	t.Helper()
	writeDockerSave(t, src, ref, plain)
	files, order := readTarFiles(t, plain)
	for name, data := range files {
		if !strings.HasSuffix(name, "/layer.tar") {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("layer %s of %s: %v", name, src, err)
		}
		if files[name], err = io.ReadAll(zr); err != nil {
			t.Fatalf("layer %s of %s: %v", name, src, err)
		}
	}
	writeTarFiles(t, plain, files, order)
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ctr runs the runtime's own ctr against rt in namespace k8s.io and
// returns its output.
func ctr(t *testing.T, rt *ctrdtest.Containerd, bed *ctrdtest.Bed, args ...string) string {
	t.Helper()
	bin := ""
	for _, r := range bed.Runtimes {
		if r.Name == rt.Name() {
			bin = r.Ctr
		}
	}
	if bin == "" {
		t.Fatalf("no ctr for runtime %s in the bed", rt.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--address", rt.Socket(), "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// collectGarbage has containerd collect its garbage now: what no image,
// label or lease holds goes.
func collectGarbage(t *testing.T, rt *ctrdtest.Containerd, bed *ctrdtest.Bed) {
	t.Helper()
	ctr(t, rt, bed, "leases", "create", "--id", "e2e-gc")
	ctr(t, rt, bed, "leases", "delete", "--sync", "e2e-gc")
}

// ctrImageTargets returns the target digest of each image of namespace
// k8s.io, by name, as ctr lists them.
func ctrImageTargets(t *testing.T, rt *ctrdtest.Containerd, bed *ctrdtest.Bed) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(ctr(t, rt, bed, "images", "ls"), "\n")[1:] {
		// REF TYPE DIGEST SIZE PLATFORMS LABELS
		if f := strings.Fields(line); len(f) >= 3 {
			out[f[0]] = f[2]
		}
	}
	return out
}

// importedTargets returns the target digest of each image the agent
// recorded importing in root's state file, by name.
func importedTargets(t *testing.T, root string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "image_import_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Files map[string]struct {
			Images []struct{ Name, Target string }
		}
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range st.Files {
		for _, im := range f.Images {
			out[im.Name] = im.Target
		}
	}
	return out
}
