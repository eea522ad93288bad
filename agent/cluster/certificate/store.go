package certificate

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/minikubelet/minikubelet/internal/atomicfile"
)

// store keeps one kind's certificates in a directory as the kubelet's
// certificate store does: each certificate, with its key after it, in
// <prefix>-<time>.pem (mode 0600, the time of issue as
// 2006-01-02-15-04-05), and <prefix>-current.pem a symbolic link to the
// one in use (absolute target). A regular file at <prefix>-current.pem, as
// an older minikubelet kept the serving certificate, is read the same way
// and replaced by the link at the next save.
type store struct {
	dir, prefix string
}

// timeFormat names the dated files, the kubelet's format.
const timeFormat = "2006-01-02-15-04-05"

// current is the path of the certificate in use.
func (s store) current() string { return filepath.Join(s.dir, s.prefix+"-current.pem") }

// load reads the certificate in use, with its key; an error wrapping
// fs.ErrNotExist when there is none.
func (s store) load() (*tls.Certificate, error) {
	data, err := os.ReadFile(s.current())
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.current(), err)
	}
	return &cert, nil
}

// save writes pair (the certificate PEM, then the key PEM) to a new dated
// file and points the current link at it. The directory is made (mode
// 0700) when missing. The link is replaced by a rename, so a reader sees
// the old or the new certificate, never none.
func (s store) save(now time.Time, pair []byte) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	dir, err := filepath.Abs(s.dir)
	if err != nil {
		return fmt.Errorf("certificate directory: %w", err)
	}
	dated := filepath.Join(dir, s.prefix+"-"+now.Format(timeFormat)+".pem")
	if err := atomicfile.WriteFile(dated, pair, 0o600); err != nil {
		return err
	}
	updated := filepath.Join(dir, s.prefix+"-updated.pem")
	if err := os.Remove(updated); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("certificate link: %w", err)
	}
	if err := os.Symlink(dated, updated); err != nil {
		return fmt.Errorf("certificate link: %w", err)
	}
	if err := os.Rename(updated, s.current()); err != nil {
		return fmt.Errorf("certificate link: %w", err)
	}
	return nil
}
