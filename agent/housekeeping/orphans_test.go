package housekeeping

import (
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

type fakeSources struct {
	seen    bool
	refused []string
}

func (f fakeSources) AllSourcesSeen() bool { return f.seen }

func (f fakeSources) Errors() []sources.ManifestError {
	var out []sources.ManifestError
	for _, origin := range f.refused {
		out = append(out, sources.ManifestError{Source: sources.File, Origin: origin, Err: errors.New("bad")})
	}
	return out
}

// fakeRuntime is a PLEG cache's content.
type fakeRuntime map[types.UID]*kubecontainer.PodStatus

func (f fakeRuntime) Get(uid types.UID) (*kubecontainer.PodStatus, error) { return f[uid], nil }

func (f fakeRuntime) ForEach(fn func(types.UID, *kubecontainer.PodStatus)) {
	for uid, st := range f {
		fn(uid, st)
	}
}

type fakePods map[types.UID]*v1.Pod

func (f fakePods) Get(uid types.UID) *v1.Pod { return f[uid] }

func (f fakePods) List() []*v1.Pod {
	var out []*v1.Pod
	for _, p := range f {
		out = append(out, p)
	}
	return out
}

type fakeWorkers []types.UID

func (f fakeWorkers) Known() []types.UID { return f }

// ran is a pod the runtime holds: a sandbox labelled with node and made
// from origin, and, when grace >= 0, a container created with that grace.
func ran(name, node, origin string, grace int64) *kubecontainer.PodStatus {
	st := &kubecontainer.PodStatus{Sandboxes: []*runtimeapi.PodSandboxStatus{{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default"},
		Labels:      map[string]string{kubecontainer.LabelNode: node},
		Annotations: map[string]string{manifest.AnnotationConfigOrigin: origin},
	}}}
	if grace >= 0 {
		st.Containers = []*kubecontainer.ContainerStatus{{Name: "app", PodTerminationGrace: grace}}
	}
	return st
}

func TestOrphansFind(t *testing.T) {
	rt := fakeRuntime{
		"gone":    ran("gone", "n1", "/m/gone.yaml", 7),
		"nograce": ran("nograce", "n1", "/m/nograce.yaml", -1),
		"wanted":  ran("wanted", "n1", "/m/wanted.yaml", 30),
		"working": ran("working", "n1", "/m/working.yaml", 30),
		"foreign": ran("foreign", "other", "/m/foreign.yaml", 30),
		"refused": ran("refused", "n1", "/m/refused.yaml", 30),
		"empty":   {},
	}
	usage := Usage{
		Pods:    fakePods{"wanted": {ObjectMeta: metav1.ObjectMeta{UID: "wanted"}}},
		Workers: fakeWorkers{"working"},
		Runtime: rt,
	}
	find := func(src fakeSources) map[types.UID]int64 {
		o := NewOrphans(OrphansConfig{NodeName: "n1", Sources: src, Runtime: rt, Known: usage.Known})
		out := map[types.UID]int64{}
		for _, p := range o.Find() {
			out[p.UID] = *p.Spec.TerminationGracePeriodSeconds
			if p.Name == "" || p.Namespace != "default" || p.Annotations[manifest.AnnotationConfigOrigin] == "" {
				t.Errorf("orphan %s lacks its identity: %+v", p.UID, p.ObjectMeta)
			}
		}
		return out
	}

	if got := find(fakeSources{seen: false}); len(got) != 0 {
		t.Errorf("before every source was seen: %v, want none", got)
	}
	got := find(fakeSources{seen: true, refused: []string{"/m/refused.yaml"}})
	want := map[types.UID]int64{"gone": 7, "nograce": v1.DefaultTerminationGracePeriodSeconds}
	if len(got) != len(want) || got["gone"] != want["gone"] || got["nograce"] != want["nograce"] {
		t.Errorf("orphans = %v, want %v", got, want)
	}
}

func TestUsage(t *testing.T) {
	u := Usage{
		Pods:    fakePods{"wanted": {ObjectMeta: metav1.ObjectMeta{UID: "wanted"}}},
		Workers: fakeWorkers{"working"},
		Runtime: fakeRuntime{
			"running": ran("running", "n1", "", 30),
			"empty":   {},
		},
	}
	keys := func(m map[types.UID]bool) []types.UID {
		var out []types.UID
		for uid, ok := range m {
			if ok {
				out = append(out, uid)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := keys(u.Known()), []types.UID{"wanted", "working"}; !slices.Equal(got, want) {
		t.Errorf("Known = %v, want %v", got, want)
	}
	if got, want := keys(u.InUse()), []types.UID{"running", "wanted", "working"}; !slices.Equal(got, want) {
		t.Errorf("InUse = %v, want %v", got, want)
	}
	for uid, want := range map[types.UID]bool{"wanted": true, "working": true, "running": true, "empty": false, "unknown": false} {
		if got := u.Uses(uid); got != want {
			t.Errorf("Uses(%s) = %v, want %v", uid, got, want)
		}
	}
}
