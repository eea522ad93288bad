package conformance

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/minikubelet/minikubelet/test/cluster"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Suite is one run of the e2e suite against a fresh cluster.
type Suite struct {
	// Agent, AgentBinary and AgentArgs choose the node agent (see
	// cluster.Options).
	Agent       cluster.Agent
	AgentBinary string
	AgentArgs   []string
	// NodeListsObjects lets the node list and watch configMaps and
	// secrets (cluster.Options.NodeListsObjects).
	NodeListsObjects bool
	// Bed and Bins name the binaries. Required.
	Bed  *ctrdtest.Bed
	Bins *cluster.Bins
	// BaseDir holds the cluster (cluster.Options.Dir). Required.
	BaseDir string
	// OutDir receives the report, the suite's output, meta.json and the
	// components' logs (logs/). Required.
	OutDir string
	// Focus, Skip, Procs and Timeout are as in E2E; Focus defaults to
	// the package's Focus and Skip to SkipRegexp().
	Focus, Skip string
	Procs       int
	Timeout     time.Duration
	// Logf, if set, hears what happens.
	Logf func(format string, args ...any)
	// BeforeStop, if set, runs once the suite is done, before the
	// cluster stops; its error is returned.
	BeforeStop func(c *cluster.Cluster) error
}

// Run starts the cluster, runs the suite, writes meta.json, stops the
// cluster and returns the run's results. The cluster is stopped even when
// the suite fails to run.
func (s Suite) Run(ctx context.Context) (_ *Run, err error) {
	if s.Focus == "" {
		s.Focus = Focus
	}
	if s.Skip == "" {
		s.Skip = SkipRegexp()
	}
	logf := s.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	meta := Meta{Agent: string(s.Agent), NodeListsObjects: s.NodeListsObjects, KubeVersion: s.Bins.KubeVersion, CoreDNSVersion: s.Bins.CoreDNSVersion,
		Procs: s.Procs, Focus: s.Focus, Skip: s.Skip, Started: time.Now()}
	if meta.AgentVersion, err = s.agentVersion(ctx); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Bed: s.Bed, Bins: s.Bins, Dir: s.BaseDir,
		Agent: s.Agent, AgentBinary: s.AgentBinary, AgentArgs: s.AgentArgs, NodeListsObjects: s.NodeListsObjects,
		LogDir: filepath.Join(s.OutDir, "logs"), Logf: s.Logf,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if s.BeforeStop != nil {
			err = errors.Join(err, s.BeforeStop(c))
		}
		err = errors.Join(err, c.Stop(ctx))
	}()
	meta.ClusterStartSeconds = c.Timings().Total.Seconds()
	if err := nodeInfo(ctx, c, &meta); err != nil {
		return nil, err
	}
	e := E2E{Ginkgo: s.Bins.Ginkgo, E2ETest: s.Bins.E2ETest, Kubectl: c.Kubectl(), Kubeconfig: c.Kubeconfig(),
		Focus: s.Focus, Skip: s.Skip, Procs: s.Procs, Timeout: s.Timeout, OutDir: s.OutDir}
	logf("conformance: running e2e.test against %s (%d processes; output in %s)", s.Agent, max(s.Procs, 1), filepath.Join(s.OutDir, LogFile))
	t0 := time.Now()
	runErr := e.Run(ctx)
	meta.SuiteSeconds = time.Since(t0).Seconds()
	logf("conformance: e2e.test against %s done in %v", s.Agent, time.Since(t0).Round(time.Second))
	if err := WriteMeta(s.OutDir, meta); err != nil {
		return nil, errors.Join(runErr, err)
	}
	if runErr != nil {
		return nil, runErr
	}
	return ReadRun(s.OutDir)
}

// agentVersion is what the agent says of its version.
func (s Suite) agentVersion(ctx context.Context) (string, error) {
	bin, arg := s.AgentBinary, "version"
	if s.Agent == cluster.Kubelet {
		bin, arg = s.Bins.Kubelet, "--version"
	}
	out, err := exec.CommandContext(ctx, bin, arg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", bin, arg, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// nodeInfo copies the Node's nodeInfo into meta.
func nodeInfo(ctx context.Context, c *cluster.Cluster, meta *Meta) error {
	client, err := c.Client()
	if err != nil {
		return err
	}
	n, err := client.CoreV1().Nodes().Get(ctx, c.NodeName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", c.NodeName(), err)
	}
	info := n.Status.NodeInfo
	meta.ContainerRuntime, meta.KernelVersion, meta.OSImage = info.ContainerRuntimeVersion, info.KernelVersion, info.OSImage
	return nil
}
