package podworkers

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/userns"
)

// sandboxSpy records the configs and handlers sandboxes are run with.
type sandboxSpy struct {
	*spyRuntime
	configs  []*runtimeapi.PodSandboxConfig
	handlers []string
}

func (s *sandboxSpy) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	s.mu.Lock()
	s.configs = append(s.configs, cfg)
	s.handlers = append(s.handlers, handler)
	s.mu.Unlock()
	return s.spyRuntime.RunPodSandbox(ctx, cfg, handler)
}

// hostUsers: false where the runtime handler supports user namespaces: the
// sandbox and every container get the pod's own range (the same each
// time), and a pod without the field gets none; where it does not (this
// machine's runc 1.1.5 under containerd 2.1), no sandbox is made, the
// kubelet's message says why and a FailedCreatePodSandBox event is
// recorded; the pod never runs with the host's users.
func TestUserNamespaces(t *testing.T) {
	newFixture := func(t *testing.T, supported map[string]bool) (*syncerFixture, *sandboxSpy) {
		f := newSyncer(t)
		spy := &sandboxSpy{spyRuntime: f.rt}
		f.s.cfg.Runtime = spy
		users, err := userns.New(filepath.Join(f.root, "pods"))
		if err != nil {
			t.Fatal(err)
		}
		f.s.cfg.UserNamespaces = users
		f.s.cfg.UsernsSupport = func(h string) (bool, error) {
			ok, known := supported[h]
			if !known {
				return false, errors.New(`the handler "` + h + `" is not known`)
			}
			return ok, nil
		}
		f.s.cfg.RuntimeClasses = fakeRuntimeClasses{"kata": "kata"}
		f.img.SetFakeImages([]string{"img-app"})
		return f, spy
	}

	f, spy := newFixture(t, map[string]bool{"": true})
	pod := newPod("userns", []string{"app"}, func(p *v1.Pod) { p.Spec.HostUsers = ptr.To(false) })
	plain := newPod("plain", []string{"app"})
	f.mustSync(t, pod)
	f.mustSync(t, plain)
	if len(spy.configs) != 2 {
		t.Fatalf("sandboxes run: %d", len(spy.configs))
	}
	ns := spy.configs[0].GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	if ns.GetMode() != runtimeapi.NamespaceMode_POD || len(ns.GetUids()) != 1 || ns.GetUids()[0].GetHostId() != 65536 || ns.GetUids()[0].GetLength() != 65536 {
		t.Errorf("sandbox user namespace = %v", ns)
	}
	if got := spy.configs[1].GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(); got != nil {
		t.Errorf("a pod without hostUsers got a user namespace: %v", got)
	}
	for _, c := range f.rt.created {
		got := c.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
		if c.GetLabels()["io.kubernetes.pod.name"] == "userns" && got.String() != ns.String() {
			t.Errorf("container of the userns pod: %v, want the sandbox's %v", got, ns)
		}
		if c.GetLabels()["io.kubernetes.pod.name"] == "plain" && got != nil {
			t.Errorf("container of the plain pod: %v", got)
		}
	}

	for _, tc := range []struct {
		name      string
		supported map[string]bool
		class     *string
		want      string
	}{
		{"runtime without user namespaces", map[string]bool{"": false}, nil, "can't set `spec.hostUsers: false`, runtime does not support user namespaces"},
		{"handler without user namespaces", map[string]bool{"": true, "kata": false}, ptr.To("kata"), "can't set `spec.hostUsers: false`, RuntimeClass handler \"kata\" does not support user namespaces"},
		{"runtime that lists no such handler", map[string]bool{"": true}, ptr.To("kata"), `RuntimeClass handler "kata" does not support user namespaces: the handler "kata" is not known`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, spy := newFixture(t, tc.supported)
			pod := newPod("userns", []string{"app"}, func(p *v1.Pod) {
				p.Spec.HostUsers = ptr.To(false)
				p.Spec.RuntimeClassName = tc.class
			})
			if _, err := f.sync(t, pod); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("sync: %v, want %q", err, tc.want)
			}
			if len(spy.configs) != 0 || slices.Contains(f.changes(), "CreateContainer") {
				t.Errorf("the pod ran: %v", f.changes())
			}
			if w := f.status.last(t).waiting["app"]; w.Reason != "ContainerCreating" || !strings.Contains(w.Message, tc.want) {
				t.Errorf("waiting = %+v", w)
			}
			if ev := f.events.take(); len(ev) != 1 || !strings.Contains(ev[0], "FailedCreatePodSandBox") || !strings.Contains(ev[0], tc.want) {
				t.Errorf("events = %q", ev)
			}
		})
	}
}
