package eviction

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/minikubelet/minikubelet/internal/polltest"
)

// Memory pressure evicts one pod per round, in the kubelet's order:
// BestEffort, then the Burstable pod over its request, then the
// Guaranteed one; a critical pod never. Each is killed with no grace and
// gets the kubelet's message, event and counter.
func TestMemoryEvictionOrder(t *testing.T) {
	be := pod("besteffort")
	burst := pod("burstable", requests(mem("100Mi")))
	guar := pod("guaranteed", requests(mem("600Mi")), limits(mem("600Mi")))
	crit := pod("critical", priorityClass("system-node-critical"), static)
	n := healthy()
	n.memWorkingSet = 8192*mi - 50*mi // 50Mi available
	n.pods = map[types.UID]podUse{
		be.UID: {memory: 300 * mi}, burst.UID: {memory: 250 * mi}, guar.UID: {memory: 500 * mi}, crit.UID: {memory: 2000 * mi},
	}
	h := newHarness(t, Config{Thresholds: hardThresholds(t, map[string]string{"memory.available": "100Mi"}), PressureTransitionPeriod: time.Minute}, n, guar, crit, burst, be)

	var order []string
	for range 4 {
		h.clock.Step(time.Second)
		order = append(order, h.sync(t)...)
	}
	if want := []string{"besteffort", "burstable", "guaranteed"}; !slices.Equal(order, want) {
		t.Fatalf("evicted %v, want %v (and never the critical pod)", order, want)
	}
	reqs := h.loop.requests()
	if reqs[0].Op != OpEvict || reqs[0].GracePeriod != 0 {
		t.Errorf("first request %v grace %d, want an eviction with no grace", reqs[0].Op, reqs[0].GracePeriod)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container main was using 300Mi, request is 0, has larger consumption of memory. "
	if reqs[0].Message != want {
		t.Errorf("message %q, want %q", reqs[0].Message, want)
	}
	if !slices.Contains(h.events.events, "Pod besteffort Warning Evicted") || !slices.Contains(h.events.events, "Node n1 Warning EvictionThresholdMet") {
		t.Errorf("events %v", h.events.events)
	}
	if a := h.events.annots[0]; a["offending_containers"] != "main" || a["starved_resource"] != "memory" || a["offending_containers_usage"] != "300Mi" {
		t.Errorf("annotations %v", a)
	}
	if !slices.Equal(h.evicted, []string{"memory.available", "memory.available", "memory.available"}) {
		t.Errorf("counted %v", h.evicted)
	}
	if memory, disk, pid := h.m.Pressure(); !memory || disk || pid {
		t.Errorf("pressure memory=%v disk=%v pid=%v, want memory only", memory, disk, pid)
	}
}

// A soft threshold acts only once met for its grace period, and kills
// with min(--eviction-max-pod-grace-period, the pod's own grace).
func TestSoftThreshold(t *testing.T) {
	p := pod("p", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30) })
	ts, err := ParseThresholds(ThresholdSettings{
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]string{"memory.available": "30s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := healthy()
	n.memWorkingSet = 8192*mi - 512*mi
	n.pods = map[types.UID]podUse{p.UID: {memory: 100 * mi}}
	h := newHarness(t, Config{Thresholds: ts, MaxPodGracePeriod: 10, PressureTransitionPeriod: time.Minute}, n, p)
	if got := h.sync(t); len(got) != 0 {
		t.Fatalf("evicted %v before the grace period", got)
	}
	if memory, _, _ := h.m.Pressure(); !memory {
		t.Error("no MemoryPressure while a soft threshold is met, grace period aside")
	}
	h.clock.Step(29 * time.Second)
	if got := h.sync(t); len(got) != 0 {
		t.Fatalf("evicted %v before the grace period", got)
	}
	h.clock.Step(time.Second)
	if got := h.sync(t); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("evicted %v after the grace period, want p", got)
	}
	if g := h.loop.requests()[0].GracePeriod; g != 10 {
		t.Errorf("grace %d, want the max pod grace period 10", g)
	}
	if softGrace(p, -1) != 30 || softGrace(p, 60) != 30 || softGrace(pod("q"), 5) != 5 {
		t.Error("softGrace: want the smaller of the two; the pod's own when the max is negative")
	}
}

