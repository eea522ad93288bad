package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// churnContent is what one file of the churned directory holds.
type churnContent struct {
	pod, rev int
	// bad is a manifest that does not parse.
	bad bool
}

func (c churnContent) bytes() []byte {
	if c.bad {
		return []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n")
	}
	return []byte(revisionPod(fmt.Sprintf("churn-%d", c.pod), c.rev))
}

// churnDir is the manifest directory and the test's model of it: the files
// the agent reads (manifests) and the files it must ignore (editor temp
// and backup names), by name.
type churnDir struct {
	t         *testing.T
	dir       string
	rng       *rand.Rand
	manifests map[string]churnContent
	ignored   map[string]churnContent
	rev       int
	// pods is how many pod names the contents choose from; names are the
	// manifest and the ignored names the operations choose from.
	pods         int
	names, temps []string
	ops          map[string]int
}

func newChurnDir(t *testing.T, dir string, rng *rand.Rand, files, pods int) *churnDir {
	d := &churnDir{t: t, dir: dir, rng: rng, manifests: map[string]churnContent{}, ignored: map[string]churnContent{}, pods: pods, ops: map[string]int{}}
	for i := range files {
		ext := ".yaml"
		if i%3 == 1 {
			ext = ".yml"
		}
		name := fmt.Sprintf("m%d%s", i, ext)
		d.names = append(d.names, name)
		// The names editors and tools use beside a file, all ignored.
		d.temps = append(d.temps, "."+name+".swp", name+"~", "."+name+".tmp", "#"+name+"#")
	}
	d.temps = append(d.temps, "4913")
	return d
}

func (d *churnDir) path(name string) string { return filepath.Join(d.dir, name) }

func (d *churnDir) good() churnContent {
	d.rev++
	return churnContent{pod: d.rng.IntN(d.pods), rev: d.rev}
}

func pick[V any](rng *rand.Rand, m map[string]V) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[rng.IntN(len(keys))], true
}

// write puts c into the manifest called name: half the time in place
// (truncate and write: the agent may read it half written), half the time
// written under a temp name and renamed over it, as editors and config
// tools do.
func (d *churnDir) write(name string, c churnContent) {
	if d.rng.IntN(2) == 0 {
		d.must(os.WriteFile(d.path(name), c.bytes(), 0o644))
		d.ops["write in place"]++
	} else {
		tmp := "." + name + ".tmp"
		d.must(os.WriteFile(d.path(tmp), c.bytes(), 0o644))
		d.must(os.Rename(d.path(tmp), d.path(name)))
		delete(d.ignored, tmp)
		d.ops["write and rename"]++
	}
	d.manifests[name] = c
}

func (d *churnDir) must(err error) {
	d.t.Helper()
	if err != nil {
		d.t.Fatal(err)
	}
}

// step makes one random change: a write of new content (sometimes bad),
// a rename (manifest to manifest, over an existing one or not; manifest to
// an ignored name; ignored name to manifest), a delete, or a write of an
// ignored file.
func (d *churnDir) step() {
	names, temps := d.names, d.temps
	switch r := d.rng.IntN(100); {
	case r < 30:
		d.write(names[d.rng.IntN(len(names))], d.good())
	case r < 35:
		d.write(names[d.rng.IntN(len(names))], churnContent{bad: true})
	case r < 50:
		src, ok := pick(d.rng, d.manifests)
		if !ok {
			d.write(names[d.rng.IntN(len(names))], d.good())
			return
		}
		dst := names[d.rng.IntN(len(names))]
		if dst == src {
			return
		}
		d.must(os.Rename(d.path(src), d.path(dst)))
		d.manifests[dst] = d.manifests[src]
		delete(d.manifests, src)
		d.ops["rename"]++
	case r < 60:
		src, ok := pick(d.rng, d.manifests)
		if !ok {
			return
		}
		dst := temps[d.rng.IntN(len(temps))]
		d.must(os.Rename(d.path(src), d.path(dst)))
		d.ignored[dst] = d.manifests[src]
		delete(d.manifests, src)
		d.ops["rename to an ignored name"]++
	case r < 75:
		src, ok := pick(d.rng, d.ignored)
		if !ok {
			d.write(names[d.rng.IntN(len(names))], d.good())
			return
		}
		dst := names[d.rng.IntN(len(names))]
		d.must(os.Rename(d.path(src), d.path(dst)))
		d.manifests[dst] = d.ignored[src]
		delete(d.ignored, src)
		d.ops["rename from an ignored name"]++
	case r < 85:
		name, ok := pick(d.rng, d.manifests)
		if !ok {
			return
		}
		d.must(os.Remove(d.path(name)))
		delete(d.manifests, name)
		d.ops["delete"]++
	case r < 95:
		name := temps[d.rng.IntN(len(temps))]
		c := d.good()
		d.must(os.WriteFile(d.path(name), c.bytes(), 0o644))
		d.ignored[name] = c
		d.ops["write an ignored file"]++
	default:
		name, ok := pick(d.rng, d.ignored)
		if !ok {
			return
		}
		d.must(os.Remove(d.path(name)))
		delete(d.ignored, name)
		d.ops["delete an ignored file"]++
	}
}

