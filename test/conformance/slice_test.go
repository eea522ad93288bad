package conformance

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/test/cluster"
)

// Environment of the slice test (see test/scripts/test.sh).
const (
	envBin      = "MINIKUBELET_BIN"
	envBase     = "MINIKUBELET_BED_BASE"
	envRequired = "MINIKUBELET_E2E"
	// sliceProcs is how many e2e.test processes the slice runs at once.
	sliceProcs = 4
)

// TestConformanceSlice runs the specs listed in slice.txt against
// minikubelet in a one-node cluster; each is a subtest that fails when the
// spec fails or no longer exists. A data race the agent reports fails the
// test too. The node has a production node's credentials only
// (system:node:<name> under the Node authorizer and NodeRestriction).
func TestConformanceSlice(t *testing.T) {
	if os.Getenv(cluster.EnvClusterTests) != "on" {
		t.Skipf("starts a whole cluster: runs with %s=on (test/scripts/test.sh does, on its own)", cluster.EnvClusterTests)
	}
	names, err := ReadSlice("slice.txt")
	if err != nil {
		t.Fatal(err)
	}
	bed, bins, err := cluster.Load()
	if err != nil {
		if os.Getenv(envRequired) == "required" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin, base := os.Getenv(envBin), os.Getenv(envBase)
	if bin == "" || base == "" {
		t.Fatalf("%s and %s must be set", envBin, envBase)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	out := t.TempDir()
	if dir := os.Getenv("MINIKUBELET_E2E_LOGS"); dir != "" {
		out = filepath.Join(dir, "conformance-slice")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	s := Suite{
		Agent: cluster.Minikubelet, AgentBinary: bin, Bed: bed, Bins: bins, BaseDir: base, OutDir: out,
		// Anchored at the end only: ginkgo matches the focus against the
		// spec's full text, which starts before the name the report shows.
		Focus: "(" + strings.Join(quoted, "|") + ")$", Procs: sliceProcs, Timeout: 15 * time.Minute,
		Logf: t.Logf,
		BeforeStop: func(c *cluster.Cluster) error {
			if b, err := os.ReadFile(c.AgentLog()); err == nil && strings.Contains(string(b), "WARNING: DATA RACE") {
				t.Errorf("the race detector reported a data race in minikubelet (log kept in %s)", filepath.Join(out, "logs"))
			}
			return nil
		},
	}
	run, err := s.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]Result{}
	for _, r := range run.Results {
		results[r.Name] = r
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r, ok := results[name]
			switch {
			case !ok:
				t.Fatalf("did not run: no spec of e2e.test %s has this name any more (edit test/conformance/slice.txt)", bins.KubeVersion)
			case !r.Passed():
				t.Fatalf("%s after %.1fs: %s\n(e2e output in %s)", r.State, r.Seconds, r.Message, filepath.Join(out, LogFile))
			}
		})
	}
}
