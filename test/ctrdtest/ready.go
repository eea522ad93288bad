package ctrdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
)

// readyPoll is how often Start re-checks the daemon and the images.
const readyPoll = 25 * time.Millisecond

// errNotYet marks a condition that is not met yet but may be on retry.
var errNotYet = errors.New("not yet")

// poll calls check every readyPoll until it returns nil or an error other
// than errNotYet, the daemon exits, or ctx ends.
func (c *Containerd) poll(ctx context.Context, what string, check func() error) error {
	for {
		err := check()
		if err == nil || !errors.Is(err, errNotYet) {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return fmt.Errorf("%s: %w", what, ctx.Err())
			}
			return fmt.Errorf("%s: %w (last: %w); log %s:\n%s", what, ctx.Err(), err, c.inst.logPath(), c.logTail())
		case <-c.exitedCh():
			return fmt.Errorf("%s: containerd exited; log %s:\n%s", what, c.inst.logPath(), c.logTail())
		case <-time.After(readyPoll):
		}
	}
}

// waitReady waits for the socket to accept connections, connects the CRI
// clients and waits until CRI reports RuntimeReady and NetworkReady.
func (c *Containerd) waitReady(ctx context.Context, criTimeout time.Duration) error {
	if err := c.waitSocket(ctx); err != nil {
		return err
	}
	// The socket answers before the CRI plugin is up: containerd 1.6 then
	// fails the client's API check with "server is not initialized yet".
	err := c.poll(ctx, "connect CRI runtime service "+c.Endpoint(), func() error {
		rs, err := remote.NewRemoteRuntimeService(ctx, c.Endpoint(), criTimeout, nil, false)
		if err != nil {
			if strings.Contains(err.Error(), "not initialized yet") {
				return fmt.Errorf("%w: %w", errNotYet, err)
			}
			return fmt.Errorf("connect CRI runtime service %s: %w", c.Endpoint(), err)
		}
		c.runtime = rs
		return nil
	})
	if err != nil {
		return err
	}
	if c.images, err = remote.NewRemoteImageService(ctx, c.Endpoint(), criTimeout, nil, false); err != nil {
		return fmt.Errorf("connect CRI image service %s: %w", c.Endpoint(), err)
	}
	return c.poll(ctx, "wait for CRI status ready", func() error { return criReady(ctx, c.runtime) })
}

// waitSocket waits for the daemon's socket to accept connections.
func (c *Containerd) waitSocket(ctx context.Context) error {
	return c.poll(ctx, "wait for containerd socket "+c.inst.socket(), func() error {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "unix", c.inst.socket())
		if err != nil {
			return fmt.Errorf("%w: %w", errNotYet, err)
		}
		return conn.Close()
	})
}

// criReady checks the RuntimeReady and NetworkReady conditions.
func criReady(ctx context.Context, rs interface {
	Status(context.Context, bool) (*runtimeapi.StatusResponse, error)
}) error {
	st, err := rs.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("%w: CRI Status: %w", errNotYet, err)
	}
	ready := map[string]bool{}
	for _, cond := range st.GetStatus().GetConditions() {
		ready[cond.GetType()] = cond.GetStatus()
	}
	if !ready[runtimeapi.RuntimeReady] || !ready[runtimeapi.NetworkReady] {
		return fmt.Errorf("%w: CRI conditions %v", errNotYet, st.GetStatus().GetConditions())
	}
	return nil
}

// importImages imports every bed image with the runtime's own ctr into
// namespace k8s.io (concurrently: each ctr run costs a few hundred ms),
// then waits until CRI's ImageStatus sees each.
func (c *Containerd) importImages(ctx context.Context) error {
	errs := make([]error, len(c.bed.Images))
	var wg sync.WaitGroup
	for i, im := range c.bed.Images {
		wg.Go(func() { errs[i] = c.ctrImport(ctx, im) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, im := range c.bed.Images {
		if err := c.poll(ctx, "wait for CRI to see image "+im.Ref, func() error { return c.imageVisible(ctx, im) }); err != nil {
			return err
		}
	}
	return nil
}

// ctrImport runs "ctr images import" for one image.
func (c *Containerd) ctrImport(ctx context.Context, im Image) error {
	cmd := exec.CommandContext(ctx, c.rt.Ctr, "--address", c.inst.socket(), "--namespace", criNamespace,
		"images", "import", im.Tar)
	cmd.Env = c.daemonEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr import %q: %w: %s", im.Tar, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// imageVisible checks CRI ImageStatus knows im.Ref.
func (c *Containerd) imageVisible(ctx context.Context, im Image) error {
	st, err := c.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: im.Ref}, false)
	if err != nil {
		return fmt.Errorf("CRI ImageStatus %q: %w", im.Ref, err)
	}
	if st.GetImage() == nil {
		return fmt.Errorf("%w: CRI ImageStatus %q: no image", errNotYet, im.Ref)
	}
	return nil
}
