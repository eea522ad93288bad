package objects

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/kubeclient/kubeclienttest"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

// nodeAuthorizer makes a fake clientset answer list and watch of
// configMaps and secrets as the Node authorizer does: only with the
// field selector metadata.name=NAME, and then only with that object
// (the fake's tracker ignores field selectors). It records each call.
type nodeAuthorizer struct {
	mu sync.Mutex
	// calls are "verb resource namespace/name".
	calls []string
	// forbidden names objects the node may not read.
	forbidden map[string]bool
	// open counts the watches not yet stopped, by namespace/name.
	open map[string]int
}

func newFakeCluster(t *testing.T, objs ...runtime.Object) (*fake.Clientset, *nodeAuthorizer) {
	client := fake.NewClientset(objs...)
	a := &nodeAuthorizer{forbidden: map[string]bool{}, open: map[string]int{}}
	name := func(action clienttesting.Action) (string, error) {
		var restr fields.Selector
		switch act := action.(type) {
		case clienttesting.ListAction:
			restr = act.GetListRestrictions().Fields
		case clienttesting.WatchAction:
			restr = act.GetWatchRestrictions().Fields
		}
		n, ok := restr.RequiresExactMatch("metadata.name")
		k := action.GetNamespace() + "/" + n
		a.mu.Lock()
		defer a.mu.Unlock()
		a.calls = append(a.calls, action.GetVerb()+" "+action.GetResource().Resource+" "+k)
		if !ok || restr.String() != "metadata.name="+n || a.forbidden[k] {
			return "", apierrors.NewForbidden(action.GetResource().GroupResource(), "", fmt.Errorf("node may only read objects its pods refer to (selector %q)", restr))
		}
		return n, nil
	}
	for _, res := range []string{"configmaps", "secrets"} {
		client.PrependReactor("list", res, func(action clienttesting.Action) (bool, runtime.Object, error) {
			n, err := name(action)
			if err != nil {
				return true, nil, err
			}
			gvr := action.GetResource()
			obj, err := client.Tracker().Get(gvr, action.GetNamespace(), n)
			switch {
			case apierrors.IsNotFound(err):
				obj = nil
			case err != nil:
				return true, nil, err
			}
			if res == "configmaps" {
				l := &v1.ConfigMapList{}
				if obj != nil {
					l.Items = append(l.Items, *obj.(*v1.ConfigMap))
				}
				return true, l, nil
			}
			l := &v1.SecretList{}
			if obj != nil {
				l.Items = append(l.Items, *obj.(*v1.Secret))
			}
			return true, l, nil
		})
		client.PrependWatchReactor(res, func(action clienttesting.Action) (bool, watch.Interface, error) {
			n, err := name(action)
			if err != nil {
				return true, nil, err
			}
			w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
			if err != nil {
				return true, nil, err
			}
			k := action.GetNamespace() + "/" + n
			a.mu.Lock()
			a.open[k]++
			a.mu.Unlock()
			filtered := watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				m, err := metaName(e.Object)
				return e, err == nil && m == n
			})
			return true, &countedWatch{Interface: filtered, done: func() {
				a.mu.Lock()
				a.open[k]--
				a.mu.Unlock()
			}}, nil
		})
	}
	t.Cleanup(func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, c := range a.calls {
			if !strings.Contains(c, "/") || strings.HasSuffix(c, "/") {
				t.Errorf("a call without an object's name: %q", c)
			}
		}
	})
	return client, a
}

func metaName(o runtime.Object) (string, error) {
	switch o := o.(type) {
	case *v1.ConfigMap:
		return o.Name, nil
	case *v1.Secret:
		return o.Name, nil
	}
	return "", fmt.Errorf("unexpected %T", o)
}

// countedWatch tells when the watch is stopped.
type countedWatch struct {
	watch.Interface
	once sync.Once
	done func()
}

func (w *countedWatch) Stop() {
	w.Interface.Stop()
	w.once.Do(w.done)
}

// openWatches returns the objects with a watch open, sorted.
func (a *nodeAuthorizer) openWatches() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for k, n := range a.open {
		if n > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// count returns how many calls of verb on namespace/name were made.
func (a *nodeAuthorizer) count(verb, resource, nsName string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c == verb+" "+resource+" "+nsName {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or 10s passed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runCache(t *testing.T, o *Cache) context.Context {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ctx
}

func configMap(name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"k": value}}
}

func secret(name, value string) *v1.Secret {
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string][]byte{"k": []byte(value)}}
}