// A met threshold holds until its minimum reclaim is met; the condition
// holds for the transition period after; figures no newer than the last
// round's evict nothing more.
func TestMinReclaimAndTransition(t *testing.T) {
	a, b := pod("a"), pod("b")
	ts, err := ParseThresholds(ThresholdSettings{Hard: map[string]string{"memory.available": "100Mi"}, MinimumReclaim: map[string]string{"memory.available": "200Mi"}})
	if err != nil {
		t.Fatal(err)
	}
	n := healthy()
	n.memWorkingSet = 8192*mi - 50*mi
	n.pods = map[types.UID]podUse{a.UID: {memory: 10 * mi}, b.UID: {memory: 20 * mi}}
	h := newHarness(t, Config{Thresholds: ts, PressureTransitionPeriod: 5 * time.Minute}, n, a, b)
	if got := h.sync(t); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("evicted %v, want b (the larger)", got)
	}
	// Same figures, same time: nothing more.
	if got := h.sync(t); len(got) != 0 {
		t.Fatalf("evicted %v on stale figures", got)
	}
	// 150Mi available: above the threshold, below threshold + reclaim.
	h.stats.set(func(n *node) { n.memWorkingSet = 8192*mi - 150*mi })
	h.clock.Step(time.Second)
	if got := h.sync(t); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("evicted %v, want a: the minimum reclaim is not met", got)
	}
	h.stats.set(func(n *node) { n.memWorkingSet = 8192*mi - 400*mi })
	h.clock.Step(time.Second)
	if got := h.sync(t); len(got) != 0 {
		t.Fatalf("evicted %v with the minimum reclaim met", got)
	}
	if memory, _, _ := h.m.Pressure(); !memory {
		t.Error("MemoryPressure cleared before the transition period")
	}
	h.clock.Step(5 * time.Minute)
	h.sync(t)
	if memory, _, _ := h.m.Pressure(); memory {
		t.Error("MemoryPressure held after the transition period")
	}
}

// Under disk pressure the node first removes finished pods' containers
// and unused images; when that is enough no pod is evicted.
func TestDiskReclaimBeforeEviction(t *testing.T) {
	done, running := pod("done"), pod("running")
	n := healthy()
	n.fsAvailable = 5000 * mi // 5% < 10%
	n.pods = map[types.UID]podUse{running.UID: {rootfs: 100 * mi}}
	h := newHarness(t, Config{Thresholds: hardThresholds(t, DefaultHard()), PressureTransitionPeriod: time.Minute}, n, done, running)
	h.pods.finished[done.UID] = true
	h.images.free = func() { h.stats.set(func(n *node) { n.fsAvailable = 20000 * mi }) }
	if got := h.sync(t); len(got) != 0 {
		t.Fatalf("evicted %v though image GC freed enough", got)
	}
	reqs := h.loop.requests()
	if len(reqs) != 1 || reqs[0].Op != OpRetire || reqs[0].Pod.Name != "done" || h.images.calls != 1 {
		t.Errorf("requests %v, image GC calls %d: want the finished pod retired, then images removed", reqs, h.images.calls)
	}
	if _, disk, _ := h.m.Pressure(); !disk {
		t.Error("no DiskPressure")
	}

	// Not enough: the pod using the most disk goes, with the message.
	h.images.free = nil
	h.stats.set(func(n *node) { n.fsAvailable = 5000 * mi })
	h.clock.Step(time.Second)
	if got := h.sync(t); !slices.Equal(got, []string{"running"}) {
		t.Fatalf("evicted %v, want running", got)
	}
	// 10% as a float32, as the kubelet computes and prints it.
	msg := h.loop.requests()[1].Message
	for _, w := range []string{"The node was low on resource: ephemeral-storage. Threshold quantity: 10485760156, available: 5000Mi. ", "Container main was using 100Mi, request is 0, has larger consumption of ephemeral-storage."} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
	if !slices.Equal(h.evicted, []string{"nodefs.available"}) {
		t.Errorf("counted %v", h.evicted)
	}
}

// Memory pressure reclaims nothing at node level: no image is removed.
func TestMemoryNoNodeReclaim(t *testing.T) {
	p := pod("p")
	n := healthy()
	n.memWorkingSet = 8192*mi - 10*mi
	n.pods = map[types.UID]podUse{p.UID: {memory: mi}}
	h := newHarness(t, Config{Thresholds: hardThresholds(t, DefaultHard())}, n, p)
	h.sync(t)
	if h.images.calls != 0 {
		t.Error("images removed for memory pressure")
	}
}

