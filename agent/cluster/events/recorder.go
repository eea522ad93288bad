package events

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// Component is the source component of the events, the kubelet's.
const Component = "kubelet"

// Recorder records events to the apiserver once Run runs; events recorded
// before Run has started its sink are dropped (client-go's broadcaster
// hands an event only to the watchers it has), which Cluster.Run makes a
// window of moments before any pod arrives. Safe for concurrent use.
type Recorder struct {
	client      kubeclient.Interface
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

// correlatorCacheSize is how many keys each of the event correlator's
// three caches keeps (its spam filter's rate limiters by object, its
// aggregator's and its logger's records by event), least recently used
// first out. client-go's default, 4096, is held for good: the records of
// some 550 events took 1 MB of the agent's heap (make bench, node mode,
// 110 pods), so some 7 MB once a few thousand pods have come and gone,
// for events that happened once (Pulled, Created, Started). An event
// that repeats (BackOff, Unhealthy) refreshes its records each time, so
// 256 keeps every pod's repeating events on a node of 110 pods.
const correlatorCacheSize = 256

// New returns a Recorder of events from nodeName's agent, sent through
// client.
func New(client kubeclient.Interface, nodeName string) *Recorder {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: correlatorCacheSize}))
	return &Recorder{
		client:      client,
		broadcaster: b,
		recorder:    b.NewRecorder(client.Scheme(), v1.EventSource{Component: Component, Host: nodeName}),
	}
}

// Eventf records an event about ref, of type v1.EventTypeNormal or
// v1.EventTypeWarning. It never blocks.
func (r *Recorder) Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any) {
	r.recorder.Eventf(ref, eventType, reason, messageFmt, args...)
}

// AnnotatedEventf is Eventf with annotations on the event, as the
// kubelet's eviction events carry them. It never blocks.
func (r *Recorder) AnnotatedEventf(ref *v1.ObjectReference, annotations map[string]string, eventType, reason, messageFmt string, args ...any) {
	r.recorder.AnnotatedEventf(ref, annotations, eventType, reason, messageFmt, args...)
}

// Run sends the events to the apiserver until ctx is done, and logs each
// at V(3).
func (r *Recorder) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("events")
	r.broadcaster.StartRecordingToSink(kubeclient.EventSink(ctx, r.client))
	r.broadcaster.StartEventWatcher(func(e *v1.Event) {
		logger.V(3).Info("Event", "object", fmt.Sprintf("%s %s/%s", e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name),
			"fieldPath", e.InvolvedObject.FieldPath, "type", e.Type, "reason", e.Reason, "message", e.Message)
	})
	<-ctx.Done()
	r.broadcaster.Shutdown()
}
