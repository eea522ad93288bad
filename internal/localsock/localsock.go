package localsock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is where the agent listens and the command line connects
// unless told otherwise.
const DefaultPath = "/run/minikubelet/minikubelet.sock"

// maxPathLen is the longest path a Unix socket address holds (sun_path,
// 108 bytes with its terminating NUL).
const maxPathLen = 107

// Listener accepts connections on the socket; each is a *Conn.
type Listener struct {
	*net.UnixListener
	// euid is the agent's own user, allowed besides root.
	euid uint32
}

// Conn is an accepted connection and its peer's credentials.
type Conn struct {
	net.Conn
	// UID is the peer's user; valid when Err is nil.
	UID uint32
	// Err says why the peer's credentials could not be read.
	Err error
	// allowed is whether UID may use the socket.
	allowed bool
}

// Listen listens on the Unix socket at path; see the package comment.
// Errors name path and what to do.
func Listen(path string) (*Listener, error) {
	if !filepath.IsAbs(path) || len(path) > maxPathLen {
		return nil, fmt.Errorf("socket %q: want an absolute path of at most %d bytes", path, maxPathLen)
	}
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return &Listener{UnixListener: ln, euid: uint32(os.Geteuid())}, nil
}

// checkDir makes dir (mode 0700) when it is missing and checks that no one
// but the agent's user can create or replace a socket in it.
func checkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s: not a directory (a symbolic link is refused)", dir)
	case !ok || st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("socket directory %s: not owned by the agent's user (uid %d); choose another --socket or fix its owner", dir, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("socket directory %s: mode %v lets other users replace the socket; choose another --socket or chmod go-w it", dir, fi.Mode().Perm())
	}
	return nil
}

// removeStale removes a socket left by an agent that is gone, and refuses
// one that an agent still serves, or a file that is no socket.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket %s: a file that is not a socket is in the way; remove it or choose another --socket", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return fmt.Errorf("socket %s: another process serves it (is another minikubelet running?); choose another --socket", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// Accept waits for the next connection and reads its peer's credentials.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	conn := &Conn{Conn: c}
	conn.UID, conn.Err = peerUID(c)
	conn.allowed = conn.Err == nil && (conn.UID == 0 || conn.UID == l.euid)
	return conn, nil
}

// peerUID reads the user of the process at the other end of c.
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return cred.Uid, nil
}

type connKey struct{}

// ConnContext is http.Server.ConnContext for a server on a Listener: it
// keeps the connection's credentials for RootOnly.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if conn, ok := c.(*Conn); ok {
		return context.WithValue(ctx, connKey{}, conn)
	}
	return ctx
}

// RootOnly serves a request with next when it came through a connection
// of root or of the agent's own user, and answers 403 otherwise.
func RootOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _ := r.Context().Value(connKey{}).(*Conn)
		switch {
		case conn == nil:
			http.Error(w, "minikubelet: the local socket could not tell who connected", http.StatusForbidden)
		case conn.Err != nil:
			http.Error(w, fmt.Sprintf("minikubelet: the local socket could not tell who connected: %v", conn.Err), http.StatusForbidden)
		case !conn.allowed:
			http.Error(w, fmt.Sprintf("minikubelet: the local socket serves root only, not uid %d (run as root, or use the kubelet port with credentials)", conn.UID), http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// Transport is an HTTP transport whose every connection goes to the
// socket at path, whatever the URL's host.
func Transport(path string) *http.Transport {
	var d net.Dialer
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
	}
}