// Local storage limits: an emptyDir over its sizeLimit, a container over
// its ephemeral-storage limit and a pod over its containers' are evicted
// with the kubelet's messages, whatever the thresholds.
func TestLocalStorageLimits(t *testing.T) {
	size := resource.MustParse("10Mi")
	emptyDir := pod("emptydir", func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}}}
	})
	// Its other container's limit makes the pod's larger than its use.
	ctr := pod("container", limits(v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("20Mi")}), func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}})
	})
	podLimit := pod("podlimit", limits(v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("20Mi")}), func(p *v1.Pod) {
		p.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	})
	fine := pod("fine", limits(v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}))
	n := healthy()
	n.pods = map[types.UID]podUse{
		emptyDir.UID: {volumes: map[string]uint64{"scratch": 11 * mi}},
		ctr.UID:      {rootfs: 15 * mi, logs: 6 * mi},
		podLimit.UID: {rootfs: 5 * mi, volumes: map[string]uint64{"data": 16 * mi}},
		fine.UID:     {rootfs: 100 * mi},
	}
	static(emptyDir)
	h := newHarness(t, Config{LocalStorageLimits: true}, n, emptyDir, ctr, podLimit, fine)
	got := h.sync(t)
	slices.Sort(got)
	if want := []string{"container", "emptydir", "podlimit"}; !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v", got, want)
	}
	msgs := map[string]string{}
	for _, r := range h.loop.requests() {
		msgs[r.Pod.Name] = r.Message
		if r.GracePeriod != 0 {
			t.Errorf("%s: grace %d, want none", r.Pod.Name, r.GracePeriod)
		}
	}
	for name, want := range map[string]string{
		"emptydir":  `Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". `,
		"container": `Container main exceeded its local ephemeral storage limit "20Mi". `,
		"podlimit":  "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ",
	} {
		if msgs[name] != want {
			t.Errorf("%s: message %q, want %q", name, msgs[name], want)
		}
	}
	slices.Sort(h.evicted)
	if want := []string{"emptydirfs.limit", "ephemeralcontainerfs.limit", "ephemeralpodfs.limit"}; !slices.Equal(h.evicted, want) {
		t.Errorf("counted %v, want %v", h.evicted, want)
	}
	// A static pod evicted for its own limit starts again after a
	// back-off, not at once.
	restarted := func() bool {
		for _, r := range h.loop.requests() {
			if r.Op == OpRestart {
				return true
			}
		}
		return false
	}
	h.clock.Step(time.Second)
	h.sync(t)
	if restarted() {
		t.Error("a static pod evicted for its own limit restarted at once")
	}
	h.clock.Step(staticBackOffInitial)
	h.sync(t)
	if !restarted() {
		t.Error("a static pod evicted for its own limit not restarted after the back-off")
	}
}

// A static pod is evicted unless critical by priority, and started again
// once its pressure has cleared for the transition period, with a
// back-off when evicted again; with the kubelet's rule it is never
// evicted.
func TestStaticPods(t *testing.T) {
	sp := pod("static", static)
	critical := pod("static-critical", static, priorityClass("system-cluster-critical"))
	pressure := func(n *node) { n.memWorkingSet = 8192*mi - 50*mi }
	relief := func(n *node) { n.memWorkingSet = 1024 * mi }
	n := healthy()
	pressure(&n)
	n.pods = map[types.UID]podUse{sp.UID: {memory: 100 * mi}, critical.UID: {memory: 1000 * mi}}
	h := newHarness(t, Config{Thresholds: hardThresholds(t, map[string]string{"memory.available": "100Mi"}), PressureTransitionPeriod: 30 * time.Second}, n, sp, critical)
	if got := h.sync(t); !slices.Equal(got, []string{"static"}) {
		t.Fatalf("evicted %v, want the static pod", got)
	}
	restarts := func() int {
		c := 0
		for _, r := range h.loop.requests() {
			if r.Op == OpRestart {
				c++
			}
		}
		return c
	}
	h.stats.set(relief)
	h.clock.Step(10 * time.Second)
	h.sync(t)
	if restarts() != 0 {
		t.Fatal("restarted within the transition period")
	}
	h.clock.Step(25 * time.Second)
	h.sync(t)
	if restarts() != 1 {
		t.Fatalf("%d restarts once the pressure cleared for the transition period, want 1", restarts())
	}

	// Evicted again: this time it waits 10s after its eviction at least.
	h.stats.set(func(n *node) { pressure(n); n.pods[sp.UID] = podUse{memory: 100 * mi} })
	h.clock.Step(time.Second)
	if got := h.sync(t); !slices.Equal(got, []string{"static"}) {
		t.Fatalf("evicted %v, want the static pod again", got)
	}
	h.stats.set(relief)
	h.clock.Step(31 * time.Second)
	h.sync(t)
	if restarts() != 2 {
		t.Fatalf("%d restarts, want 2", restarts())
	}
	if e := h.m.static[sp.UID]; e.backOff != staticBackOffInitial {
		t.Errorf("back-off %v after the second eviction, want %v", e.backOff, staticBackOffInitial)
	}

	// The kubelet's rule: static pods are critical.
	h2 := newHarness(t, Config{Thresholds: hardThresholds(t, map[string]string{"memory.available": "100Mi"}), StaticPodsCritical: true}, n, sp)
	if got := h2.sync(t); len(got) != 0 {
		t.Errorf("evicted %v with static pods critical", got)
	}
}

