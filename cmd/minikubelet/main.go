package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/agent"
	"github.com/minikubelet/minikubelet/agent/config"
	"github.com/minikubelet/minikubelet/internal/cli"
	"github.com/minikubelet/minikubelet/internal/flagutil"
	"github.com/minikubelet/minikubelet/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "version":
			fmt.Println("minikubelet", version.Version)
			return 0
		case "pods", "logs", "exec", "attach":
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			streams := cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
			switch args[0] {
			case "pods":
				return cli.Pods(ctx, args[1:], os.Stdout, os.Stderr)
			case "logs":
				return cli.Logs(ctx, args[1:], os.Stdout, os.Stderr)
			case "exec":
				return cli.Exec(ctx, args[1:], streams)
			default:
				return cli.Attach(ctx, args[1:], streams)
			}
		}
	}
	if len(args) > 0 && args[0] == "run" {
		args = args[1:]
	}
	fs := flag.NewFlagSet("minikubelet", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: minikubelet [run] [flags]\n       minikubelet pods [--server unix://SOCKET|URL] [-n NAMESPACE]\n       minikubelet logs POD [-c CONTAINER] [-f] [--previous] [--tail N] [--timestamps] [--server unix://SOCKET|URL]\n       minikubelet exec POD [-c CONTAINER] [-i] [-t] [--server unix://SOCKET|URL] -- COMMAND [ARG...]\n       minikubelet attach POD [-c CONTAINER] [-i] [-t] [--server unix://SOCKET|URL]\n       minikubelet version\n\nRuns the pods of --pod-manifest-path in the CRI runtime at --container-runtime-endpoint.\n\nFlags:\n")
		flagutil.PrintDefaults(fs.Output(), fs)
	}
	cfg := config.Default()
	cfg.AddFlags(fs)
	flagutil.AddKlogFlags(fs)
	// Parse quietly: a mistake gets one line naming it, --help the usage.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		fs.SetOutput(os.Stdout)
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return 0
		}
		fmt.Fprintf(os.Stderr, "minikubelet: %v (see --help)\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "minikubelet: unexpected argument %q (flags start with --; see --help)\n", fs.Arg(0))
		return 2
	}
	warnings, err := cfg.LoadFile(fs)
	if err != nil {
		printErr(err)
		return 2
	}
	for _, w := range warnings {
		klog.Warning(w)
	}
	setGCPercent(os.Getenv)
	a, err := agent.New(cfg, agent.Deps{})
	if err != nil {
		printErr(err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := a.Run(ctx); err != nil {
		klog.Background().Error(err, "minikubelet failed")
		return 1
	}
	return 0
}

// printErr prints each line of err (errors joined are one a line) after
// the same prefix, so that every mistake reads as one of minikubelet's.
func printErr(err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(os.Stderr, "minikubelet: %s\n", line)
	}
}

// defaultGCPercent is the agent's GOGC unless the environment sets one. A
// node agent's memory is taken from every node's pods, while its CPU is a
// fraction of a percent of a core: collecting when the heap has grown a
// quarter, not doubled, keeps some 5 MiB of RSS at 110 pods for about
// 0.03 s of CPU a minute (make bench, evented; README's figures).
const defaultGCPercent = 25

// setGCPercent sets the garbage collector's target to defaultGCPercent
// unless GOGC is set, which the Go runtime then honours as it is.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}