// want is the set the agent must converge to: each pod name defined by a
// manifest, from the first manifest in name order that defines it (the
// file source's rule); and the manifests that lose to an earlier one.
func (d *churnDir) want() (map[string]string, []string) {
	names := make([]string, 0, len(d.manifests))
	for n := range d.manifests {
		names = append(names, n)
	}
	slices.Sort(names)
	want := map[string]string{}
	var losers []string
	for _, n := range names {
		c := d.manifests[n]
		pod := "churn-" + strconv.Itoa(c.pod)
		if _, taken := want[pod]; taken {
			losers = append(losers, n)
			continue
		}
		want[pod] = strconv.Itoa(c.rev)
	}
	return want, losers
}

// The manifest directory churned: random writes of new and changed content
// (in place and by rename, some not parsing), renames (over existing
// manifests, to and from the temp and backup names editors use, which the
// agent ignores) and deletes, scale.churnOps of them over scale.churnFor
// (short form: 150 in 10s; full: 1,000 in 60s). Then every manifest that
// does not parse is fixed, and the node must converge to exactly the
// final set: each pod from the first manifest in name order that defines
// it, running the revision that manifest holds (its env, on /pods and as
// the runtime runs it), once, and nothing else; the manifests that lose to
// an earlier one are reported. No container of a pod ever ran twice at
// once. Once every manifest is removed, nothing of the node is left.
func TestFaultManifestChurn(t *testing.T) {
	scale := faults(t)
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		// The rescan, the safety net behind the directory watch, runs
		// every 5s here: convergence must not wait for the default 20s.
		a := startAgent(t, rt, "--file-check-frequency", "5s")
		seed := uint64(time.Now().UnixNano())
		files, pods := 10, 6
		if scale.churnOps > 500 {
			files, pods = 16, 10
		}
		t.Logf("%s form: %d operations in %v over %d manifest names and %d pods, seed %d", scale.name, scale.churnOps, scale.churnFor, files, pods, seed)
		d := newChurnDir(t, a.manifest, rand.New(rand.NewPCG(seed, 11)), files, pods)
		checker := startInvariantChecker(t, rt, a.node)
		sandboxes := newSandboxWatcher(rt, a.node)
		sandboxes.start(t)

		// The pauses pace the operations; nothing waits on them.
		pace := scale.churnFor / time.Duration(scale.churnOps)
		start := time.Now()
		for i := range scale.churnOps {
			d.step()
			if next := start.Add(time.Duration(i+1) * pace); time.Until(next) > 0 {
				time.Sleep(time.Until(next))
			}
		}
		for name, c := range d.manifests {
			if c.bad {
				d.write(name, d.good())
			}
		}
		t.Logf("%d operations in %v: %v", scale.churnOps, time.Since(start).Round(time.Millisecond), d.ops)
		want, losers := d.want()
		t.Logf("final set: %d manifests, %d ignored files; pods %v; %d manifests lose to an earlier one", len(d.manifests), len(d.ignored), want, len(losers))

		ctx := context.Background()
		t0 := time.Now()
		waitForLogged(t, 2*time.Minute, "the node to converge to the final set", func() (bool, string, string) {
			ok, state := a.convergedTo(ctx, want, "main")
			return ok, state, convergenceSummary(state)
		})
		t.Logf("converged in %v", time.Since(t0).Round(time.Millisecond))
		polltest.Until(t, 10*time.Second, "the manifests that lose to an earlier one reported", func() (bool, string) {
			reported := map[string]bool{}
			for _, e := range a.manifestErrors() {
				if e["source"] == "file" {
					reported[filepath.Base(e["origin"])] = true
				}
			}
			var missing []string
			for _, l := range losers {
				if !reported[l] {
					missing = append(missing, l)
				}
			}
			return len(missing) == 0 && len(reported) == len(losers), fmt.Sprintf("not reported: %v; reported: %v", missing, reported)
		})
		checker.report(t)

		for name := range d.manifests {
			d.must(os.Remove(d.path(name)))
		}
		a.waitClean(sandboxes, time.Minute)
		if !a.alive() {
			t.Error("the agent exited")
		}
		if n := a.countLogLines("panic"); n > 0 {
			t.Errorf("the agent's log names a panic %d times", n)
		}
	})
}
