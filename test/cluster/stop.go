package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// cleanupBudget bounds the teardown that runs even after ctx ended.
const cleanupBudget = 2 * time.Minute

// cleanupContext is the one place a fresh, bounded context is made for a
// teardown that must run even after the caller's context was cancelled.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), cleanupBudget)
}

// Stop ends the node agent, removes every pod and the node's containerd
// (ctrdtest's teardown), stops the add-ons and the control plane, removes
// kube-proxy's rules and every KUBE-* chain that was not there before,
// puts back the kernel settings the cluster changed,
// copies the logs to Options.LogDir if set, and removes the cluster's
// directory. It runs to the end even when ctx is already done; later calls
// return the first call's result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(ctx) })
	return c.stopErr
}

func (c *Cluster) stop(ctx context.Context) error {
	var errs []error
	c.hollowMu.Lock()
	for _, h := range c.hollow {
		errs = append(errs, h.Stop(ctx))
	}
	c.hollowMu.Unlock()
	c.agent.stop()
	if c.ctr != nil {
		if c.opts.LogDir != "" {
			errs = append(errs, copyFile(c.ctr.LogPath(), filepath.Join(c.opts.LogDir, "containerd.log")))
		}
		errs = append(errs, c.ctr.Stop(ctx))
	}
	for _, p := range []*proc{c.metrics, c.proxy, c.dns, c.sched, c.kcm, c.api, c.etcd} {
		p.stop()
	}
	cctx, cancel := cleanupContext()
	defer cancel()
	if c.dir != "" {
		if c.proxy != nil {
			errs = append(errs, cleanupProxy(cctx, c.opts.Bins.Proxy, c.logPath("kube-proxy-cleanup")))
		}
		if c.chains != nil {
			errs = append(errs, removeNewKubeChains(cctx, c.chains))
		}
		if c.opts.LogDir != "" {
			errs = append(errs, copyLogs(c.dir, c.opts.LogDir))
		}
	}
	if c.ctr != nil {
		errs = append(errs, removeContainerLogLinks(c.nodeDir()))
	}
	if c.saved != nil {
		errs = append(errs, restoreTunables(c.saved))
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	if c.unlock != nil {
		c.unlock()
	}
	return errors.Join(errs...)
}

// Cleanup undoes a cluster whose process died, from dir's
// cluster-state.json alone: it removes kube-proxy's rules and the KUBE-*
// chains that were not there before, puts back the kernel settings and
// removes dir. (The components died with the process;
// the node's containerd instance is a sibling directory that
// ctrdtest.Cleanup tears down.) A dir without the record is left alone.
func Cleanup(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster cleanup: %w", err)
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("cluster cleanup: parse %s: %w", filepath.Join(dir, stateFile), err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil || st.Dir != abs {
		return fmt.Errorf("cluster cleanup: %s records dir %q, not %q", stateFile, st.Dir, dir)
	}
	ctx, cancel := cleanupContext()
	defer cancel()
	var errs []error
	if st.KubeProxy != "" {
		errs = append(errs, cleanupProxy(ctx, st.KubeProxy, filepath.Join(dir, "kube-proxy-cleanup.log")))
	}
	if st.Chains != nil {
		errs = append(errs, removeNewKubeChains(ctx, st.Chains))
	}
	if st.Sysctls != nil {
		errs = append(errs, restoreTunables(st.Sysctls))
	}
	if st.NodeDir != "" {
		errs = append(errs, removeContainerLogLinks(st.NodeDir))
	}
	// Hollow nodes' agents may have mounted pod volumes under their dirs.
	errs = append(errs, ctrdtest.UnmountAll(dir), os.RemoveAll(dir))
	return errors.Join(errs...)
}

// containerLogLinks is where the kubelet links every container's log,
// whatever its podLogsDir.
const containerLogLinks = "/var/log/containers"

// removeContainerLogLinks removes the links in /var/log/containers that
// point under the node's directory.
func removeContainerLogLinks(nodeDir string) error {
	entries, err := os.ReadDir(containerLogLinks)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", containerLogLinks, err)
	}
	base := nodeDir + string(filepath.Separator)
	var errs []error
	for _, e := range entries {
		link := filepath.Join(containerLogLinks, e.Name())
		target, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(target, base) {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// copyLogs copies every *.log file of dir into to.
func copyLogs(dir, to string) error {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range logs {
		errs = append(errs, copyFile(l, filepath.Join(to, filepath.Base(l))))
	}
	return errors.Join(errs...)
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("copy log: %w", err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return fmt.Errorf("copy log %s: %w", from, err)
	}
	return dst.Close()
}
