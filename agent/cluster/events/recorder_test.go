package events

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

// The correlator keeps the records of the last correlatorCacheSize
// events: an event repeated right away is counted on the first one's
// Event (a patch), one repeated after more distinct events than that is
// a new Event, its records gone.
func TestCorrelatorCacheBounded(t *testing.T) {
	cs := fake.NewClientset()
	r := New(kubeclienttest.Wrap(cs), "n1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	ref := func(i int) *v1.ObjectReference {
		name := fmt.Sprintf("p%d", i)
		return &v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID("uid-" + name), APIVersion: "v1"}
	}
	// The writes of events about the pods p0, p1...: a patch names the
	// Event, which is named after its object.
	writes := func() (creates, patches int) {
		for _, a := range cs.Actions() {
			if a.GetResource().Resource != "events" {
				continue
			}
			switch a := a.(type) {
			case k8stesting.CreateAction:
				if e, ok := a.GetObject().(*v1.Event); ok && strings.HasPrefix(e.InvolvedObject.Name, "p") {
					creates++
				}
			case k8stesting.PatchAction:
				if strings.HasPrefix(a.GetName(), "p") {
					patches++
				}
			}
		}
		return creates, patches
	}
	// Events recorded before Run starts its sink are dropped: wait for
	// one about another object to be written.
	probes := 0
	polltest.Until(t, 10*time.Second, "Run's sink", func() (bool, string) {
		probes++
		r.Eventf(&v1.ObjectReference{Kind: "Node", Name: fmt.Sprintf("node-%d", probes)}, v1.EventTypeNormal, "Probe", "up")
		for _, a := range cs.Actions() {
			if _, ok := a.(k8stesting.CreateAction); ok {
				return true, ""
			}
		}
		return false, "no event written"
	})
	waitFor := func(creates, patches int) {
		t.Helper()
		polltest.Until(t, 30*time.Second, "the events written", func() (bool, string) {
			c, p := writes()
			return c == creates && p == patches, fmt.Sprintf("%d created, %d patched; want %d and %d", c, p, creates, patches)
		})
	}
	r.Eventf(ref(0), v1.EventTypeNormal, "Tested", "once")
	r.Eventf(ref(0), v1.EventTypeNormal, "Tested", "once")
	waitFor(1, 1)
	for i := 1; i <= correlatorCacheSize; i++ {
		r.Eventf(ref(i), v1.EventTypeNormal, "Tested", "once")
	}
	r.Eventf(ref(0), v1.EventTypeNormal, "Tested", "once")
	waitFor(2+correlatorCacheSize, 1)
}
