package mirror

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/internal/kubeclient"
)

// mirrorLister lists the mirror pods bound to the node.
type mirrorLister interface {
	// MirrorPods returns them; shared, read only.
	MirrorPods() []*v1.Pod
	// HasSynced reports whether the list is complete.
	HasSynced() bool
}

// Config configures a Manager.
type Config struct {
	// Client creates and deletes pods. Required.
	Client kubeclient.Interface
	// NodeName goes into the mirror pods' spec.nodeName. Required.
	NodeName string
	// Static returns the static pods the node runs and does not
	// terminate. Required.
	Static func() []*v1.Pod
	// Mirrors lists the existing mirror pods. Required.
	Mirrors mirrorLister
	// NodeRef, if set, returns the Node as the mirror pods' owner; while
	// it fails, no mirror pod is created.
	NodeRef func() (metav1.OwnerReference, error)
	Clock   clock.WithTicker
	// Period is how often everything is reconciled (2s).
	Period time.Duration
}

// Manager keeps the mirror pods. Create it with New; Run once; Wake from
// anywhere.
type Manager struct {
	cfg Config
	// wake asks Run to reconcile; capacity 1 so that wake-ups collapse.
	// Written without blocking by Wake, read by Run, never closed.
	wake chan struct{}
}

// New returns a Manager.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Period <= 0 {
		cfg.Period = 2 * time.Second
	}
	return &Manager{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Wake asks for a reconcile soon. Never blocks.
func (m *Manager) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run reconciles until ctx is done.
func (m *Manager) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("mirror")
	ctx = klog.NewContext(ctx, logger)
	ticker := m.cfg.Clock.NewTicker(m.cfg.Period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-m.wake:
		}
		m.Reconcile(ctx)
	}
}

// Reconcile makes one pass: it creates, re-creates and deletes mirror
// pods as the static pods want. Errors are logged; the next pass retries.
func (m *Manager) Reconcile(ctx context.Context) {
	if !m.cfg.Mirrors.HasSynced() {
		return
	}
	logger := klog.FromContext(ctx)
	existing := map[string]*v1.Pod{}
	for _, p := range m.cfg.Mirrors.MirrorPods() {
		existing[p.Namespace+"/"+p.Name] = p
	}
	wanted := map[string]bool{}
	for _, sp := range m.cfg.Static() {
		key := sp.Namespace + "/" + sp.Name
		wanted[key] = true
		hash := sp.Annotations[manifest.AnnotationConfigHash]
		mp := existing[key]
		if mp != nil && mp.DeletionTimestamp == nil && mp.Annotations[manifest.AnnotationMirror] == hash {
			continue
		}
		if mp != nil {
			reason := "out of date"
			if mp.DeletionTimestamp != nil {
				reason = "deleted"
			}
			if err := m.delete(ctx, mp); err != nil {
				logger.Error(err, "Deleting the mirror pod failed", "pod", klog.KObj(mp))
			} else {
				logger.Info("Deleted the mirror pod to re-create it", "pod", klog.KObj(mp), "reason", reason)
			}
			continue // re-created at the next pass, once the informer saw it go
		}
		if err := m.create(ctx, sp, hash); err != nil {
			logger.Error(err, "Creating the mirror pod failed", "pod", klog.KObj(sp), "podUID", sp.UID)
		}
	}
	for key, mp := range existing {
		if wanted[key] || mp.DeletionTimestamp != nil && mp.DeletionGracePeriodSeconds != nil && *mp.DeletionGracePeriodSeconds == 0 {
			continue
		}
		if err := m.delete(ctx, mp); err != nil {
			logger.Error(err, "Deleting the mirror pod of a gone static pod failed", "pod", klog.KObj(mp))
			continue
		}
		logger.Info("Deleted the mirror pod of a static pod that is gone", "pod", klog.KObj(mp))
	}
}

func (m *Manager) create(ctx context.Context, static *v1.Pod, hash string) error {
	mp := MirrorOf(static, m.cfg.NodeName, hash)
	if m.cfg.NodeRef != nil {
		ref, err := m.cfg.NodeRef()
		if err != nil {
			return fmt.Errorf("mirror pod %s/%s: owner: %w", static.Namespace, static.Name, err)
		}
		ref.Controller = ptr.To(true)
		mp.OwnerReferences = []metav1.OwnerReference{ref}
	}
	_, err := m.cfg.Client.Pods(mp.Namespace).Create(ctx, mp, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // ours, not seen yet, or a pod of the API we leave alone
	}
	if err != nil {
		return fmt.Errorf("create mirror pod %s/%s: %w", mp.Namespace, mp.Name, err)
	}
	klog.FromContext(ctx).Info("Created mirror pod", "pod", klog.KObj(mp), "podUID", static.UID)
	return nil
}

func (m *Manager) delete(ctx context.Context, mp *v1.Pod) error {
	err := m.cfg.Client.Pods(mp.Namespace).Delete(ctx, mp.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(mp.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete mirror pod %s/%s: %w", mp.Namespace, mp.Name, err)
	}
	return nil
}

// MirrorOf returns the mirror pod of a static pod: its name, namespace,
// labels, annotations and spec, bound to nodeName and annotated with hash.
func MirrorOf(static *v1.Pod, nodeName, hash string) *v1.Pod {
	annotations := make(map[string]string, len(static.Annotations)+1)
	for k, v := range static.Annotations {
		annotations[k] = v
	}
	annotations[manifest.AnnotationMirror] = hash
	spec := *static.Spec.DeepCopy()
	spec.NodeName = nodeName
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      static.Labels,
			Annotations: annotations,
		},
		Spec: spec,
	}
}
