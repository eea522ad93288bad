package allocation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func reqs(cpu, mem string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
}

func ctrs(name, cpu, mem string) map[string]v1.ResourceRequirements {
	return map[string]v1.ResourceRequirements{name: {Requests: reqs(cpu, mem), Limits: reqs(cpu, mem)}}
}

// freed records what OnFreed is told.
type freed struct {
	mu   sync.Mutex
	uids []types.UID
}

func (f *freed) add(uids []types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uids = append(f.uids, uids...)
}

func (f *freed) take() []types.UID {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.uids
	f.uids = nil
	slices.Sort(out)
	return out
}

// What is granted and applied survives a restart of the agent: a new
// Manager reads it back from the file.
func TestCheckpointSurvivesRestart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	// A new node's root dir: made at the first write.
	path := filepath.Join(t.TempDir(), "root", StateFile)
	m := New(ctx, Config{Path: path, Clock: testingclock.NewFakeClock(t0)})
	if err := m.SetAllocated("a", ctrs("app", "250m", "64Mi"), reqs("250m", "64Mi")); err != nil {
		t.Fatal(err)
	}
	applied := v1.ResourceRequirements{Limits: reqs("100m", "32Mi")}
	if err := m.SetActuated("a", "app", applied); err != nil {
		t.Fatal(err)
	}
	again := New(ctx, Config{Path: path})
	alloc, ok := again.Allocated("a")
	if !ok || !apiequality.Semantic.DeepEqual(alloc, ctrs("app", "250m", "64Mi")) {
		t.Errorf("allocated after restart = %v, %v", alloc, ok)
	}
	if got, ok := again.Actuated("a", "app"); !ok || !apiequality.Semantic.DeepEqual(got, applied) {
		t.Errorf("actuated after restart = %v, %v", got, ok)
	}
	if err := again.Release("a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := New(ctx, Config{Path: path}).Allocated("a"); ok {
		t.Error("a released pod is still allocated after a restart")
	}
}

