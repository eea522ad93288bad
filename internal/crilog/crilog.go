package pleg

import (
	"context"

	"k8s.io/klog/v2"
)

// streamErrorLevel is the verbosity at which the errors k8s.io/cri-client
// logs for an event stream are shown.
const streamErrorLevel = 4

// quietStreamErrors returns ctx with its logger changed so that errors
// logged through it become info lines at streamErrorLevel. cri-client's
// GetContainerEvents logs every end of a stream as an error ("failed to
// receive streaming container event"), also the cancellation at shutdown,
// which is expected; eventedLoop.ended reports each end itself at the
// level it deserves, with the error.
func quietStreamErrors(ctx context.Context) context.Context {
	l := klog.FromContext(ctx)
	if l.GetSink() == nil {
		return ctx
	}
	return klog.NewContext(ctx, l.WithSink(errorsAsInfo{l.GetSink()}))
}

// errorsAsInfo is a klog.LogSink that logs Error calls as Info at
// streamErrorLevel, with the error under "err".
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
	if sink.Enabled(streamErrorLevel) {
		sink.Info(streamErrorLevel, msg, append(kv, "err", err)...)
	}
}

func (s errorsAsInfo) WithValues(kv ...any) klog.LogSink {
	return errorsAsInfo{s.LogSink.WithValues(kv...)}
}

func (s errorsAsInfo) WithName(name string) klog.LogSink {
	return errorsAsInfo{s.LogSink.WithName(name)}
}
