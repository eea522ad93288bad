package ctrdtest

import (
	"context"
	"errors"
	"fmt"
)

// StopDaemon stops the containerd process alone, as `systemctl stop
// containerd` does with the unit's KillMode=process: SIGTERM, SIGKILL after
// 10s. Its shims, and so the pods' containers, keep running, and its root,
// state and socket paths stay: StartDaemon starts it again on them. The CRI
// clients (Runtime, Images) stay open and fail until then.
//
// Not safe to call concurrently with Start, Stop, StartDaemon or itself.
func (c *Containerd) StopDaemon(ctx context.Context) error {
	exited := c.exitedCh()
	if exited == nil {
		return errors.New("ctrdtest: StopDaemon before Start")
	}
	// stopDaemon matches the daemon by its argv (its config path), never
	// a shim: those name the socket only in their -address flag.
	if err := stopDaemon(ctx, c.inst); err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("containerd %d of %q not reaped: %w", c.PID(), c.inst.Dir, ctx.Err())
	}
}

// StartDaemon starts containerd again after StopDaemon, with the same
// config, root, state and socket, and waits until CRI reports it ready
// through the clients Runtime and Images return (gRPC reconnects them). On
// start, containerd reloads its containers from its root and state dirs
// and reconnects to their shims: the containers it left running run on.
// ctx bounds the wait, as does DefaultStartTimeout.
//
// Not safe to call concurrently with Start, Stop, StopDaemon or itself.
func (c *Containerd) StartDaemon(ctx context.Context) error {
	if c.running() {
		return errors.New("ctrdtest: StartDaemon while containerd runs")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	if err := c.launch(); err != nil {
		return err
	}
	if err := c.waitSocket(ctx); err != nil {
		return err
	}
	return c.poll(ctx, "wait for CRI status ready after a restart", func() error { return criReady(ctx, c.runtime) })
}

// Restart is StopDaemon then StartDaemon: containerd restarted under its
// clients, its containers running on.
func (c *Containerd) Restart(ctx context.Context) error {
	if err := c.StopDaemon(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if err := c.StartDaemon(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return nil
}
