package main

import (
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/test/cluster"
	"github.com/minikubelet/minikubelet/test/conformance"
)

// runCmd is `conformance run`.
func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	agent := fs.String("agent", "", "node agent: minikubelet or kubelet (required)")
	bin := fs.String("minikubelet", "bin/minikubelet", "minikubelet binary, with -agent minikubelet")
	out := fs.String("out", "", "output dir: junit.xml, e2e.log, meta.json, logs/ (required)")
	base := fs.String("base", "", "dir the cluster runs in (default: a new dir under /tmp, removed at the end)")
	list := fs.Bool("node-lists-objects", false, "let the node list and watch configMaps and secrets in every namespace (a production node may not)")
	procs := fs.Int("procs", 4, "e2e.test processes running specs side by side")
	focus := fs.String("focus", conformance.Focus, "regular expression selecting the specs")
	skip := fs.String("skip", conformance.SkipRegexp(), "regular expression of specs to leave out")
	timeout := fs.Duration("timeout", 3*time.Hour, "bound of the whole suite")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *agent == "" || *out == "" {
		return errors.New("run: -agent and -out are required")
	}
	bed, bins, err := cluster.Load()
	if err != nil {
		return err
	}
	absBin, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	if *base == "" {
		// Short: containerd's socket path lives under it.
		if *base, err = os.MkdirTemp("", "mkc."); err != nil {
			return err
		}
		defer os.RemoveAll(*base)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := conformance.Suite{
		Agent: cluster.Agent(*agent), AgentBinary: absBin, NodeListsObjects: *list,
		Bed: bed, Bins: bins, BaseDir: *base, OutDir: *out,
		Focus: *focus, Skip: *skip, Procs: *procs, Timeout: *timeout,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}
	run, err := s.Run(ctx)
	if err != nil {
		return err
	}
	var passed, failed int
	for _, r := range run.Results {
		switch {
		case r.Passed():
			passed++
		case r.Failed():
			failed++
		}
	}
	fmt.Printf("%s: %d passed, %d failed of %d specs in %v (cluster start %v)\n", *agent, passed, failed, len(run.Results),
		time.Duration(run.Meta.SuiteSeconds*float64(time.Second)).Round(time.Second),
		time.Duration(run.Meta.ClusterStartSeconds*float64(time.Second)).Round(time.Second))
	return nil
}

// reportCmd is `conformance report`.
func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	mini := fs.String("minikubelet", "", "output dir of the minikubelet run (required)")
	kubelet := fs.String("kubelet", "", "output dir of the kubelet run (required)")
	nodeLists := fs.String("node-lists", "", "output dir of a minikubelet run with -node-lists-objects (optional)")
	causes := fs.String("causes", "test/conformance/causes.txt", "causes file: GROUP | REGEXP lines")
	out := fs.String("out", "docs/conformance", "where README.md, results.json and the JUnit reports go")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mini == "" || *kubelet == "" {
		return errors.New("report: -minikubelet and -kubelet are required")
	}
	mr, err := conformance.ReadRun(*mini)
	if err != nil {
		return err
	}
	kr, err := conformance.ReadRun(*kubelet)
	if err != nil {
		return err
	}
	var lr *conformance.Run
	if *nodeLists != "" {
		if lr, err = conformance.ReadRun(*nodeLists); err != nil {
			return err
		}
	}
	cs, err := conformance.ReadCauses(*causes)
	if err != nil {
		return err
	}
	rep := conformance.NewReport(mr, lr, kr, cs, time.Now())
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if err := writeWith(filepath.Join(*out, "README.md"), rep.WriteMarkdown); err != nil {
		return err
	}
	if err := writeWith(filepath.Join(*out, "results.json"), rep.WriteJSON); err != nil {
		return err
	}
	junits := map[string]string{"minikubelet": *mini, "kubelet": *kubelet}
	if *nodeLists != "" {
		junits["minikubelet-node-lists"] = *nodeLists
	}
	// The JUnit reports carry every spec's output: megabytes, gzipped.
	for name, dir := range junits {
		data, err := os.ReadFile(filepath.Join(dir, conformance.JUnitFile))
		if err != nil {
			return err
		}
		if err := writeWith(filepath.Join(*out, name+"-junit.xml.gz"), func(w io.Writer) error {
			zw := gzip.NewWriter(w)
			if _, err := zw.Write(data); err != nil {
				return err
			}
			return zw.Close()
		}); err != nil {
			return err
		}
	}
	fmt.Println(rep.Summary())
	return nil
}

// writeWith writes a file through a writer func.
func writeWith(path string, write func(w io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sliceCmd is `conformance slice`: it writes the CI slice chosen from a
// run (conformance.PickSlice) as a slice file.
func sliceCmd(args []string) error {
	fs := flag.NewFlagSet("slice", flag.ContinueOnError)
	runDir := fs.String("run", "", "output dir of a minikubelet run (required)")
	maxSecs := fs.Float64("max-seconds", 60, "leave out an area whose fastest passing spec took longer")
	out := fs.String("out", "test/conformance/slice.txt", "slice file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *runDir == "" {
		return errors.New("slice: -run is required")
	}
	run, err := conformance.ReadRun(*runDir)
	if err != nil {
		return err
	}
	if run.Meta.Agent != string(cluster.Minikubelet) {
		return fmt.Errorf("slice: %s is a run of %s: want one of minikubelet", *runDir, run.Meta.Agent)
	}
	names, slow := conformance.PickSlice(run.Results, *maxSecs)
	var b strings.Builder
	fmt.Fprintf(&b, "# The conformance specs CI runs against minikubelet (TestConformanceSlice): per area of\n"+
		"# the suite that passes, its fastest passing spec, chosen by `conformance slice` from the run of\n"+
		"# %s (node may list configMaps and secrets: %v, e2e.test %s).\n",
		run.Meta.Started.UTC().Format("2006-01-02 15:04 UTC"), run.Meta.NodeListsObjects, run.Meta.KubeVersion)
	for _, a := range slow {
		fmt.Fprintf(&b, "# Left out, its fastest passing spec takes over %.0f s: %s\n", *maxSecs, a)
	}
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d specs (%d areas left out as slow)\n", *out, len(names), len(slow))
	return nil
}