// podUsing returns a pod of uid that refers to the configMaps cms (a
// volume each) and secrets (env from each).
func podUsing(uid string, cms, secrets []string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}}
	for _, cm := range cms {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: cm, VolumeSource: v1.VolumeSource{
			ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}})
	}
	c := v1.Container{Name: "c"}
	for _, s := range secrets {
		c.EnvFrom = append(c.EnvFrom, v1.EnvFromSource{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: s}}})
	}
	pod.Spec.Containers = []v1.Container{c}
	return pod
}

func TestObjectsWatchedOneByOne(t *testing.T) {
	client, authz := newFakeCluster(t, configMap("cm", "v1"), configMap("other", "x"), secret("s", "v1"), secret("hidden", "x"))
	authz.forbidden["ns/hidden"] = true
	o := New(Config{Client: kubeclienttest.Wrap(client), SyncTimeout: 2 * time.Second})
	ctx := runCache(t, o)

	if _, err := o.GetConfigMap(ctx, "ns", "cm"); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("GetConfigMap of an object no pod refers to = %v, want a not-referred-to error", err)
	}
	o.RegisterPod(podUsing("a", []string{"cm", "missing"}, []string{"s", "hidden"}))
	if cm, err := o.GetConfigMap(ctx, "ns", "cm"); err != nil || cm.Data["k"] != "v1" {
		t.Fatalf("GetConfigMap = %v, %v", cm, err)
	}
	if s, err := o.GetSecret(ctx, "ns", "s"); err != nil || string(s.Data["k"]) != "v1" {
		t.Fatalf("GetSecret = %v, %v", s, err)
	}
	if _, err := o.GetConfigMap(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("GetConfigMap of a missing configMap: %v, want NotFound", err)
	}
	if _, err := o.GetSecret(ctx, "ns", "hidden"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "secrets ns/hidden") {
		t.Errorf("GetSecret the apiserver refuses: %v, want the Forbidden error naming the secret", err)
	}
	if n := authz.count("list", "configmaps", "ns/other"); n != 0 {
		t.Errorf("a configMap no pod refers to was listed %d times", n)
	}

	// An update reaches the cache through the object's watch.
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, configMap("cm", "v2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the update to reach the cache", func() bool {
		cm, err := o.GetConfigMap(ctx, "ns", "cm")
		return err == nil && cm.Data["k"] == "v2"
	})
	if n := authz.count("list", "configmaps", "ns/cm"); n != 1 {
		t.Errorf("configMap ns/cm listed %d times, want once (then watched)", n)
	}
	// An object created after the pod referred to it shows up.
	if _, err := client.CoreV1().ConfigMaps("ns").Create(ctx, configMap("missing", "now"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the created configMap to reach the cache", func() bool {
		cm, err := o.GetConfigMap(ctx, "ns", "missing")
		return err == nil && cm.Data["k"] == "now"
	})
}

func TestObjectsReferenceCounting(t *testing.T) {
	client, authz := newFakeCluster(t, configMap("shared", "v"), configMap("a-only", "v"), configMap("b-only", "v"), secret("s", "v"))
	o := New(Config{Client: kubeclienttest.Wrap(client), SyncTimeout: 2 * time.Second})
	ctx := runCache(t, o)

	a := podUsing("a", []string{"shared", "a-only"}, []string{"s"})
	b := podUsing("b", []string{"shared", "b-only"}, nil)
	o.RegisterPod(a)
	o.RegisterPod(b)
	o.RegisterPod(a) // the same pod again: no new references
	all := []string{"ns/a-only", "ns/b-only", "ns/s", "ns/shared"}
	waitFor(t, fmt.Sprintf("watches of %v", all), func() bool { return slices.Equal(authz.openWatches(), all) })

	steps := []struct {
		name string
		do   func()
		want []string
		// gone are objects that must no longer be served.
		gone []string
	}{
		{
			name: "a newer version of a drops a-only and s, keeps shared",
			do:   func() { o.RegisterPod(podUsing("a", []string{"shared"}, nil)) },
			want: []string{"ns/b-only", "ns/shared"},
			gone: []string{"a-only"},
		},
		{
			name: "a unregistered: shared stays for b",
			do:   func() { o.UnregisterPod("a") },
			want: []string{"ns/b-only", "ns/shared"},
		},
		{
			name: "b unregistered: nothing is watched",
			do:   func() { o.UnregisterPod("b") },
			want: nil,
			gone: []string{"shared", "b-only"},
		},
		{
			name: "unregistering an unknown pod changes nothing",
			do:   func() { o.UnregisterPod("never") },
			want: nil,
		},
	}
	for _, st := range steps {
		st.do()
		waitFor(t, st.name, func() bool { return slices.Equal(authz.openWatches(), st.want) })
		for _, name := range st.gone {
			if _, err := o.GetConfigMap(ctx, "ns", name); err == nil || !strings.Contains(err.Error(), "no pod of this node refers to it") {
				t.Errorf("%s: GetConfigMap(%s) = %v, want a not-referred-to error", st.name, name, err)
			}
		}
	}
	if n := authz.count("list", "configmaps", "ns/shared"); n != 1 {
		t.Errorf("shared listed %d times, want once: its watch must survive a's update", n)
	}
}

