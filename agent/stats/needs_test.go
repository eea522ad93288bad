package stats

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/cgroups"
	"github.com/minikubelet/minikubelet/internal/polltest"
)

// Each endpoint reads only what it serves: /metrics/resource and
// only_cpu_and_memory the cpu and memory files and no process; the
// Summary those, the limits and the processes; /metrics/cadvisor every
// figure and a process per pod for its network. A request within MaxAge
// is served the last snapshot if that holds what it needs, and reads
// afresh otherwise. Limits read less than FsMaxAge ago are not read again.
func TestSnapshotNeeds(t *testing.T) {
	p, cg, clk := testProvider(t)
	ctx := context.Background()
	type reads map[cgroups.Figures]int
	count := func() (reads, int) {
		cg.mu.Lock()
		defer cg.mu.Unlock()
		out := reads{}
		for f, n := range cg.figures {
			out[f] = n
		}
		return out, cg.procCalls
	}
	const (
		cpuMemory = cgroups.CPUMemory
		summary   = cgroups.CPUMemory | cgroups.LimitFigures
		all       = cgroups.AllFigures
		detail    = cgroups.CPUMemory | cgroups.Detail // every figure, the limits cached
	)
	// Five cgroups: "/", "/kubepods", the pod's, its container's, and the
	// gone container's (whose read fails, so that nothing of it is kept).
	steps := []struct {
		what  string
		call  func()
		want  reads
		walks int
	}{
		{"/metrics/resource", func() { get(t, p.ResourceHandler()) }, reads{cpuMemory: 5}, 0},
		{"the Summary within MaxAge", func() { p.Summary(ctx, false) }, reads{cpuMemory: 5, summary: 5}, 1},
		{"/metrics/resource again", func() { get(t, p.ResourceHandler()) }, reads{cpuMemory: 5, summary: 5}, 1},
		{"only_cpu_and_memory", func() { p.Summary(ctx, true) }, reads{cpuMemory: 5, summary: 5}, 1},
		{"/metrics/cadvisor", func() { scrape(t, p) }, reads{cpuMemory: 5, summary: 5, detail: 4, all: 1}, 2},
		// /metrics/cadvisor's walk stopped at the first process with a
		// network: the Summary's process counts are not in its snapshot.
		{"the Summary after it", func() { p.Summary(ctx, false) }, reads{cpuMemory: 9, summary: 6, detail: 4, all: 1}, 3},
		{"/metrics/resource after it", func() { get(t, p.ResourceHandler()) }, reads{cpuMemory: 9, summary: 6, detail: 4, all: 1}, 3},
		{"/metrics/resource after MaxAge", func() { clk.SetTime(clk.Now().Add(time.Second)); get(t, p.ResourceHandler()) }, reads{cpuMemory: 14, summary: 6, detail: 4, all: 1}, 3},
		{"the Summary after FsMaxAge", func() { clk.SetTime(clk.Now().Add(10 * time.Second)); p.Summary(ctx, false) }, reads{cpuMemory: 14, summary: 11, detail: 4, all: 1}, 4},
	}
	for _, s := range steps {
		s.call()
		got, walks := count()
		if fmt.Sprint(got) != fmt.Sprint(s.want) || walks != s.walks {
			t.Errorf("after %s: reads by figures %v, process walks %d; want %v, %d", s.what, got, walks, s.want, s.walks)
		}
	}
}

