package podmanager

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestManager(t *testing.T) {
	pod := func(namespace, name string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name)}}
	}
	m := New()
	for _, p := range []*v1.Pod{pod("b", "x"), pod("a", "z"), pod("a", "y")} {
		m.Set(p)
	}
	var got []types.UID
	for _, p := range m.List() {
		got = append(got, p.UID)
	}
	if len(got) != 3 || got[0] != "a/y" || got[1] != "a/z" || got[2] != "b/x" {
		t.Errorf("List = %v, want sorted by namespace and name", got)
	}
	newer := pod("a", "y")
	newer.Labels = map[string]string{"v": "2"}
	m.Set(newer)
	if p := m.Get("a/y"); p != newer {
		t.Errorf("Get after Set of the same UID = %v, want the newer pod", p)
	}
	m.Remove("a/y")
	if p := m.Get("a/y"); p != nil || len(m.List()) != 2 {
		t.Errorf("after Remove: Get = %v, %d pods; want nil and 2", p, len(m.List()))
	}
	m.Remove("never-there")
}

// recordedRefs records RegisterPod and UnregisterPod calls.
type recordedRefs struct{ calls []string }

func (r *recordedRefs) RegisterPod(pod *v1.Pod) {
	r.calls = append(r.calls, "register "+string(pod.UID))
}
func (r *recordedRefs) UnregisterPod(uid types.UID) {
	r.calls = append(r.calls, "unregister "+string(uid))
}

func TestManagerReferences(t *testing.T) {
	refs := &recordedRefs{}
	m := New(WithReferences(refs))
	running := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "a"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	m.Set(running)
	m.Set(running.DeepCopy())
	finished := running.DeepCopy()
	finished.Status.Phase = v1.PodSucceeded
	m.Set(finished)
	m.Remove("a")
	want := []string{"register a", "register a", "unregister a", "unregister a"}
	if !slices.Equal(refs.calls, want) {
		t.Fatalf("calls %v, want %v", refs.calls, want)
	}
	if m.Get("a") != nil {
		t.Error("the removed pod is still there")
	}
}