func TestObjectsImmutableAndIdle(t *testing.T) {
	immutable := configMap("frozen", "v")
	immutable.Immutable = ptr.To(true)
	client, authz := newFakeCluster(t, immutable, configMap("env-only", "v1"))
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	o := New(Config{Client: kubeclienttest.Wrap(client), Clock: clk, SyncTimeout: 2 * time.Second, SyncFrequency: 10 * time.Second})
	ctx := runCache(t, o)
	logger := klog.FromContext(ctx)
	o.RegisterPod(podUsing("a", []string{"frozen", "env-only"}, nil))

	if cm, err := o.GetConfigMap(ctx, "ns", "frozen"); err != nil || cm.Data["k"] != "v" {
		t.Fatalf("GetConfigMap(frozen) = %v, %v", cm, err)
	}
	if _, err := o.GetConfigMap(ctx, "ns", "env-only"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the immutable configMap's watch to stop", func() bool {
		return slices.Equal(authz.openWatches(), []string{"ns/env-only"})
	})
	if cm, err := o.GetConfigMap(ctx, "ns", "frozen"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("GetConfigMap(frozen) after its watch stopped = %v, %v", cm, err)
	}

	// Read within a minute (the floor of five sync periods): still watched.
	clk.Step(50 * time.Second)
	if n := o.configMaps.stopIdle(logger); n != 0 {
		t.Errorf("stopIdle stopped %d watches read 50s ago, want 0", n)
	}
	// Past a minute, Run's own idle check (every minute of clk) stops it:
	// calling stopIdle here too would race it for the one watch.
	clk.Step(20 * time.Second)
	waitFor(t, "the idle watch (env-only, not read for 70s) to stop", func() bool { return len(authz.openWatches()) == 0 })
	// Changed while not watched: the next read watches it again and
	// sees the change, not what it had.
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, configMap("env-only", "v2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm, err := o.GetConfigMap(ctx, "ns", "env-only"); err != nil || cm.Data["k"] != "v2" {
		t.Errorf("GetConfigMap(env-only) after its idle watch stopped = %v, %v, want v2", cm, err)
	}
	waitFor(t, "env-only to be watched again", func() bool { return slices.Equal(authz.openWatches(), []string{"ns/env-only"}) })
	if n := authz.count("list", "configmaps", "ns/frozen"); n != 1 {
		t.Errorf("the immutable configMap was listed %d times, want once", n)
	}
}

func TestObjectsBeforeRun(t *testing.T) {
	client, _ := newFakeCluster(t, secret("s", "v"))
	o := New(Config{Client: kubeclienttest.Wrap(client), SyncTimeout: 5 * time.Second})
	// Registered before Run: its watch starts with Run, and a lookup
	// made before waits for it.
	o.RegisterPod(podUsing("a", nil, []string{"s"}))
	got := make(chan error, 1)
	go func() {
		_, err := o.GetSecret(context.Background(), "ns", "s")
		got <- err
	}()
	runCache(t, o)
	if err := <-got; err != nil {
		t.Errorf("GetSecret made before Run: %v", err)
	}
}

func TestReferencesOf(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		ImagePullSecrets: []v1.LocalObjectReference{{Name: "pull"}},
		Volumes: []v1.Volume{
			{Name: "a", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "b", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "vol-s"}}},
			{Name: "c", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj-cm"}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "proj-s"}}},
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
			{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		},
		InitContainers: []v1.Container{{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{
			ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "init-cm"}, Key: "k"}}}}}},
		Containers: []v1.Container{{
			Env: []v1.EnvVar{{Name: "Y", ValueFrom: &v1.EnvVarSource{
				SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "env-s"}, Key: "k"}}}},
			EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "from-cm"}}}},
		}},
		EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "debug-s"}}}}}}},
	}}
	refs := referencesOf(pod)
	keys := func(m map[string]bool) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if got, want := keys(refs.configMaps), []string{"from-cm", "init-cm", "proj-cm", "vol-cm"}; !slices.Equal(got, want) {
		t.Errorf("configMaps = %v, want %v", got, want)
	}
	if got, want := keys(refs.secrets), []string{"debug-s", "env-s", "proj-s", "pull", "vol-s"}; !slices.Equal(got, want) {
		t.Errorf("secrets = %v, want %v", got, want)
	}
}

