package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	criclient "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"
)

// Execer runs a command in a container (CRI ExecSync).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error)
}

// Exec runs cmd in the container, which may run for timeout. A zero exit
// is Success; a non-zero exit or a timeout is Failure; an error of the
// runtime is Unknown, returned as err.
//
// The runtime enforces timeout, and counts it from the moment the command
// runs (containerd starts its timer once the exec process has started), as
// the kubelet leaves it to: the call itself is bounded only by the runtime
// client's request timeout added to timeout. An agent-side deadline of
// timeout plus a second, as here until 2026-12-08, also counted the
// runtime's queue and runc's start of the exec: on a busy 2-core VM, 100
// pods with exec liveness probes every 10s (make bench) missed it, their
// containers were killed for it, and each restart added load until a
// fifth of the pods were never Running.
func Exec(ctx context.Context, r Execer, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	stdout, stderr, err := r.ExecSync(ctx, containerID, cmd, timeout)
	out := Clip(append(stdout, stderr...))
	var exitErr utilexec.ExitError
	switch {
	case err == nil:
		return Success, out, nil
	case errors.As(err, &exitErr):
		return Failure, fmt.Sprintf("command %q exited with %d: %s", strings.Join(cmd, " "), exitErr.ExitStatus(), out), nil
	case timedOut(err):
		return Failure, fmt.Sprintf("command %q timed out after %v", strings.Join(cmd, " "), timeout), nil
	default:
		return Unknown, "", fmt.Errorf("exec %q: %w", cmd, err)
	}
}

// timedOut reports whether an ExecSync error is the command's timeout.
func timedOut(err error) bool {
	return errors.Is(err, criclient.ErrCommandTimedOut) || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded
}
