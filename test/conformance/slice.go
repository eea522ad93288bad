package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ReadSlice reads a list of spec names, one per line (the full text, as
// the report's table shows it); blank lines and lines starting with # are
// ignored. A name listed twice is an error.
func ReadSlice(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read slice: %w", err)
	}
	defer f.Close()
	var names []string
	var errs []error
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if first, dup := seen[line]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: %q is listed already on line %d", path, n, line, first))
			continue
		}
		seen[line] = n
		names = append(names, line)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read %s: %w", path, err))
	}
	if len(names) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s lists no spec", path))
	}
	return names, errors.Join(errs...)
}

// Area is the part of the suite a spec belongs to: its SIG tag and up to
// three words of the name that follow, stopping at "should", "when",
// "with" or a tag ("[sig-storage] Projected configMap", "[sig-node]
// Kubelet", "[sig-node] Container Runtime blackbox").
func Area(name string) string {
	words := strings.Fields(name)
	if len(words) == 0 {
		return ""
	}
	area := words[:1]
	for _, w := range words[1:] {
		if len(area) == 4 || w == "should" || w == "when" || w == "with" || strings.HasPrefix(w, "[") {
			break
		}
		area = append(area, w)
	}
	return strings.Join(area, " ")
}

// PickSlice chooses a CI slice from a run: per area (see Area) that has a
// passing spec, the passing spec that took the least time, those tagged
// [NodeConformance] (they exercise the node, not only the apiserver)
// before the others, provided it
// took at most maxSeconds (a slow spec costs CI more than its area is
// worth; an area whose every passing spec is slower is left out and
// returned in slow). The names come sorted.
func PickSlice(results []Result, maxSeconds float64) (names, slow []string) {
	best := map[string]Result{}
	for _, r := range results {
		if !r.Passed() {
			continue
		}
		a := Area(r.Name)
		if b, ok := best[a]; !ok || better(r, b) {
			best[a] = r
		}
	}
	for a, r := range best {
		if r.Seconds > maxSeconds {
			slow = append(slow, a)
			continue
		}
		names = append(names, r.Name)
	}
	slices.Sort(names)
	slices.Sort(slow)
	return names, slow
}

// better says whether r goes into the slice before b, of the same area.
func better(r, b Result) bool {
	rn, bn := strings.Contains(r.Name, "[NodeConformance]"), strings.Contains(b.Name, "[NodeConformance]")
	if rn != bn {
		return rn
	}
	if r.Seconds != b.Seconds {
		return r.Seconds < b.Seconds
	}
	return r.Name < b.Name
}
