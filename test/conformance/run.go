package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// E2E says how to run Kubernetes' e2e suite against a cluster.
type E2E struct {
	// Ginkgo and E2ETest are the ginkgo CLI and e2e.test of one build;
	// Kubectl the kubectl the suite calls. Required.
	Ginkgo, E2ETest, Kubectl string
	// Kubeconfig is an admin kubeconfig of the cluster. Required.
	Kubeconfig string
	// Focus and Skip select specs by regular expression (-ginkgo.focus,
	// -ginkgo.skip). Focus is required.
	Focus, Skip string
	// Procs is how many e2e.test processes run specs side by side;
	// [Serial] specs run alone at the end. 1 if zero.
	Procs int
	// Timeout bounds the whole suite (ginkgo's --timeout); an hour if zero.
	Timeout time.Duration
	// OutDir receives junit.xml, e2e.log (the suite's output) and what the
	// suite writes into its output dir. Required; created if missing.
	OutDir string
}

// JUnitFile and LogFile are the names of the report and the output in
// E2E.OutDir.
const (
	JUnitFile = "junit.xml"
	LogFile   = "e2e.log"
)

// Run runs the suite and waits for it. A spec's failure is not an error:
// the report says it. The error says the suite could not run or left no
// report (its output ends in OutDir/e2e.log). If ctx ends, the suite is
// interrupted (SIGINT, so ginkgo still writes its report).
func (e E2E) Run(ctx context.Context) error {
	if e.Ginkgo == "" || e.E2ETest == "" || e.Kubectl == "" || e.Kubeconfig == "" || e.Focus == "" || e.OutDir == "" {
		return errors.New("conformance: E2E needs Ginkgo, E2ETest, Kubectl, Kubeconfig, Focus and OutDir")
	}
	procs, timeout := e.Procs, e.Timeout
	if procs == 0 {
		procs = 1
	}
	if timeout == 0 {
		timeout = time.Hour
	}
	if err := os.MkdirAll(e.OutDir, 0o755); err != nil {
		return fmt.Errorf("e2e output dir: %w", err)
	}
	junitPath := filepath.Join(e.OutDir, JUnitFile)
	_ = os.Remove(junitPath)
	log, err := os.Create(filepath.Join(e.OutDir, LogFile))
	if err != nil {
		return fmt.Errorf("e2e log: %w", err)
	}
	defer log.Close()
	args := []string{
		"--procs", strconv.Itoa(procs),
		"--timeout", timeout.String(),
		"--focus", e.Focus,
		"--junit-report", junitPath,
		"--no-color", "--silence-skips",
		"--poll-progress-after", "5m",
	}
	if e.Skip != "" {
		args = append(args, "--skip", e.Skip)
	}
	args = append(args, e.E2ETest, "--",
		"--kubeconfig", e.Kubeconfig,
		"--provider", "skeleton",
		"--kubectl-path", e.Kubectl,
		"--e2e-output-dir", e.OutDir,
		"--allowed-not-ready-nodes", "0",
		"--system-pods-startup-timeout", "1m",
	)
	// The suite's own temporary files (the kubectl specs leave a
	// test-kuberc* dir each) go to a dir of the run's, removed after it.
	tmp, err := os.MkdirTemp("", "mk-e2e-tmp.")
	if err != nil {
		return fmt.Errorf("e2e temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(e.Ginkgo, args...)
	cmd.Dir = e.OutDir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = log, log
	// ginkgo runs e2e.test processes of its own; its process group is
	// ours to end.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ginkgo: %w", err)
	}
	done := make(chan error, 1) // written once by the waiter
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	if _, serr := os.Stat(junitPath); serr != nil {
		if err != nil {
			return fmt.Errorf("ginkgo left no report: %w (see %s)", err, log.Name())
		}
		return fmt.Errorf("ginkgo left no report: see %s", log.Name())
	}
	return nil
}