// A CPU rate spans at least MaxAge even when a request that needs more
// than the last snapshot held reads again sooner.
func TestRateWindow(t *testing.T) {
	p, cg, clk := testProvider(t)
	ctx := context.Background()
	const ctr = "/kubepods/podu/cid"
	cg.setCPU(ctr, 1e9)
	get(t, p.ResourceHandler())
	// 1.5 s later, one more CPU second: 2/3 of a core.
	clk.SetTime(clk.Now().Add(1500 * time.Millisecond))
	cg.setCPU(ctr, 2e9)
	if got := *p.Summary(ctx, true).Pods[0].Containers[0].CPU.UsageNanoCores; got != 666666666 {
		t.Errorf("rate over 1.5 s = %d, want 666666666", got)
	}
	// 0.1 s later /metrics/cadvisor reads again (it needs more): the rate
	// of the Summary then is still over the 1.6 s since the first read,
	// not over the 0.1 s since the last.
	clk.SetTime(clk.Now().Add(100 * time.Millisecond))
	cg.setCPU(ctr, 2.1e9)
	scrape(t, p)
	if got := *p.Summary(ctx, false).Pods[0].Containers[0].CPU.UsageNanoCores; got != 687500000 {
		t.Errorf("rate after a re-read within MaxAge = %d, want 687500000 (1.1 s over 1.6 s)", got)
	}
	// Past MaxAge after the re-read, the rate is over the 1.5 s since
	// the read at 1.5 s.
	clk.SetTime(clk.Now().Add(1400 * time.Millisecond))
	cg.setCPU(ctr, 2.75e9)
	if got := *p.Summary(ctx, false).Pods[0].Containers[0].CPU.UsageNanoCores; got != 5e8 {
		t.Errorf("rate over the next 1.5 s = %d, want 5e8", got)
	}
}

// /metrics/cadvisor reads a cgroup's cpu spec at most once per FsMaxAge,
// so a change shows within FsMaxAge; specs of cgroups gone are dropped.
func TestCPUSpecCache(t *testing.T) {
	p, cg, clk := testProvider(t)
	reads := func() int {
		cg.mu.Lock()
		defer cg.mu.Unlock()
		return cg.specReads
	}
	scrape(t, p)
	first := reads()
	if first == 0 {
		t.Fatal("no cpu spec read")
	}
	cg.mu.Lock()
	cg.specs["/kubepods/podu/cid"] = cgroups.CPUSpec{Shares: 256, QuotaMicros: 75000, PeriodMicros: 100000}
	cg.mu.Unlock()
	clk.SetTime(clk.Now().Add(5 * time.Second))
	body := scrape(t, p)
	if reads() != first {
		t.Errorf("a scrape within FsMaxAge read the specs again (%d reads, then %d)", first, reads())
	}
	if !strings.Contains(body, `container_spec_cpu_quota{container="c",id="/kubepods/podu/cid",image="busybox",name="cid",namespace="ns",pod="p"} 25000`) {
		t.Errorf("the cached quota is not served")
	}
	clk.SetTime(clk.Now().Add(5 * time.Second))
	body = scrape(t, p)
	if reads() != 2*first {
		t.Errorf("a scrape FsMaxAge later made %d spec reads in all, want %d", reads(), 2*first)
	}
	if !strings.Contains(body, `container_spec_cpu_quota{container="c",id="/kubepods/podu/cid",image="busybox",name="cid",namespace="ns",pod="p"} 75000`) {
		t.Errorf("the new quota is not served FsMaxAge later")
	}
	p.mu.Lock()
	n := len(p.specs)
	p.mu.Unlock()
	if n != 4 {
		t.Errorf("%d specs cached, want the 4 of the cgroups served", n)
	}
	// The pod goes: its cgroups' specs are dropped.
	p.cfg.Pods = fakePods{}
	clk.SetTime(clk.Now().Add(time.Second))
	scrape(t, p)
	if len(p.specs) != 2 {
		t.Errorf("%d specs cached after the pod went, want the node's and the pods' cgroups'", len(p.specs))
	}
}

// fakeFiles reads through fakeCgroups and records what Retain keeps.
type fakeFiles struct {
	*fakeCgroups
	open map[string]bool
	// counts are the process counts CountProcs can tell, by pod cgroup.
	counts map[string]int
	closed bool
	// prevs, if set, records the prev of each path's last ReadStatsAfter.
	prevs map[string]*cgroups.Earlier
}