// A file that cannot be read is set aside, and the agent starts over from
// the pods' specs instead of refusing to run.
func TestCorruptCheckpointSetAside(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	path := filepath.Join(t.TempDir(), StateFile)
	if err := os.WriteFile(path, []byte(`{"version":1,"pods":`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := New(ctx, Config{Path: path})
	if _, ok := m.Allocated("a"); ok {
		t.Error("a pod is allocated from a corrupt file")
	}
	if _, err := os.Stat(path + ".bad"); err != nil {
		t.Errorf("the corrupt file was not set aside: %v", err)
	}
	if err := m.SetAllocated("a", ctrs("app", "1", "1Gi"), reqs("1", "1Gi")); err != nil {
		t.Fatalf("writing after a corrupt file: %v", err)
	}
}

// Requested sums the grants of the other pods the node still has; a pod
// that shrinks or goes tells the pods whose resize is deferred.
func TestRequestedAndFreed(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	gone := map[types.UID]bool{"stale": true}
	f := &freed{}
	m := New(ctx, Config{InUse: func(uid types.UID) bool { return !gone[uid] }, OnFreed: f.add, Clock: testingclock.NewFakeClock(t0)})
	for uid, cpu := range map[types.UID]string{"a": "500m", "b": "250m", "stale": "1"} {
		if err := m.SetAllocated(uid, ctrs("app", cpu, "100Mi"), reqs(cpu, "100Mi")); err != nil {
			t.Fatal(err)
		}
	}
	got := m.Requested("a")
	if got.Cpu().MilliValue() != 250 || got.Memory().Value() != 100<<20 {
		t.Errorf("requested by others than a = %v, want b's 250m and 100Mi (stale is not in use)", got)
	}
	m.SetResizePending("b", "OutOfcpu", "no room", 2)
	if f.take() != nil {
		t.Fatal("told of freed resources before any were freed")
	}
	// a grows: nothing freed.
	if err := m.SetAllocated("a", ctrs("app", "600m", "100Mi"), reqs("600m", "100Mi")); err != nil {
		t.Fatal(err)
	}
	if got := f.take(); got != nil {
		t.Errorf("growing a freed resources for %v", got)
	}
	if err := m.SetAllocated("a", ctrs("app", "100m", "100Mi"), reqs("100m", "100Mi")); err != nil {
		t.Fatal(err)
	}
	if got := f.take(); !slices.Equal(got, []types.UID{"b"}) {
		t.Errorf("a shrank: told %v, want [b]", got)
	}
	if err := m.Release("a"); err != nil {
		t.Fatal(err)
	}
	if got := f.take(); !slices.Equal(got, []types.UID{"b"}) {
		t.Errorf("a released: told %v, want [b]", got)
	}
}

// The resize conditions follow the kubelet's status manager: a pending
// reason other than Infeasible is Deferred; an in-progress condition keeps
// its generation until cleared, and its error until replaced.
func TestResizeConditions(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := testingclock.NewFakeClock(t0)
	m := New(ctx, Config{Clock: clk})
	if !m.SetResizePending("p", "OutOfcpu", "Node didn't have enough resource", 2) {
		t.Error("a new pending condition is no change")
	}
	clk.Step(time.Second)
	if m.SetResizePending("p", v1.PodReasonDeferred, "again", 2) {
		t.Error("the same reason and generation again is a change")
	}
	conds := m.ResizeConditions("p")
	if len(conds) != 1 || conds[0].Reason != v1.PodReasonDeferred || conds[0].Message != "again" || !conds[0].LastTransitionTime.Time.Equal(t0) {
		t.Errorf("conditions = %+v, want one Deferred with its first transition time", conds)
	}
	if !m.SetResizePending("p", v1.PodReasonInfeasible, "too big", 3) {
		t.Error("a new reason is no change")
	}
	m.ClearResizePending("p")
	if gen, changed := m.SetResizeInProgress("p", "", "", 3); gen != 3 || !changed {
		t.Errorf("in progress = %d, %v; want 3, true", gen, changed)
	}
	if gen, changed := m.SetResizeInProgress("p", v1.PodReasonError, "boom", 4); gen != 3 || !changed {
		t.Errorf("an error = %d, %v; want the first generation 3, changed", gen, changed)
	}
	if _, changed := m.SetResizeInProgress("p", "", "", 4); changed {
		t.Error("setting it without a reason dropped the error")
	}
	conds = m.ResizeConditions("p")
	if len(conds) != 1 || conds[0].Type != v1.PodResizeInProgress || conds[0].Reason != v1.PodReasonError || conds[0].ObservedGeneration != 3 {
		t.Errorf("conditions = %+v, want InProgress Error of generation 3", conds)
	}
	if gen, cleared := m.ClearResizeInProgress("p"); gen != 3 || !cleared {
		t.Errorf("clear = %d, %v", gen, cleared)
	}
	if _, cleared := m.ClearResizeInProgress("p"); cleared {
		t.Error("cleared twice")
	}
	if conds := m.ResizeConditions("p"); len(conds) != 0 {
		t.Errorf("conditions after clearing = %+v", conds)
	}
}

// Run's cleanup forgets the pods the node no longer has, in the file too.
func TestCleanupForgetsPodsNotInUse(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	path := filepath.Join(t.TempDir(), StateFile)
	inUse := map[types.UID]bool{"kept": true}
	m := New(ctx, Config{Path: path, InUse: func(uid types.UID) bool { return inUse[uid] }})
	for _, uid := range []types.UID{"kept", "gone"} {
		if err := m.SetAllocated(uid, ctrs("app", "1", "1Gi"), reqs("1", "1Gi")); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.cleanup(); err != nil {
		t.Fatal(err)
	}
	again := New(ctx, Config{Path: path})
	if _, ok := again.Allocated("gone"); ok {
		t.Error("a pod not in use is still in the file")
	}
	if _, ok := again.Allocated("kept"); !ok {
		t.Error("a pod in use was forgotten")
	}
}

// TestConcurrentSettersEachFindTheirChangeWritten: many pods granted at
// once (a batch of new pods) share the checkpoint's writes, and each
// setter returns only once the file holds its own change.
func TestConcurrentSettersEachFindTheirChangeWritten(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	path := filepath.Join(t.TempDir(), StateFile)
	m := New(ctx, Config{Path: path, Clock: testingclock.NewFakeClock(t0)})
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		uid := types.UID(fmt.Sprintf("pod-%d", i))
		wg.Go(func() {
			if err := m.SetAllocated(uid, ctrs("app", "10m", "8Mi"), reqs("10m", "8Mi")); err != nil {
				errs[i] = err
				return
			}
			if err := m.SetActuated(uid, "app", v1.ResourceRequirements{Limits: reqs("10m", "8Mi")}); err != nil {
				errs[i] = err
				return
			}
			pods, err := load(path)
			switch {
			case err != nil:
				errs[i] = err
			case pods[uid] == nil || pods[uid].Allocated == nil || pods[uid].Actuated == nil:
				errs[i] = fmt.Errorf("%s: the file lacks its grant or its applied resources when its setters returned: %+v", uid, pods[uid])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	pods, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != n {
		t.Errorf("the file holds %d pods, want %d", len(pods), n)
	}
}
