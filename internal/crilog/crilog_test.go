package crilog

import (
	"context"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// The errors cri-client logs for an event stream (every end of it, the
// cancellation at shutdown included) come out as info lines at V(4), with
// the error, and not at all below that.
func TestQuietErrors(t *testing.T) {
	for _, v := range []int{0, 4} {
		logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(v)))
		ctx := QuietErrors(klog.NewContext(context.Background(), logger))
		klog.FromContext(ctx).WithValues("k", "v").Error(context.Canceled, "failed to receive streaming container event")
		got := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
		if v < Level {
			if got != "" {
				t.Errorf("-v=%d: logged %q", v, got)
			}
			continue
		}
		if strings.Contains(got, "ERROR") || !strings.Contains(got, "failed to receive streaming container event") || !strings.Contains(got, "context canceled") || !strings.Contains(got, `k="v"`) {
			t.Errorf("-v=%d: logged %q; want an info line with the error and the values", v, got)
		}
	}
}