func TestServiceAccountTokens(t *testing.T) {
	client := fake.NewClientset()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clocktesting.NewFakeClock(now)
	var calls int
	client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls > 2 {
			return true, nil, apierrors.NewServiceUnavailable("down")
		}
		return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{
			Token:               "tok" + string(rune('0'+calls)),
			ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Hour)),
		}}, nil
	})
	o := New(Config{Client: kubeclienttest.Wrap(client), Clock: clk})
	ctx := context.Background()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"a"}}}
	tests := []struct {
		name  string
		step  time.Duration
		want  string
		calls int
	}{
		{name: "first request", want: "tok1", calls: 1},
		{name: "kept before 80% of its life", step: 40 * time.Minute, want: "tok1", calls: 1},
		{name: "renewed after 80%", step: 10 * time.Minute, want: "tok2", calls: 2},
		{name: "apiserver down: kept one handed out until it expires", step: 50 * time.Minute, want: "tok2", calls: 3},
	}
	for _, tt := range tests {
		clk.Step(tt.step)
		tr, err := o.GetServiceAccountToken(ctx, "ns", "default", req)
		if err != nil || tr.Status.Token != tt.want || calls != tt.calls {
			t.Errorf("%s: token %v err %v calls %d, want %s after %d calls", tt.name, tr, err, calls, tt.want, tt.calls)
		}
	}
	clk.Step(20 * time.Minute)
	if _, err := o.GetServiceAccountToken(ctx, "ns", "default", req); err == nil {
		t.Error("an expired token was handed out while the apiserver is down")
	}
}

func TestServiceAccountTokenBoundPodNotYetFound(t *testing.T) {
	bound := &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p", UID: "u1"}
	notFound := func(kind, name string) error {
		return apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name) // the apiserver names the bound pod "pod"
	}
	tests := []struct {
		name      string
		errs      []error // answers before a token, in order
		bound     *authenticationv1.BoundObjectReference
		wantCalls int
		wantErr   bool
	}{
		{name: "bound pod found on the third ask", errs: []error{notFound("pod", "p"), notFound("pod", "p")}, bound: bound, wantCalls: 3},
		{name: "bound pod never found", errs: slices.Repeat([]error{notFound("pod", "p")}, 10), bound: bound, wantCalls: 5, wantErr: true},
		{name: "service account not found: no second ask", errs: []error{notFound("serviceaccount", "default")}, bound: bound, wantCalls: 1, wantErr: true},
		{name: "another pod not found: no second ask", errs: []error{notFound("pod", "other")}, bound: bound, wantCalls: 1, wantErr: true},
		{name: "not bound to a pod: no second ask", errs: []error{notFound("pod", "p")}, wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			var calls atomic.Int32
			client.PrependReactor("create", "serviceaccounts", func(a clienttesting.Action) (bool, runtime.Object, error) {
				n := int(calls.Add(1))
				if n <= len(tt.errs) {
					return true, nil, tt.errs[n-1]
				}
				return true, &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{
					Token: "tok", ExpirationTimestamp: metav1.NewTime(clk.Now().Add(time.Hour)),
				}}, nil
			})
			o := New(Config{Client: kubeclienttest.Wrap(client), Clock: clk})
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"a"}, BoundObjectRef: tt.bound}}
			done := make(chan error, 1)
			go func() {
				_, err := o.GetServiceAccountToken(context.Background(), "ns", "default", req)
				done <- err
			}()
			var err error
			polltest.Until(t, 10*time.Second, "the token request to end", func() (bool, string) {
				select {
				case err = <-done:
					return true, ""
				default:
					if clk.HasWaiters() {
						clk.Step(time.Second) // past every wait between asks
					}
					return false, fmt.Sprintf("%d asks so far", calls.Load())
				}
			})
			if (err != nil) != tt.wantErr || int(calls.Load()) != tt.wantCalls {
				t.Errorf("err %v after %d asks, want error %v after %d", err, calls.Load(), tt.wantErr, tt.wantCalls)
			}
		})
	}
}
