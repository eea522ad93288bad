package volumes

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// blockDevice returns a block device of this machine, or "".
func blockDevice(t *testing.T) string {
	t.Helper()
	for _, pattern := range []string{"/dev/loop[0-9]*", "/dev/sd?", "/dev/vd?", "/dev/nvme*n1", "/dev/ram*"} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if fi, err := os.Stat(m); err == nil && fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0 {
				return m
			}
		}
	}
	return ""
}

// Each hostPath type's check, on real files of each kind: SetUpPod's
// error names the volume, the type and the path.
func TestHostPathTypes(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "dir")
	file := filepath.Join(base, "file")
	sock := filepath.Join(base, "sock")
	link := filepath.Join(base, "link-to-dir")
	missing := filepath.Join(base, "missing")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const charDev = "/dev/null"
	blockDev := blockDevice(t)

	tests := []struct {
		name string
		path string
		typ  v1.HostPathType
		// want is the error SetUpPod returns, "" for none.
		want string
	}{
		{name: "unset: no check", path: missing, typ: v1.HostPathUnset},
		{name: "Directory", path: dir, typ: v1.HostPathDirectory},
		{name: "Directory through a symlink", path: link, typ: v1.HostPathDirectory},
		{name: "Directory missing", path: missing, typ: v1.HostPathDirectory, want: `volume "v": hostPath type Directory: ` + missing + ` does not exist`},
		{name: "Directory is a file", path: file, typ: v1.HostPathDirectory, want: `volume "v": hostPath type Directory: ` + file + ` is a regular file, not a directory`},
		{name: "File", path: file, typ: v1.HostPathFile},
		{name: "File missing", path: missing, typ: v1.HostPathFile, want: `volume "v": hostPath type File: ` + missing + ` does not exist`},
		{name: "File is a directory", path: dir, typ: v1.HostPathFile, want: `volume "v": hostPath type File: ` + dir + ` is a directory, not a regular file`},
		{name: "File is a socket", path: sock, typ: v1.HostPathFile, want: `is a socket, not a regular file`},
		{name: "Socket", path: sock, typ: v1.HostPathSocket},
		{name: "Socket is a file", path: file, typ: v1.HostPathSocket, want: `volume "v": hostPath type Socket: ` + file + ` is a regular file, not a socket`},
		{name: "Socket missing", path: missing, typ: v1.HostPathSocket, want: `does not exist`},
		{name: "CharDevice", path: charDev, typ: v1.HostPathCharDev},
		{name: "CharDevice is a directory", path: dir, typ: v1.HostPathCharDev, want: `volume "v": hostPath type CharDevice: ` + dir + ` is a directory, not a character device`},
		{name: "BlockDevice is a character device", path: charDev, typ: v1.HostPathBlockDev, want: `volume "v": hostPath type BlockDevice: /dev/null is a character device, not a block device`},
		{name: "BlockDevice", path: blockDev, typ: v1.HostPathBlockDev},
		{name: "BlockDevice is a file", path: file, typ: v1.HostPathBlockDev, want: `is a regular file, not a block device`},
		{name: "DirectoryOrCreate existing", path: dir, typ: v1.HostPathDirectoryOrCreate},
		{name: "DirectoryOrCreate on a file", path: file, typ: v1.HostPathDirectoryOrCreate, want: `volume "v": hostPath type DirectoryOrCreate: ` + file + ` is a regular file, not a directory`},
		{name: "FileOrCreate existing", path: file, typ: v1.HostPathFileOrCreate},
		{name: "FileOrCreate on a directory", path: dir, typ: v1.HostPathFileOrCreate, want: `is a directory, not a regular file`},
		{name: "FileOrCreate without its directory", path: filepath.Join(missing, "f"), typ: v1.HostPathFileOrCreate, want: `volume "v": hostPath type FileOrCreate: cannot create ` + filepath.Join(missing, "f") + `: its directory ` + missing + ` does not exist`},
		{name: "unknown type", path: dir, typ: "Fifo", want: `unknown hostPath type "Fifo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.typ == v1.HostPathBlockDev && tt.want == "" && blockDev == "" {
				t.Skip("no block device on this machine (looked for /dev/loop*, sd?, vd?, nvme*n1, ram*)")
			}
			m := newTestManager(t, Config{})
			pv, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{hostPathVolume("v", tt.path, tt.typ)}))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("SetUpPod: %v", err)
				}
				if got, _ := pv.HostPath("v"); got != tt.path {
					t.Errorf("host path = %q, want the path itself, %q", got, tt.path)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SetUpPod = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestHostPathCreates(t *testing.T) {
	old := umask(0o022)
	defer umask(old)
	base := t.TempDir()
	newDir := filepath.Join(base, "a", "b")
	newFile := filepath.Join(base, "new-file")
	m := newTestManager(t, Config{})
	_, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{
		hostPathVolume("d", newDir, v1.HostPathDirectoryOrCreate),
		hostPathVolume("f", newFile, v1.HostPathFileOrCreate),
	}))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{newDir: os.ModeDir | 0o755, filepath.Dir(newDir): os.ModeDir | 0o755, newFile: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
	if fi, _ := os.Stat(newFile); fi.Size() != 0 {
		t.Errorf("created file has %d bytes", fi.Size())
	}
	// Again: nothing changes, nothing fails.
	if err := os.WriteFile(newFile, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.SetUpPod(testCtx(t), testPod("uid", []v1.Volume{hostPathVolume("f", newFile, v1.HostPathFileOrCreate)})); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(newFile); string(b) != "kept" {
		t.Errorf("FileOrCreate changed an existing file: %q", b)
	}
}
