package ctrdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pollInterval is how often teardown re-checks a condition it waits for.
const pollInterval = 20 * time.Millisecond

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] != 'Z'
}

// cmdline returns the argv of pid (nil if it is gone or a kernel thread).
func cmdline(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// findProcs returns the PIDs (other than our own) whose argv matches.
func findProcs(match func(argv []string) bool) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("read /proc: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if argv := cmdline(pid); argv != nil && match(argv) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// signalAndWait sends sig to each live pid and waits until all are gone or
// ctx ends. It returns the PIDs still alive.
func signalAndWait(ctx context.Context, pids []int, sig unix.Signal) []int {
	for _, pid := range pids {
		if processAlive(pid) {
			_ = unix.Kill(pid, sig) // ESRCH: it just exited
		}
	}
	for {
		var alive []int
		for _, pid := range pids {
			if processAlive(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return alive
		case <-time.After(pollInterval):
		}
	}
}

// terminate sends SIGTERM, waits up to grace, then SIGKILLs what is left
// and waits up to killWait more.
func terminate(ctx context.Context, pids []int, grace, killWait time.Duration) error {
	if len(pids) == 0 {
		return nil
	}
	tctx, cancel := context.WithTimeout(ctx, grace)
	alive := signalAndWait(tctx, pids, unix.SIGTERM)
	cancel()
	if len(alive) == 0 {
		return nil
	}
	kctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	if alive = signalAndWait(kctx, alive, unix.SIGKILL); len(alive) > 0 {
		return fmt.Errorf("processes %v survive SIGKILL", alive)
	}
	return nil
}

// argsName reports whether argv names path or something under dir.
func argsName(argv []string, path, dir string) bool {
	for _, a := range argv {
		if a == path || a == dir || strings.HasPrefix(a, dir+"/") {
			return true
		}
	}
	return false
}

// isShim reports whether argv is a containerd shim's.
func isShim(argv []string) bool {
	return len(argv) > 0 && strings.HasPrefix(filepath.Base(argv[0]), "containerd-shim")
}

// flagValue returns the value of "-name value" or "-name=value" in argv.
func flagValue(argv []string, name string) string {
	for i, a := range argv {
		switch {
		case (a == "-"+name || a == "--"+name) && i+1 < len(argv):
			return argv[i+1]
		case strings.HasPrefix(a, "-"+name+"="), strings.HasPrefix(a, "--"+name+"="):
			_, v, _ := strings.Cut(a, "=")
			return v
		}
	}
	return ""
}

// ignoreNotExist drops os.ErrNotExist.
func ignoreNotExist(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
