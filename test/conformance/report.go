package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
)

// A Cause names why specs fail: the first cause whose pattern matches a
// failed spec's name and failure message (joined by a newline) is its
// cause.
type Cause struct {
	Group   string
	Pattern *regexp.Regexp
}

// Unclassified is the group of a failure no cause matches.
const Unclassified = "unclassified (no cause in test/conformance/causes.txt matches yet)"

// ReadCauses reads a causes file: one "GROUP | REGEXP" per line; blank
// lines and lines starting with # are ignored.
func ReadCauses(path string) ([]Cause, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read causes: %w", err)
	}
	defer f.Close()
	return parseCauses(path, f)
}

func parseCauses(name string, r io.Reader) ([]Cause, error) {
	var out []Cause
	var errs []error
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		group, pat, ok := strings.Cut(line, " | ")
		if !ok || strings.TrimSpace(group) == "" || strings.TrimSpace(pat) == "" {
			errs = append(errs, fmt.Errorf("%s:%d: want \"GROUP | REGEXP\"", name, n))
			continue
		}
		re, err := regexp.Compile(strings.TrimSpace(pat))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, n, err))
			continue
		}
		out = append(out, Cause{Group: strings.TrimSpace(group), Pattern: re})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read %s: %w", name, err))
	}
	return out, errors.Join(errs...)
}

// classify returns the group of a failed result.
func classify(causes []Cause, r *Result) string {
	text := r.Name + "\n" + r.Message
	for _, c := range causes {
		if c.Pattern.MatchString(text) {
			return c.Group
		}
	}
	return Unclassified
}

// NodeListCause is the group of the specs that fail on minikubelet in a
// production cluster and pass once the node may list and watch configMaps
// and secrets.
const NodeListCause = "configMaps and secrets: minikubelet lists and watches them per namespace, which the Node authorizer denies a node (every pod with a service-account token mounts the kube-root-ca.crt configMap)"

// Row is one spec's results; a nil result means the spec did not run
// there.
type Row struct {
	Name        string  `json:"name"`
	Minikubelet *Result `json:"minikubelet,omitempty"`
	// NodeLists is minikubelet's result when the node may list and watch
	// configMaps and secrets (a run beyond a production node's rights).
	NodeLists *Result `json:"minikubeletNodeListsObjects,omitempty"`
	Kubelet   *Result `json:"kubelet,omitempty"`
	// Cause is the group of the failure: where only minikubelet fails,
	// NodeListCause if it passes when the node may list, else the cause of
	// its failure there (or in production if there was no such run); where
	// both fail, the kubelet's.
	Cause string `json:"cause,omitempty"`
}

// Totals count the rows.
type Totals struct {
	Specs             int `json:"specs"`
	MinikubeletPassed int `json:"minikubeletPassed"`
	MinikubeletFailed int `json:"minikubeletFailed"`
	// NodeListsPassed counts minikubelet's passes when the node may list
	// and watch configMaps and secrets.
	NodeListsPassed      int `json:"minikubeletNodeListsObjectsPassed"`
	KubeletPassed        int `json:"kubeletPassed"`
	KubeletFailed        int `json:"kubeletFailed"`
	OnlyMinikubeletFails int `json:"onlyMinikubeletFails"`
	BothFail             int `json:"bothFail"`
	OnlyKubeletFails     int `json:"onlyKubeletFails"`
}

// Report compares a minikubelet run with a kubelet run.
type Report struct {
	Generated   time.Time `json:"generated"`
	Minikubelet Meta      `json:"minikubeletRun"`
	NodeLists   *Meta     `json:"minikubeletNodeListsObjectsRun,omitempty"`
	Kubelet     Meta      `json:"kubeletRun"`
	Totals      Totals    `json:"totals"`
	Skips       []Skip    `json:"skips"`
	Rows        []Row     `json:"rows"`
}

// NewReport joins the runs by spec name and classifies the failures.
// nodeLists, minikubelet's run with a node that may list configMaps and
// secrets, may be nil.
func NewReport(mini, nodeLists, kubelet *Run, causes []Cause, now time.Time) *Report {
	rep := &Report{Generated: now.UTC(), Minikubelet: mini.Meta, Kubelet: kubelet.Meta, Skips: Skips}
	rows := map[string]*Row{}
	row := func(name string) *Row {
		if rows[name] == nil {
			rows[name] = &Row{Name: name}
		}
		return rows[name]
	}
	for i := range mini.Results {
		r := &mini.Results[i]
		row(r.Name).Minikubelet = r
	}
	for i := range kubelet.Results {
		r := &kubelet.Results[i]
		row(r.Name).Kubelet = r
	}
	if nodeLists != nil {
		rep.NodeLists = &nodeLists.Meta
		for i := range nodeLists.Results {
			r := &nodeLists.Results[i]
			if rows[r.Name] != nil {
				rows[r.Name].NodeLists = r
			}
		}
	}
	t := &rep.Totals
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		r := rows[name]
		t.Specs++
		mFail, kFail := r.minikubeletFails(), r.kubeletFails()
		if r.Minikubelet != nil && r.Minikubelet.Passed() {
			t.MinikubeletPassed++
		}
		if r.NodeLists != nil && r.NodeLists.Passed() {
			t.NodeListsPassed++
		}
		if mFail {
			t.MinikubeletFailed++
		}
		if r.Kubelet != nil && r.Kubelet.Passed() {
			t.KubeletPassed++
		}
		if kFail {
			t.KubeletFailed++
		}
		switch {
		case mFail && kFail:
			t.BothFail++
			if r.Kubelet != nil {
				r.Cause = classify(causes, r.Kubelet)
			}
		case mFail:
			t.OnlyMinikubeletFails++
			switch {
			case r.NodeLists != nil && r.NodeLists.Passed():
				r.Cause = NodeListCause
			case r.NodeLists != nil && r.NodeLists.Failed():
				r.Cause = classify(causes, r.NodeLists)
			case r.Minikubelet != nil:
				r.Cause = classify(causes, r.Minikubelet)
			default:
				r.Cause = "did not run on minikubelet"
			}
		case kFail:
			t.OnlyKubeletFails++
		}
		rep.Rows = append(rep.Rows, *r)
	}
	return rep
}
