package cleanup

import (
	"context"
	"time"
)

// Context returns a context for cleanup after parent was, or may be,
// cancelled: it carries parent's values, is not cancelled with parent, and
// is done after timeout or when the returned cancel is called, which the
// caller must do.
func Context(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(parent), timeout)
}
