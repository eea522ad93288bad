package podworkers

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// recordedEvents keeps the events recorded, as "reason fieldPath: message".
type recordedEvents struct {
	mu  sync.Mutex
	all []string
}

func (r *recordedEvents) Eventf(ref *v1.ObjectReference, eventType, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, fmt.Sprintf("%s %s %s: %s", eventType, reason, ref.FieldPath, fmt.Sprintf(messageFmt, args...)))
}

func (r *recordedEvents) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.all
	r.all = nil
	return out
}

// A pod's start records the kubelet's events, each about its container
// (the field path kubectl describe shows); a failed pull records Pulling
// and Failed, and the back-off that follows BackOff.
func TestSyncPodEvents(t *testing.T) {
	f := newSyncer(t)
	f.img.SetFakeImages([]string{"img-app"})
	pod := newPod("web", []string{"app"})
	f.mustSync(t, pod)
	want := []string{
		`Normal Pulled spec.containers{app}: Container image "img-app" already present on machine and can be accessed by the pod`,
		`Normal Created spec.containers{app}: Created container: app`,
		`Normal Started spec.containers{app}: Started container app`,
	}
	if got := f.events.take(); !slices.Equal(got, want) {
		t.Errorf("events of a start:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	g := newSyncer(t)
	other := newPod("other", []string{"app"})
	g.img.InjectError("PullImage", errors.New("registry down"))
	_, _ = g.sync(t, other)
	got := g.events.take()
	if len(got) != 3 || !strings.HasPrefix(got[0], `Normal Pulling spec.containers{app}: Pulling image "img-app"`) ||
		!strings.Contains(got[1], `Warning Failed spec.containers{app}: Failed to pull image "img-app": `) || !strings.Contains(got[1], "registry down") ||
		got[2] != "Warning Failed spec.containers{app}: Error: ErrImagePull" {
		t.Errorf("events of a failed pull:\n%s", strings.Join(got, "\n"))
	}
	g.clock.Step(time.Second) // within the back-off
	_, _ = g.sync(t, other)
	if got := g.events.take(); !slices.Contains(got, `Normal BackOff spec.containers{app}: Back-off pulling image "img-app"`) {
		t.Errorf("events within the pull back-off:\n%s", strings.Join(got, "\n"))
	}
}