// Admission under pressure, as the kubelet's: memory pressure refuses
// BestEffort pods only (unless they tolerate it), disk pressure every pod
// but critical ones.
func TestAdmit(t *testing.T) {
	n := healthy()
	h := newHarness(t, Config{Thresholds: hardThresholds(t, DefaultHard()), PressureTransitionPeriod: time.Minute}, n)
	be, burst := pod("be"), pod("burst", requests(mem("1Mi")))
	tolerant := pod("tolerant", func(p *v1.Pod) {
		p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	})
	crit := pod("crit", priorityClass("system-node-critical"))
	if ok, _, _ := h.m.Admit(be); !ok {
		t.Error("refused without pressure")
	}
	h.stats.set(func(n *node) { n.memWorkingSet = 8192*mi - 50*mi })
	h.sync(t)
	for _, tc := range []struct {
		p  *v1.Pod
		ok bool
	}{{be, false}, {burst, true}, {tolerant, true}, {crit, true}} {
		ok, reason, msg := h.m.Admit(tc.p)
		if ok != tc.ok {
			t.Errorf("memory pressure: %s admitted %v, want %v", tc.p.Name, ok, tc.ok)
		}
		if !ok && (reason != "Evicted" || msg != "The node had condition: [MemoryPressure]. ") {
			t.Errorf("refusal %q %q", reason, msg)
		}
	}
	h.stats.set(func(n *node) { n.fsAvailable = mi })
	h.clock.Step(time.Second)
	h.sync(t)
	if ok, _, _ := h.m.Admit(burst); ok {
		t.Error("admitted under disk pressure")
	}
	if ok, _, _ := h.m.Admit(crit); !ok {
		t.Error("critical pod refused")
	}
}

// PID pressure ranks by priority, then by process count.
func TestPIDPressure(t *testing.T) {
	few, many := pod("few"), pod("many")
	n := healthy()
	n.procs = 32000
	n.pods = map[types.UID]podUse{few.UID: {procs: 3}, many.UID: {procs: 300}}
	h := newHarness(t, Config{Thresholds: hardThresholds(t, map[string]string{"pid.available": "1000"}), PressureTransitionPeriod: time.Minute}, n, few, many)
	if got := h.sync(t); !slices.Equal(got, []string{"many"}) {
		t.Fatalf("evicted %v, want many", got)
	}
	if _, _, pid := h.m.Pressure(); !pid {
		t.Error("no PIDPressure")
	}
}

// fakeNotifications arms notifications a test fires.
type fakeNotifications struct {
	armed chan armed
}

type armed struct {
	cgroup string
	usage  int64
	n      *fakeNotification
}

type fakeNotification struct {
	fire   chan struct{}
	closed chan struct{}
}

func (f *fakeNotifications) New(cgroup string, usage int64) (notification, error) {
	n := &fakeNotification{fire: make(chan struct{}), closed: make(chan struct{})}
	f.armed <- armed{cgroup: cgroup, usage: usage, n: n}
	return n, nil
}

func (n *fakeNotification) Wait() error {
	select {
	case <-n.fire:
		return nil
	case <-n.closed:
		return errClosed
	}
}

func (n *fakeNotification) Close() error {
	select {
	case <-n.closed:
	default:
		close(n.closed)
	}
	return nil
}

// Notifications are armed at the usage where each memory threshold is
// crossed, and a notification makes the manager measure at once, between
// two monitoring periods.
func TestNotifications(t *testing.T) {
	p := pod("p")
	n := healthy()
	n.memInactive = 512 * mi
	n.pods = map[types.UID]podUse{p.UID: {memory: 100 * mi}}
	notifications := &fakeNotifications{armed: make(chan armed, 4)}
	ts, err := ParseThresholds(ThresholdSettings{Hard: map[string]string{"memory.available": "100Mi"}, EnforcePods: true})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, Config{Thresholds: ts, Notifications: notifications, PodsCgroup: "/kubepods", MonitoringPeriod: time.Hour}, n, p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.m.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	got := map[string]int64{}
	var nodeNotification *fakeNotification
	for range 2 {
		a := <-notifications.armed
		got[a.cgroup] = a.usage
		if a.cgroup == "/" {
			nodeNotification = a.n
		}
	}
	// capacity 8192Mi - 100Mi + 512Mi inactive; the pods cgroup has no
	// inactive cache here.
	if got["/"] != (8192-100+512)*mi || got["/kubepods"] != (8192-100)*mi {
		t.Errorf("armed at %v", got)
	}
	h.stats.set(func(n *node) { n.memWorkingSet = 8192*mi - 10*mi })
	h.clock.Step(time.Millisecond) // fresh figures, far from the next period
	nodeNotification.fire <- struct{}{}
	polltest.True(t, 10*time.Second, "an eviction after the notification", func() bool { return len(h.loop.requests()) > 0 })
}
