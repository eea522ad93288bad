package stats

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sysunix "golang.org/x/sys/unix"
)

// names are the interface names of a net/dev file's content, in order;
// its counters move between two reads of the host's.
func names(b []byte) string {
	var out []string
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if name, _, ok := bytes.Cut(line, []byte{':'}); ok {
			out = append(out, string(bytes.TrimSpace(name)))
		}
	}
	return strings.Join(out, ",")
}

// readRaw and preadRaw read a net/dev file whole: the host's own, whose
// short read ends it, and one longer than a page.
func TestNetDevReadWhole(t *testing.T) {
	var long bytes.Buffer
	long.WriteString("Inter-|   Receive |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")
	for i := range 80 {
		fmt.Fprintf(&long, "eth%d: %d 2 0 0 0 0 0 0 %d 2 0 0 0 0 0 0\n", i, 1<<40+i, 1<<41+i)
	}
	longPath := filepath.Join(t.TempDir(), "dev")
	if err := os.WriteFile(longPath, long.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/proc/self/net/dev", longPath} {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		got, err := readRaw(path, &buf)
		if err != nil || names(got) != names(want) {
			t.Errorf("readRaw(%s) = %q, %v; want %q", path, names(got), err, names(want))
		}
		fd, err := sysunix.Open(path, sysunix.O_RDONLY|sysunix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // again from offset 0, as a kept file is read
			got, err := preadRaw(fd, &buf)
			if err != nil || names(got) != names(want) {
				t.Errorf("preadRaw(%s) #%d = %q, %v; want %q", path, i, names(got), err, names(want))
			}
		}
		_ = sysunix.Close(fd)
	}
}
