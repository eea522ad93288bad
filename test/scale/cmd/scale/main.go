// Command scale runs make scale (package test/scale): hollow minikubelet
// nodes and kubemark hollow kubelets, one kind after the other, against one
// control plane on this host, and writes the report as text (stdout and
// -text) and JSON (-json). Run it as root under the host's cluster lock
// (test/cluster takes it); test/scripts/scale.sh passes the bed's paths:
//
//	scale -bed BED.json -cluster-json CLUSTER.json -dir BASE [-nodes 100] [-pods 1000] ...
//
// SIGINT or SIGTERM stops the run; it then stops and removes everything it
// started before it exits. It exits 1 when the run failed (a phase that
// failed is reported in the report, and fails it too), 2 on a bad flag.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/test/cluster"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
	"github.com/minikubelet/minikubelet/test/scale"
)

func main() {
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	bedPath := fs.String("bed", "/var/cache/minikubelet/bed.json", "bed.json (test/scripts/prepare.sh)")
	binsPath := fs.String("cluster-json", "/var/cache/minikubelet/cluster.json", "cluster.json (test/scripts/prepare-cluster.sh)")
	dir := fs.String("dir", "", "the base directory for the cluster (required; keep it short)")
	bin := fs.String("bin", "bin/minikubelet", "minikubelet's binary")
	fakecri := fs.String("fakecri", "bin/fakecri", "fakecri's binary (test/scale/cmd/fakecri)")
	kubemark := fs.String("kubemark", "", "kubemark's binary (default: $"+cluster.EnvKubemark+", else the cache's, which prepare-cluster.sh scale builds)")
	agents := fs.String("agents", "minikubelet,kubemark", "the agents to run, one phase each, in this order")
	nodes := fs.Int("nodes", 100, "hollow nodes per agent")
	pods := fs.Int("pods", 1000, "pods per agent")
	settle := fs.Duration("settle", time.Minute, "how long statuses settle before a measured window")
	window := fs.Duration("window", 2*time.Minute, "how long a measured window lasts")
	parallel := fs.Int("parallel", 20, "create and delete calls at once")
	timeout := fs.Duration("timeout", time.Hour, "bound of the whole run")
	minFree := fs.Int64("min-free-mib", 3072, "stop when the host's MemAvailable falls below this many MiB")
	jsonPath := fs.String("json", "bin/scale-report.json", "where to write the report as JSON")
	textPath := fs.String("text", "bin/scale-report.txt", "where to write the report as text")
	logDir := fs.String("logs", "", "keep the control plane's logs and each node set's first node's logs in this directory")
	_ = fs.Parse(os.Args[1:])
	if *dir == "" || *nodes < 1 || *pods < 1 {
		fmt.Fprintln(os.Stderr, "scale: -dir is required; -nodes and -pods must be positive")
		os.Exit(2)
	}
	var kinds []cluster.HollowKind
	for _, a := range strings.Split(*agents, ",") {
		switch k := cluster.HollowKind(strings.TrimSpace(a)); k {
		case cluster.HollowMinikubelet, cluster.HollowKubemark:
			kinds = append(kinds, k)
		default:
			fmt.Fprintf(os.Stderr, "scale: -agents: %q is not minikubelet or kubemark\n", a)
			os.Exit(2)
		}
	}
	os.Exit(run(scale.Options{
		Minikubelet: *bin, FakeCRI: *fakecri, Kinds: kinds,
		Nodes: *nodes, Pods: *pods, Settle: *settle, Window: *window, Parallel: *parallel,
		Timeout: *timeout, MinFreeMiB: *minFree, Dir: *dir, LogDir: *logDir,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
		},
	}, *bedPath, *binsPath, *kubemark, *jsonPath, *textPath))
}

func run(o scale.Options, bedPath, binsPath, kubemark, jsonPath, textPath string) int {
	bed, err := ctrdtest.LoadBed(bedPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		return 1
	}
	bins, err := cluster.LoadBins(binsPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		return 1
	}
	o.Bed, o.Bins, o.Kubemark = bed, bins, kubemark
	if o.Kubemark == "" {
		o.Kubemark = bins.Kubemark()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := scale.Run(ctx, o)
	code := 0
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		code = 1
	}
	if rep == nil {
		return code
	}
	var text strings.Builder
	rep.WriteText(&text)
	fmt.Print(text.String())
	if err := os.WriteFile(textPath, []byte(text.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		code = 1
	}
	if err := rep.WriteJSON(jsonPath); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		code = 1
	}
	for _, p := range rep.Agents {
		if p.Error != "" {
			code = 1
		}
	}
	return code
}
