package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

func main() { os.Exit(run(os.Args[1:])) }

// config is the parsed command line.
type config struct {
	bed, runtime, dir string
	argv              []string
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("withcontainerd", flag.ContinueOnError)
	fs.StringVar(&c.bed, "bed", defaultBed(), "bed.json written by test/scripts/prepare.sh")
	fs.StringVar(&c.runtime, "runtime", "containerd-2.1", "runtime name from bed.json")
	fs.StringVar(&c.dir, "dir", "/var/tmp/minikubelet-bed", "base dir for the instance dir")
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: withcontainerd -bed BED.json -runtime NAME [-dir BASE] -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.argv = fs.Args(); len(c.argv) == 0 {
		fs.Usage()
		return c, errors.New("no command given after --")
	}
	return c, nil
}

// defaultBed is $MINIKUBELET_CACHE/bed.json, with prepare.sh's default cache.
func defaultBed() string {
	cache := os.Getenv("MINIKUBELET_CACHE")
	if cache == "" {
		cache = "/var/cache/minikubelet"
	}
	return filepath.Join(cache, "bed.json")
}

// run returns the process exit status.
func run(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		return 2
	}
	// sigs is written by the signal package and read first by the watcher
	// in startContainerd, then by supervise; it is never closed. Buffer 4:
	// a burst of signals is not lost while the reader is busy.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	// A closed stdout/stderr (make run | head) must not kill us before the
	// teardown: once SIGPIPE is notified, writes fail with EPIPE instead.
	// Notify rather than Ignore, so CMD does not inherit SIG_IGN. The
	// channel is never read: the signal package drops what does not fit.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	c, sig, err := startContainerd(cfg, sigs)
	if err != nil {
		if sig != nil {
			fmt.Fprintf(os.Stderr, "withcontainerd: %v during start; torn down\n", sig)
			return 128 + int(syscallSignal(sig))
		}
		fmt.Fprintln(os.Stderr, "withcontainerd:", err)
		return 1
	}
	var status int
	if sig != nil {
		status = 128 + int(syscallSignal(sig))
	} else {
		status = supervise(c, cfg.argv, sigs)
	}
	pods := leftPods(c)
	if len(pods) > 0 {
		fmt.Fprintf(os.Stderr, "withcontainerd: %s exited and, as a node agent does, left its pods in place; removing %s and the private %s\n",
			filepath.Base(cfg.argv[0]), podList(pods), c.Name())
	}
	if err := c.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "withcontainerd: teardown:", err)
		if status == 0 {
			status = 1
		}
		return status
	}
	fmt.Fprintf(os.Stderr, "withcontainerd: removed %s and %s (its root, state, socket, CNI network and cgroups, %s)\n",
		podList(pods), c.Name(), c.Dir())
	return status
}

// leftPods lists namespace/name of every pod sandbox in c; nil when there
// is none or the runtime does not answer.
func leftPods(c *ctrdtest.Containerd) []string {
	if c.Runtime() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sandboxes, err := c.Runtime().ListPodSandbox(ctx, nil)
	if err != nil {
		return nil
	}
	var names []string
	for _, sb := range sandboxes {
		names = append(names, sb.GetMetadata().GetNamespace()+"/"+sb.GetMetadata().GetName())
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// podList is "no pods", or the number and names of the pods.
func podList(pods []string) string {
	switch len(pods) {
	case 0:
		return "no pods"
	case 1:
		return "1 pod (" + pods[0] + ")"
	}
	return fmt.Sprintf("%d pods (%s)", len(pods), strings.Join(pods, ", "))
}

// startContainerd starts the private containerd; a signal arriving before
// it is up cancels the start (and tears down what was made) or, if it
// came too late for that, is returned so the caller stops at once.
func startContainerd(cfg config, sigs <-chan os.Signal) (*ctrdtest.Containerd, os.Signal, error) {
	bed, err := ctrdtest.LoadBed(cfg.bed)
	if err != nil {
		return nil, nil, err
	}
	rt, err := bed.Runtime(cfg.runtime)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (flag -runtime)", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// got carries the signal (or nil) from the watcher; buffered so the
	// watcher never blocks; closed by nobody.
	got := make(chan os.Signal, 1)
	started := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel()
			got <- s
		case <-started:
			got <- nil
		}
	}()
	c, err := ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rt, Bed: bed, BaseDir: cfg.dir})
	close(started)
	sig := <-got
	if err != nil {
		return nil, sig, err
	}
	fmt.Fprintf(os.Stderr, "withcontainerd: %s up in %v at %s (log %s)\n", c.Name(),
		c.Timings().Ready+c.Timings().Import, c.Endpoint(), c.LogPath())
	return c, sig, nil
}

// supervise runs argv against c, forwarding signals, and returns its status.
func supervise(c *ctrdtest.Containerd, argv []string, sigs <-chan os.Signal) int {
	args := make([]string, len(argv))
	for i, a := range argv {
		args[i] = strings.NewReplacer("@ENDPOINT@", c.Endpoint(), "@DIR@", c.Dir(), "@CGROUP@", c.CgroupParent()).Replace(a)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "CONTAINER_RUNTIME_ENDPOINT="+c.Endpoint(), "CONTAINERD_ADDRESS="+c.Socket())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withcontainerd:", err)
		return 127
	}
	// done is closed by the waiter goroutine once cmd exits.
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case <-done:
			return exitStatus(cmd.ProcessState)
		}
	}
}

// exitStatus maps a finished process to a shell-style status.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func syscallSignal(s os.Signal) syscall.Signal {
	if ss, ok := s.(syscall.Signal); ok {
		return ss
	}
	return 0
}