func (f *fakeFiles) ReadStats(path string, fig cgroups.Figures) (*cgroups.Stats, error) {
	st, err := f.fakeCgroups.ReadStats(path, fig)
	if err == nil {
		f.open[path] = true
	}
	return st, err
}

// ReadStatsAfter reads as ReadStats and, as the real one does, takes
// prev's Detail figures when the CPU usage has not moved since it; it
// records the prev it was given for each path.
func (f *fakeFiles) ReadStatsAfter(path string, fig cgroups.Figures, prev *cgroups.Earlier) (*cgroups.Stats, bool, error) {
	if f.prevs != nil {
		f.prevs[path] = prev
	}
	st, err := f.ReadStats(path, fig)
	if err != nil || prev == nil || fig&cgroups.Detail == 0 || st.CPU.UsageNanos == 0 || st.CPU.UsageNanos != prev.Stats.CPU.UsageNanos {
		return st, false, err
	}
	out, e := *st, prev.Stats
	out.CPU.UserNanos, out.CPU.SystemNanos = e.CPU.UserNanos, e.CPU.SystemNanos
	out.Memory.OOMKills, out.Pids.Current, out.IO = e.Memory.OOMKills, e.Pids.Current, e.IO
	return &out, true, nil
}

func (f *fakeFiles) CPUSpec(path string) (cgroups.CPUSpec, error) {
	s, err := f.fakeCgroups.CPUSpec(path)
	if err == nil {
		f.open[path] = true
	}
	return s, err
}

// WalkProcs keeps the directories of the cgroups walked open, those that
// exist.
func (f *fakeFiles) WalkProcs(path string, known []string, each func(pid int) bool) {
	for _, c := range append([]string{path}, known...) {
		if _, ok := f.stats[c]; ok {
			f.open[c] = true
		}
	}
	f.fakeCgroups.WalkProcs(path, known, each)
}

// CountProcs answers for the cgroups given a count in counts, keeping
// their files open as the walk's directories; for others it cannot tell.
func (f *fakeFiles) CountProcs(path string, known []string) (int, bool) {
	n, ok := f.counts[path]
	if !ok {
		return 0, false
	}
	for _, c := range append([]string{path}, known...) {
		f.open[c] = true
	}
	return n, true
}

func (f *fakeFiles) Retain(keep func(string) bool) {
	for p := range f.open {
		if !keep(p) {
			delete(f.open, p)
		}
	}
}

func (f *fakeFiles) Close() { f.open, f.closed = map[string]bool{}, true }

