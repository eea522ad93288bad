package mirror

import (
	"context"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/agent/manifest"
	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
)

type fakeMirrors []*v1.Pod

func (f fakeMirrors) MirrorPods() []*v1.Pod { return f }
func (f fakeMirrors) HasSynced() bool       { return true }

func static(name, hash string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("static-" + name), Annotations: map[string]string{manifest.AnnotationConfigHash: hash}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img"}}},
	}
}

func mirrorPod(name, hash string, deleting bool) *v1.Pod {
	p := MirrorOf(static(name, hash), "n1", hash)
	p.UID = types.UID("mirror-" + name)
	if deleting {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
	}
	return p
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name    string
		static  []*v1.Pod
		mirrors []*v1.Pod
		want    []string
	}{
		{name: "missing mirror created", static: []*v1.Pod{static("a", "h1")}, want: []string{"create:a"}},
		{name: "current mirror left alone", static: []*v1.Pod{static("a", "h1")}, mirrors: []*v1.Pod{mirrorPod("a", "h1", false)}},
		{name: "out-of-date mirror deleted", static: []*v1.Pod{static("a", "h2")}, mirrors: []*v1.Pod{mirrorPod("a", "h1", false)}, want: []string{"delete:a"}},
		{name: "deleted mirror deleted for good", static: []*v1.Pod{static("a", "h1")}, mirrors: []*v1.Pod{mirrorPod("a", "h1", true)}, want: []string{"delete:a"}},
		{name: "mirror of a gone static pod deleted", mirrors: []*v1.Pod{mirrorPod("a", "h1", false)}, want: []string{"delete:a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, m := range tt.mirrors {
				if err := client.Tracker().Add(m); err != nil {
					t.Fatal(err)
				}
			}
			m := New(Config{
				Client:   kubeclienttest.Wrap(client),
				NodeName: "n1",
				Static:   func() []*v1.Pod { return tt.static },
				Mirrors:  fakeMirrors(tt.mirrors),
				NodeRef: func() (metav1.OwnerReference, error) {
					return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}, nil
				},
			})
			m.Reconcile(context.Background())
			var got []string
			for _, a := range client.Actions() {
				switch a.GetVerb() {
				case "create":
					p, ok := a.(clienttesting.CreateAction).GetObject().(*v1.Pod)
					if !ok {
						t.Fatalf("created %T", a)
					}
					if p.Annotations[manifest.AnnotationMirror] == "" || p.Spec.NodeName != "n1" || p.OwnerReferences[0].UID != "node-uid" {
						t.Errorf("mirror pod created without annotation, node or owner: %+v", p.ObjectMeta)
					}
					got = append(got, "create:"+p.Name)
				case "delete":
					if d, ok := a.(clienttesting.DeleteAction); ok {
						got = append(got, "delete:"+d.GetName())
					}
				}
			}
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("actions = %v, want %v", got, tt.want)
			}
		})
	}
}
