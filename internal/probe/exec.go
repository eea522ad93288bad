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

// Exec runs cmd in the container and waits at most timeout. A zero exit is
// Success; a non-zero exit or a timeout is Failure; an error of the runtime
// is Unknown, returned as err.
func Exec(ctx context.Context, r Execer, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
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
