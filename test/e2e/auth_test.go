package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestNonLoopbackAddressNeedsTLSAndAuth: the agent refuses to serve pods,
// logs and metrics off loopback without TLS and a way to authenticate
// clients, before it touches anything.
func TestNonLoopbackAddressNeedsTLSAndAuth(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"--address", "0.0.0.0"},
		{"--address", "0.0.0.0", "--tls-cert-file", "/nonexistent.pem", "--tls-private-key-file", "/nonexistent-key.pem"},
	} {
		dir := t.TempDir()
		cmd := exec.CommandContext(ctx, env.binary, append(args, "--root-dir", dir, "--pod-manifest-path", dir, "--container-runtime-endpoint", "unix://"+dir+"/none.sock")...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "reachable from other hosts") {
			t.Errorf("%v: %v\n%s\nwant exit code 2 naming the missing flags", args, err, out)
		}
	}
}
