package podstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// statusSource holds the agent's newest status of each pod.
type statusSource interface {
	// Get returns the pod's status and whether there is one.
	Get(uid types.UID) (v1.PodStatus, bool)
}

// podLookup finds the API objects of the node's pods. Safe for concurrent
// use.
type podLookup interface {
	// APIPod returns the API object that shows pod uid: the pod itself,
	// or, for a static pod, its mirror pod; and whether it is a mirror.
	APIPod(uid types.UID) (pod *v1.Pod, mirror bool, ok bool)
	// UIDs returns the local UIDs of every pod the node knows, whether
	// from the API or static.
	UIDs() []types.UID
	// Deleted returns the UIDs of the API pods of the node that are being
	// deleted.
	Deleted() []types.UID
}

// Config configures a Syncer.
type Config struct {
	// Client patches and deletes pods. Required.
	Client kubeclient.Interface
	// Statuses and Pods are required.
	Statuses statusSource
	Pods     podLookup
	// Gone reports whether the node holds nothing of the pod any more
	// (its containers and sandboxes are removed): a pod being deleted is
	// then deleted from the API. Required.
	Gone func(uid types.UID) bool
	// Clock drives the queue's back-off and the resync. Nil: real clock.
	Clock clock.WithTicker
	// ResyncPeriod is how often every pod is checked (10s);
	// DeletedCheckPeriod how often pods being deleted are (1s).
	ResyncPeriod       time.Duration
	DeletedCheckPeriod time.Duration
}

// Syncer patches pods' status and does final deletes. Create it with New,
// run it with Run; Notify is safe to call from any goroutine at any time.
type Syncer struct {
	cfg   Config
	queue workqueue.TypedRateLimitingInterface[types.UID]
	// finalDeleted holds the pods the Syncer has deleted from the API,
	// until the node's view of the API no longer shows them: a status
	// stored or a resync after the final delete writes nothing (a patch
	// would only get 404). Only the queue's one worker uses it.
	finalDeleted map[types.UID]bool
}

// New returns a Syncer.
func New(cfg Config) *Syncer {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = 10 * time.Second
	}
	if cfg.DeletedCheckPeriod <= 0 {
		cfg.DeletedCheckPeriod = time.Second
	}
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[types.UID](200*time.Millisecond, 30*time.Second)
	return &Syncer{
		cfg:          cfg,
		finalDeleted: map[types.UID]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[types.UID]{
			Name:  "pod-status",
			Clock: cfg.Clock,
		}),
	}
}

// Notify asks for the pod's status to be written. Never blocks; repeated
// calls for a pod not yet handled collapse into one.
func (s *Syncer) Notify(uid types.UID) { s.queue.Add(uid) }

// Run handles queued pods until ctx is done, with one worker.
func (s *Syncer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("podstatus")
	ctx = klog.NewContext(ctx, logger)
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	resync := s.cfg.Clock.NewTicker(s.cfg.ResyncPeriod)
	defer resync.Stop()
	deleted := s.cfg.Clock.NewTicker(s.cfg.DeletedCheckPeriod)
	defer deleted.Stop()
	done := make(chan struct{}) // closed when the worker ends
	go func() {
		defer close(done)
		for s.processNext(ctx) {
		}
	}()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-resync.C():
			for _, uid := range s.cfg.Pods.UIDs() {
				s.queue.Add(uid)
			}
		case <-deleted.C():
			for _, uid := range s.cfg.Pods.Deleted() {
				s.queue.Add(uid)
			}
		}
	}
}

func (s *Syncer) processNext(ctx context.Context) bool {
	uid, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(uid)
	if err := s.sync(ctx, uid); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Writing pod status failed; will retry", "podUID", uid, "err", err.Error())
			s.queue.AddRateLimited(uid)
		}
		return true
	}
	s.queue.Forget(uid)
	return true
}

// sync writes the status of pod uid, and deletes the pod from the API when
// it is being deleted and gone from the node.
func (s *Syncer) sync(ctx context.Context, uid types.UID) error {
	pod, mirror, ok := s.cfg.Pods.APIPod(uid)
	if !ok {
		delete(s.finalDeleted, uid)
		return nil // not (yet, or any more) in the API: nothing to write
	}
	if s.finalDeleted[uid] {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "podUID", uid)
	if st, ok := s.cfg.Statuses.Get(uid); ok {
		merged := Merge(pod.Status, st)
		patch, err := Patch(pod, merged)
		if err != nil {
			return err
		}
		if patch != nil {
			_, err := s.cfg.Client.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("patch status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			logger.V(3).Info("Pod status patched", "phase", merged.Phase, "patch", string(patch))
		}
	}
	if mirror || pod.DeletionTimestamp == nil || !s.cfg.Gone(uid) {
		return nil
	}
	err := s.cfg.Client.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.finalDeleted[uid] = true
	logger.Info("Pod deleted from the apiserver: it is gone from the node")
	return nil
}

// Merge returns the status to write: the agent's status st, with the
// conditions of api whose type the agent does not set (set by others, say
// DisruptionTarget by the API) and api's nominatedNodeName kept. The
// resize conditions are the agent's even when it does not set them: one
// missing from st has been cleared. A terminal phase in the API is never
// turned back.
func Merge(api, st v1.PodStatus) v1.PodStatus {
	out := *st.DeepCopy()
	own := map[v1.PodConditionType]bool{v1.PodResizePending: true, v1.PodResizeInProgress: true}
	for _, c := range out.Conditions {
		own[c.Type] = true
	}
	for _, c := range api.Conditions {
		if !own[c.Type] {
			out.Conditions = append(out.Conditions, c)
		}
	}
	out.NominatedNodeName = api.NominatedNodeName
	if (api.Phase == v1.PodSucceeded || api.Phase == v1.PodFailed) && out.Phase != api.Phase {
		out.Phase = api.Phase
	}
	return out
}

// statusOnly is the JSON form of a pod of which only the status is set.
type statusOnly struct {
	Status v1.PodStatus `json:"status"`
}

// Patch returns the strategic merge patch of pod's status to st, with the
// pod's UID as precondition, or nil when nothing would change.
func Patch(pod *v1.Pod, st v1.PodStatus) ([]byte, error) {
	// The two sides are a pod's status alone: encoding v1.Pod{Status: ...}
	// built encoding/json's encoders of every type a PodSpec holds, kept
	// for the life of the process (267 KB of heap), for fields both sides
	// leave empty.
	oldJSON, err := json.Marshal(statusOnly{Status: pod.Status})
	if err != nil {
		return nil, fmt.Errorf("encode status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	newJSON, err := json.Marshal(statusOnly{Status: st})
	if err != nil {
		return nil, fmt.Errorf("encode status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if string(patch) == "{}" {
		return nil, nil
	}
	// Precondition: the patch applies to this pod, not to a new one of
	// the same name.
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, fmt.Errorf("status patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m["metadata"] = map[string]any{"uid": string(pod.UID)}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("status patch of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return out, nil
}
