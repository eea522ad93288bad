package cluster

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/agent/sources"
)

type fakeLocal []*v1.Pod

func (f fakeLocal) Get(uid types.UID) *v1.Pod {
	for _, p := range f {
		if p.UID == uid {
			return p
		}
	}
	return nil
}

func (f fakeLocal) List() []*v1.Pod { return f }

type fakeAPI []*v1.Pod

func (f fakeAPI) PodByUID(uid types.UID) (*v1.Pod, bool) {
	for _, p := range f {
		if p.UID == uid {
			return p, true
		}
	}
	return nil, false
}

func (f fakeAPI) PodByName(namespace, name string) (*v1.Pod, bool) {
	for _, p := range f {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}

func (f fakeAPI) Pods() []*v1.Pod { return f }

func testPod(name, uid, source string, annotations map[string]string) *v1.Pod {
	a := map[string]string{manifest.AnnotationConfigSource: source}
	for k, v := range annotations {
		a[k] = v
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), Annotations: a}}
}

// The status syncer finds an API pod by UID and a static pod's status goes
// to its mirror, found by name; a static pod without a mirror, or whose
// namesake in the API is no mirror, has no API object.
func TestAPIPods(t *testing.T) {
	deleting := testPod("gone", "uid-gone", sources.API, nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	api := fakeAPI{
		testPod("web", "uid-web", sources.API, nil),
		testPod("static-n1", "uid-mirror", sources.API, map[string]string{manifest.AnnotationMirror: "hash"}),
		testPod("impostor-n1", "uid-impostor", sources.API, nil),
		deleting,
	}
	local := fakeLocal{
		testPod("web", "uid-web", sources.API, nil),
		testPod("static-n1", "uid-static", sources.File, nil),
		testPod("impostor-n1", "uid-local-impostor", sources.File, nil),
		testPod("lonely-n1", "uid-lonely", sources.HTTP, nil),
	}
	p := apiPods{pods: local, source: api}
	tests := []struct {
		uid        types.UID
		wantUID    types.UID
		wantMirror bool
	}{
		{"uid-web", "uid-web", false},
		{"uid-static", "uid-mirror", true},
		{"uid-local-impostor", "", false},
		{"uid-lonely", "", false},
		{"uid-unknown", "", false},
	}
	for _, tt := range tests {
		pod, mirror, ok := p.APIPod(tt.uid)
		if ok != (tt.wantUID != "") || mirror != tt.wantMirror || (ok && pod.UID != tt.wantUID) {
			t.Errorf("APIPod(%s) = %v, %v, %v; want %s, mirror %v", tt.uid, pod, mirror, ok, tt.wantUID, tt.wantMirror)
		}
	}
	if got, want := p.UIDs(), []types.UID{"uid-web", "uid-static", "uid-local-impostor", "uid-lonely"}; !slices.Equal(got, want) {
		t.Errorf("UIDs = %v, want %v", got, want)
	}
	if got, want := p.Deleted(), []types.UID{"uid-gone"}; !slices.Equal(got, want) {
		t.Errorf("Deleted = %v, want %v", got, want)
	}
}

func TestStaticPods(t *testing.T) {
	terminating := testPod("leaving-n1", "uid-leaving", sources.File, nil)
	terminating.DeletionTimestamp = &metav1.Time{}
	local := fakeLocal{
		testPod("web", "uid-web", sources.API, nil),
		testPod("static-n1", "uid-static", sources.File, nil),
		testPod("url-n1", "uid-url", sources.HTTP, nil),
		terminating,
	}
	var got []types.UID
	for _, p := range staticPods(local) {
		got = append(got, p.UID)
	}
	if want := []types.UID{"uid-static", "uid-url"}; !slices.Equal(got, want) {
		t.Errorf("staticPods = %v, want %v", got, want)
	}
}

func TestDeclaredFeatures(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{name: "kubelet port streams WebSockets", cfg: Config{KubeletPort: 10250, StreamsWebSockets: true}, want: []string{"ExtendWebSocketsToKubelet"}},
		{name: "debugging handlers off", cfg: Config{KubeletPort: 10250}},
		{name: "no kubelet port", cfg: Config{StreamsWebSockets: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := declaredFeatures(tt.cfg); !slices.Equal(got, tt.want) {
				t.Errorf("declaredFeatures = %q, want %q", got, tt.want)
			}
		})
	}
}
