package localsock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a client of the socket it names: it
// prints the status and body of GET / there, and exits.
const helperEnv = "LOCALSOCK_TEST_CLIENT"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		code, body, err := get(path)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("%d %s", code, body)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func get(path string) (int, string, error) {
	c := &http.Client{Transport: Transport(path), Timeout: 10 * time.Second}
	resp, err := c.Get("http://localhost/")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// serve listens on path and serves "hello" to root through RootOnly until
// the test ends.
func serve(t *testing.T, path string) {
	t.Helper()
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           RootOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello")) })),
		ConnContext:       ConnContext,
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
}

func TestListenMakesARootOnlySocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "mk.sock")
	serve(t, path)
	for p, want := range map[string]fs.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	if code, body, err := get(path); err != nil || code != http.StatusOK || body != "hello" {
		t.Errorf("root: %d %q %v; want 200 hello", code, body, err)
	}
}

func TestListenRefuses(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, "live.sock")
	serve(t, live)
	for _, tc := range []struct{ path, want string }{
		{"relative.sock", "absolute path"},
		{"/" + strings.Repeat("x", 120), "at most 107 bytes"},
		{filepath.Join(open, "mk.sock"), "lets other users replace the socket"},
		{filepath.Join(dir, "link", "mk.sock"), "symbolic link is refused"},
		{filepath.Join(dir, "file.sock"), "not a socket"},
		{live, "another process serves it"},
	} {
		ln, err := Listen(tc.path)
		if err == nil {
			ln.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Listen(%s) = %v; want an error saying %q", tc.path, err, tc.want)
		}
	}
}

// A socket left by an agent that is gone is replaced.
func TestListenReplacesAStaleSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mk.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the stale socket is gone already: %v", err)
	}
	serve(t, path)
	if code, _, err := get(path); err != nil || code != http.StatusOK {
		t.Errorf("after replacing the stale socket: %d %v", code, err)
	}
}

// The peer's credentials are checked on every connection, whatever the
// file's mode: a client running as nobody whose connect succeeds (the
// socket's mode loosened by hand) gets 403 naming its uid.
func TestPeerCredentialsRefuseNonRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs a client as uid 65534")
	}
	// Directories nobody can traverse, with a copy of this test binary.
	dir, err := os.MkdirTemp("", "localsock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "mk.sock")
	serve(t, path)
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(cred *syscall.Credential) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = []string{helperEnv + "=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return string(out)
	}
	if out := run(&syscall.Credential{Uid: 65534, Gid: 65534}); !strings.HasPrefix(out, "403 ") || !strings.Contains(out, "root only, not uid 65534") {
		t.Errorf("as uid 65534: %q; want 403 naming the uid", out)
	}
	if out := run(nil); out != "200 hello" {
		t.Errorf("as root: %q; want 200 hello", out)
	}
}