// With Config.Files, the cgroups are read through it; after each snapshot
// it keeps the files of the cgroups reported, and Run closes them all
// when it ends.
func TestSnapshotThroughFiles(t *testing.T) {
	p, cg, clk := testProvider(t)
	files := &fakeFiles{fakeCgroups: cg, open: map[string]bool{}}
	p.cfg.Files = files
	pods := p.cfg.Pods.(fakePods)
	pods[0].SandboxCgroup = "/kubepods/podu/sandbox"
	cg.procs["/kubepods/podu/sandbox"] = []int{4242}
	p.Summary(context.Background(), false)
	clk.SetTime(clk.Now().Add(time.Second))
	p.Summary(context.Background(), false)
	// The sandbox's cgroup is walked, not read: its directory is kept.
	if len(files.open) != 5 || !files.open["/kubepods/podu/sandbox"] {
		t.Errorf("files of %v open, want the 4 cgroups read and the sandbox's walked", files.open)
	}
	// The pod goes: its cgroups' files are closed at the next snapshot.
	p.cfg.Pods = fakePods{}
	clk.SetTime(clk.Now().Add(time.Second))
	p.Summary(context.Background(), false)
	if len(files.open) != 2 || !files.open["/"] || !files.open["/kubepods"] {
		t.Errorf("files of %v open, want only the node's and the pods' cgroups", files.open)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Run(ctx)
	if !files.closed {
		t.Errorf("Run ended without closing the files")
	}
}

// A Summary whose pods' networks are read through their sandboxes counts
// their processes with Files.CountProcs, walking no cgroup, and walks
// the pod's cgroup when CountProcs cannot tell; the cgroups counted keep
// their files open as those walked, the sandbox's through snapshots that
// neither count nor walk.
func TestProcessesCountedWithoutWalk(t *testing.T) {
	p, cg, clk := testProvider(t)
	files := &fakeFiles{fakeCgroups: cg, open: map[string]bool{}, counts: map[string]int{"/kubepods/podu": 7}}
	p.cfg.Files = files
	pods := p.cfg.Pods.(fakePods)
	pods[0].SandboxCgroup = "/kubepods/podu/sandbox"
	cg.procs["/kubepods/podu/sandbox"] = []int{4242}
	cg.procs["/kubepods/podu"] = []int{4242, 4243}
	count := func() uint64 {
		t.Helper()
		s := p.Summary(context.Background(), false)
		if len(s.Pods) != 1 || s.Pods[0].ProcessStats == nil || s.Pods[0].ProcessStats.ProcessCount == nil || s.Pods[0].Network == nil {
			t.Fatalf("summary pods %+v, want one with its processes and network", s.Pods)
		}
		return *s.Pods[0].ProcessStats.ProcessCount
	}
	// The first snapshot finds the sandbox's process by a walk of its
	// cgroup, for the network; the second reads it through its kept file.
	count()
	cg.walked = nil
	clk.SetTime(clk.Now().Add(time.Second))
	if n := count(); n != 7 || len(cg.walked) != 0 {
		t.Errorf("counted: %d processes, walked %v; want CountProcs' 7 and no walk", n, cg.walked)
	}
	if !files.open["/kubepods/podu/sandbox"] || !files.open["/kubepods/podu/cid"] {
		t.Errorf("files of %v open, want those of the cgroups counted", files.open)
	}
	// /metrics/cadvisor counts nothing, and leaves the sandbox's files
	// open for the next Summary.
	clk.SetTime(clk.Now().Add(time.Second))
	scrape(t, p)
	if !files.open["/kubepods/podu/sandbox"] {
		t.Errorf("files of %v open after /metrics/cadvisor, want the sandbox's among them", files.open)
	}
	// None of the pod's tasks has run since (its CPU usage has not moved):
	// the count is the last one, and the files are kept all the same.
	files.counts["/kubepods/podu"] = 8
	clk.SetTime(clk.Now().Add(time.Second))
	if n := count(); n != 7 || !files.open["/kubepods/podu/sandbox"] {
		t.Errorf("with the pod idle: %d processes, files %v open; want the last count, 7, and the sandbox's files", n, files.open)
	}
	// One ran: counted again.
	cg.setCPU("/kubepods/podu", 41e8)
	clk.SetTime(clk.Now().Add(time.Second))
	if n := count(); n != 8 {
		t.Errorf("after the pod ran: %d processes, want CountProcs' 8", n)
	}
	// Idle, but the count is keptFor old: counted again.
	files.counts["/kubepods/podu"] = 9
	clk.SetTime(clk.Now().Add(keptFor))
	if n := count(); n != 9 {
		t.Errorf("with the last count keptFor old: %d processes, want CountProcs' 9", n)
	}
	delete(files.counts, "/kubepods/podu")
	cg.setCPU("/kubepods/podu", 42e8)
	cg.walked = nil
	clk.SetTime(clk.Now().Add(time.Second))
	if n := count(); n != 2 || strings.Join(cg.walked, ",") != "/kubepods/podu" {
		t.Errorf("CountProcs unable: %d processes, walked %v; want the walk's 2 of the pod's cgroup", n, cg.walked)
	}
}

// /metrics/cadvisor reads a pod's network through its sandbox's process,
// without a walk of the pod's cgroups; without a sandbox cgroup, or when
// its process has no /proc entry, through the first process of the walk.
// The net/dev file of the sandbox's process is kept: the next reads walk
// nothing until it cannot be read; the Summary reads through it too.
func TestNetworkThroughSandbox(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sandbox []int
		walked  []string
		kept    bool
	}{
		{"sandbox", []int{4242}, []string{"/kubepods/podu/sandbox"}, true},
		{"sandbox gone", []int{999999}, []string{"/kubepods/podu/sandbox", "/kubepods/podu"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, cg, clk := testProvider(t)
			pods := p.cfg.Pods.(fakePods)
			pods[0].SandboxCgroup = "/kubepods/podu/sandbox"
			cg.procs["/kubepods/podu/sandbox"] = tc.sandbox
			const podNet = `container_network_receive_bytes_total{container="",id="/kubepods/podu",image="",interface="eth0",name="",namespace="ns",pod="p"} 5000`
			body := scrape(t, p)
			if !strings.Contains(body, podNet) {
				t.Errorf("no network for the pod:\n%s", body)
			}
			if strings.Join(cg.walked, ",") != strings.Join(tc.walked, ",") {
				t.Errorf("walked %v, want %v", cg.walked, tc.walked)
			}
			if got := len(p.sandboxes); got != map[bool]int{true: 1, false: 0}[tc.kept] {
				t.Errorf("%d sandbox files kept", got)
			}
			if !tc.kept {
				return
			}
			cg.walked = nil
			clk.SetTime(clk.Now().Add(time.Second))
			if body := scrape(t, p); !strings.Contains(body, podNet) || len(cg.walked) != 0 {
				t.Errorf("through the kept process: walked %v, network shown %v", cg.walked, strings.Contains(body, podNet))
			}
			// The Summary counts the pod's processes but reads its
			// network through the sandbox's process.
			clk.SetTime(clk.Now().Add(time.Second))
			s := p.Summary(context.Background(), false)
			if net := s.Pods[0].Network; net == nil || *net.RxBytes != 5000 || strings.Join(cg.walked, ",") != "/kubepods/podu" {
				t.Errorf("Summary: network %+v, walked %v; want eth0's 5000 bytes and a walk of the pod's cgroup", net, cg.walked)
			}
			// The kept file cannot be read (here: a directory in its
			// place): it is closed and the sandbox walked again.
			dir, err := syscall.Open(p.cfg.ProcRoot, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			_ = syscall.Close(p.sandboxes["/kubepods/podu/sandbox"].fd)
			p.sandboxes["/kubepods/podu/sandbox"].fd = dir
			cg.walked = nil
			clk.SetTime(clk.Now().Add(time.Second))
			if body := scrape(t, p); !strings.Contains(body, podNet) || strings.Join(cg.walked, ",") != "/kubepods/podu/sandbox" || len(p.sandboxes) != 1 {
				t.Errorf("with the kept file unreadable: walked %v, network shown %v, %d kept", cg.walked, strings.Contains(body, podNet), len(p.sandboxes))
			}
			// A pod that goes takes its kept file along.
			p.cfg.Pods = fakePods{}
			clk.SetTime(clk.Now().Add(time.Second))
			scrape(t, p)
			if len(p.sandboxes) != 0 {
				t.Errorf("%d sandbox files kept after the pod went", len(p.sandboxes))
			}
		})
	}
}

// Run closes every file kept open once the Provider has read nothing for
// keepIdle FsMaxAges, and not while it reads.
func TestRunClosesWhenIdle(t *testing.T) {
	p, cg, clk := testProvider(t)
	files := &fakeFiles{fakeCgroups: cg, open: map[string]bool{}}
	p.cfg.Files = files
	pods := p.cfg.Pods.(fakePods)
	pods[0].SandboxCgroup = "/kubepods/podu/sandbox"
	cg.procs["/kubepods/podu/sandbox"] = []int{4242}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	polltest.Until(t, 10*time.Second, "Run's ticker", func() (bool, string) { return clk.HasWaiters(), "" })
	kept := func() (cgroupFiles, sandboxFiles int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(files.open), len(p.sandboxes)
	}
	scrape(t, p)
	// Read a moment before the tick: kept.
	clk.Step(keepIdle*p.cfg.FsMaxAge - time.Second)
	scrape(t, p)
	clk.Step(time.Second)
	polltest.Holds(t, 200*time.Millisecond, "the files kept after a read a second ago", func() (bool, string) {
		f, s := kept()
		return f > 0 && s == 1, fmt.Sprintf("%d cgroups' files, %d sandbox files", f, s)
	})
	// Nothing read for a whole period: closed.
	clk.Step(keepIdle * p.cfg.FsMaxAge)
	polltest.Until(t, 10*time.Second, "the kept files closed", func() (bool, string) {
		f, s := kept()
		return f == 0 && s == 0, fmt.Sprintf("%d cgroups' files, %d sandbox files", f, s)
	})
}

// /metrics/cadvisor takes a cgroup's figures that move only while its
// tasks run from its last read of them while its CPU usage has not moved,
// telling the reader how long it has not, and reads them afresh once the
// usage moves or that read is keptFor old.
func TestDetailKeptWhileIdle(t *testing.T) {
	p, cg, clk := testProvider(t)
	files := &fakeFiles{fakeCgroups: cg, open: map[string]bool{}, prevs: map[string]*cgroups.Earlier{}}
	p.cfg.Files = files
	const ctr = "/kubepods/podu/cid"
	threads := func(n int) string {
		return fmt.Sprintf(`container_threads{container="c",id="%s",image="busybox",name="cid",namespace="ns",pod="p"} %d`+"\n", ctr, n)
	}
	setThreads := func(n uint64) {
		cg.mu.Lock()
		defer cg.mu.Unlock()
		cg.stats[ctr].Pids.Current = n
	}
	setThreads(1)
	if body := scrape(t, p); !strings.Contains(body, threads(1)) || files.prevs[ctr] != nil {
		t.Fatalf("first read: given %v, want none; body:\n%s", files.prevs[ctr], body)
	}
	for _, s := range []struct {
		name    string
		after   time.Duration
		threads uint64 // the file's count now
		usage   uint64 // the cgroup's CPU usage now; 0 leaves it
		want    int    // the count served
		// idleFor is how long the reader is told the usage has not
		// moved; -1: no earlier read is given.
		idleFor time.Duration
	}{
		// Nothing ran: the count is the last read's, even though the file
		// (here) says otherwise.
		{"idle", 2 * time.Second, 2, 0, 1, 2 * time.Second},
		{"still idle", 20 * time.Second, 2, 0, 1, 22 * time.Second},
		// A task ran: read again.
		{"ran", 2 * time.Second, 2, 31e8, 2, 24 * time.Second},
		{"idle after it ran", 30 * time.Second, 3, 0, 2, 30 * time.Second},
		// Idle, but the read kept is keptFor old: read again, and the
		// usage has not moved since the read before.
		{"idle, kept read old", 30 * time.Second, 3, 0, 3, -1},
		{"idle after that read", 2 * time.Second, 4, 0, 3, 62 * time.Second},
	} {
		clk.Step(s.after)
		setThreads(s.threads)
		if s.usage != 0 {
			cg.setCPU(ctr, s.usage)
		}
		body := scrape(t, p)
		if !strings.Contains(body, threads(s.want)) {
			t.Errorf("%s: want %q in:\n%s", s.name, threads(s.want), body)
		}
		got := time.Duration(-1)
		if e := files.prevs[ctr]; e != nil {
			got = e.IdleFor
		}
		if got != s.idleFor {
			t.Errorf("%s: told idle for %v, want %v", s.name, got, s.idleFor)
		}
	}
	// The entry goes with the cgroup.
	p.cfg.Pods = fakePods{}
	clk.Step(2 * time.Second)
	scrape(t, p)
	if _, ok := p.detail[ctr]; ok || len(p.detail) != 2 {
		t.Errorf("after the pod went: %d entries kept (container's: %v), want the node's and the pods' cgroups'", len(p.detail), ok)
	}
}
