package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// suite is what TestMain set up; read-only once tests run.
type suite struct {
	// binary is the minikubelet under test.
	binary string
	// busybox is the test image's reference.
	busybox string
	// probeserver is test/images/probeserver's reference.
	probeserver string
	runtimes    []*ctrdtest.Containerd
	// bed is the test bed and base the directory its daemons live in;
	// tests that need a containerd of their own start it there.
	bed  *ctrdtest.Bed
	base string
	// skip is why the suite does not run, if it does not.
	skip string
	// api is the apiserver the node-mode tests share (node_test.go).
	api sharedAPIServer
}

var env suite

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	bedPath := os.Getenv("MINIKUBELET_BED")
	if bedPath == "" {
		if os.Getenv("MINIKUBELET_E2E") == "required" {
			fmt.Fprintln(os.Stderr, "e2e: MINIKUBELET_BED is not set but MINIKUBELET_E2E=required; run `make test`")
			return 1
		}
		env.skip = "MINIKUBELET_BED is not set; run `make test` to run the integration suite"
		return m.Run()
	}
	bed, err := ctrdtest.LoadBed(bedPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	img, err := bed.Image(ctrdtest.RoleBusybox)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.busybox = img.Ref
	probeImg, err := bed.Image(ctrdtest.RoleProbe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err, "(run `make prepare` again)")
		return 1
	}
	env.probeserver = probeImg.Ref

	base := os.Getenv("MINIKUBELET_BED_BASE")
	if base == "" {
		base, err = os.MkdirTemp("", "minikubelet-e2e.")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer os.RemoveAll(base)
	}
	env.bed, env.base = bed, base
	defer env.api.stop()
	env.binary, err = binary(base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started, err := startRuntimes(ctx, bed, base)
	defer stopRuntimes(started)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.runtimes = started
	return m.Run()
}

// binary is $MINIKUBELET_BIN, or a fresh build of cmd/minikubelet.
func binary(dir string) (string, error) {
	if b := os.Getenv("MINIKUBELET_BIN"); b != "" {
		return b, nil
	}
	out := filepath.Join(dir, "minikubelet")
	// The Makefile's build tags (GOTAGS), so that the suite runs what
	// make build makes.
	cmd := exec.Command("go", "build", "-tags", "grpcnotrace", "-o", out, "github.com/minikubelet/minikubelet/cmd/minikubelet")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build minikubelet: %w", err)
	}
	return out, nil
}

// startRuntimes starts every containerd of the bed at once.
func startRuntimes(ctx context.Context, bed *ctrdtest.Bed, base string) ([]*ctrdtest.Containerd, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		started []*ctrdtest.Containerd
		errs    []error
	)
	for _, rt := range bed.Runtimes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rt, Bed: bed, BaseDir: base})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("start %s: %w", rt.Name, err))
				return
			}
			fmt.Fprintf(os.Stderr, "e2e: %s ready in %v (images in %v) at %s\n", c.Name(), c.Timings().Ready.Round(time.Millisecond), c.Timings().Import.Round(time.Millisecond), c.Endpoint())
			started = append(started, c)
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return started, errs[0]
	}
	return started, nil
}

func stopRuntimes(rts []*ctrdtest.Containerd) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range rts {
		if err := c.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop %s: %v\n", c.Name(), err)
		}
	}
}

// forEachRuntime runs f as a parallel subtest per containerd of the bed.
func forEachRuntime(t *testing.T, f func(t *testing.T, rt *ctrdtest.Containerd)) {
	t.Helper()
	if env.skip != "" {
		t.Skip(env.skip)
	}
	for _, rt := range env.runtimes {
		t.Run(rt.Name(), func(t *testing.T) {
			t.Parallel()
			f(t, rt)
		})
	}
}
