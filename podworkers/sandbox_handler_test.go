package podworkers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

type fakeRuntimeClasses map[string]string

func (f fakeRuntimeClasses) LookupRuntimeHandler(_ context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	h, ok := f[*name]
	if !ok {
		return "", errors.New(`runtimeclass.node.k8s.io "` + *name + `" not found`)
	}
	return h, nil
}

// runtimeClassName is resolved to the handler RunPodSandbox gets; a class
// that cannot be resolved makes no sandbox, records FailedCreatePodSandBox
// and keeps the containers ContainerCreating with the error; without a
// resolver (standalone) the class is refused, never run under the default
// handler.
func TestRuntimeClassHandler(t *testing.T) {
	f := newSyncer(t)
	f.s.cfg.RuntimeClasses = fakeRuntimeClasses{"gvisor": "runsc"}
	f.img.SetFakeImages([]string{"img-app"})

	pod := newPod("web", []string{"app"}, func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("gvisor") })
	f.mustSync(t, pod)
	sandboxes, err := f.rt.ListPodSandbox(f.ctx, nil)
	if err != nil || len(sandboxes) != 1 || sandboxes[0].GetRuntimeHandler() != "runsc" {
		t.Fatalf("sandboxes = %v (%v), want one with handler runsc", sandboxes, err)
	}

	for _, tc := range []struct {
		name    string
		classes runtimeClasses
		want    string
	}{
		{"unknown class", fakeRuntimeClasses{}, `runtimeclass.node.k8s.io "kata" not found`},
		{"standalone", nil, `spec.runtimeClassName: RuntimeClass "kata" cannot be resolved`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSyncer(t)
			f.s.cfg.RuntimeClasses = tc.classes
			f.img.SetFakeImages([]string{"img-app"})
			pod := newPod("kata", []string{"app"}, func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("kata") })
			if _, err := f.sync(t, pod); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("sync: %v, want %q", err, tc.want)
			}
			if slices.Contains(f.changes(), "RunPodSandbox") {
				t.Errorf("a sandbox was run: %v", f.changes())
			}
			w := f.status.last(t).waiting["app"]
			if w.Reason != "ContainerCreating" || !strings.Contains(w.Message, tc.want) {
				t.Errorf("waiting = %+v", w)
			}
			events := f.events.take()
			if len(events) != 1 || !strings.HasPrefix(events[0], "Warning FailedCreatePodSandBox : Failed to create pod sandbox: ") || !strings.Contains(events[0], tc.want) {
				t.Errorf("events = %q", events)
			}
		})
	}
}
