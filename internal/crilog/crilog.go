package crilog

import (
	"context"

	"k8s.io/klog/v2"
)

// Level is the verbosity at which QuietErrors shows the errors it quiets.
const Level = 4

// QuietErrors returns ctx with its logger changed so that errors logged
// through it become info lines at Level, with the error under "err". Use
// it for a CRI call whose failure the caller expects and reports itself at
// the level it deserves: cri-client logs every failed call as an error,
// such as the end of an event stream at shutdown ("failed to receive
// streaming container event") or containerd 1.6's Unimplemented answer to
// RuntimeConfig.
func QuietErrors(ctx context.Context) context.Context {
	l := klog.FromContext(ctx)
	if l.GetSink() == nil {
		return ctx
	}
	return klog.NewContext(ctx, l.WithSink(errorsAsInfo{l.GetSink()}))
}

// errorsAsInfo is a klog.LogSink that logs Error calls as Info at Level.
type errorsAsInfo struct {
	klog.LogSink
}

// callDepthSink is logr's CallDepthLogSink, which klog's sinks implement.
type callDepthSink interface {
	WithCallDepth(depth int) klog.LogSink
}

func (s errorsAsInfo) Error(err error, msg string, kv ...any) {
	sink := s.LogSink
	if cd, ok := sink.(callDepthSink); ok {
		sink = cd.WithCallDepth(1) // this frame: name the caller's line
	}
	if sink.Enabled(Level) {
		sink.Info(Level, msg, append(kv, "err", err)...)
	}
}

func (s errorsAsInfo) WithValues(kv ...any) klog.LogSink {
	return errorsAsInfo{s.LogSink.WithValues(kv...)}
}

func (s errorsAsInfo) WithName(name string) klog.LogSink {
	return errorsAsInfo{s.LogSink.WithName(name)}
}
