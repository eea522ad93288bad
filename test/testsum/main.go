// Command testsum reads `go test -json` from stdin and prints what a
// person wants from a test run: go test's usual per-package lines, the full
// output of every test that failed, progress while the run goes on, why
// tests were skipped, and a closing line that says what ran, `N passed, N
// failed, N skipped`. It exits 1 if any test or package failed (a build
// failure included).
//
//	go test -json ./... | go run ./test/testsum
//
// Progress: go test's line for a finished package ("ok  <pkg> 3.1s") gets
// the running counts appended; every top-level test that took SlowTest or
// more gets a line of its own with the counts; and when nothing was printed
// for Heartbeat, a line names the tests running and for how long. So a
// ten-minute integration package shows each of its tests as it ends, and
// never goes quiet for long.
//
// Before the closing line, the skipped tests are grouped by their skip
// message (t.Skip's text), most frequent first, each with the tests it
// skipped.
//
// With -report, the closing line is also preceded by one line per test
// and subtest, in the order they ended: its result and how long it took;
// with -notes REGEXP too, each followed by the lines of its output that
// match REGEXP (the numbers a test logs, say).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SlowTest is how long a top-level test must take to get a progress line
// of its own; faster ones show in their package's line.
const SlowTest = time.Second

// Heartbeat is the longest testsum stays quiet while tests run.
const Heartbeat = 30 * time.Second

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type summary struct {
	// clock times the running tests and the silence the heartbeat breaks.
	clock clock.PassiveClock
	// mu guards everything below: the reader and the heartbeat's ticker
	// both print.
	mu sync.Mutex

	passed, failed, skipped int
	pkgFailed               bool
	// output buffers each running test's output until it ends.
	output map[string]*strings.Builder
	// running holds the top-level tests that started and have not ended,
	// with when they started.
	running map[string]time.Time
	// skips groups the skipped tests by skip message, numbers masked
	// (skipGroupKey).
	skips map[string]*skipGroup
	// failures holds, for each failed test in order, the lines it logged
	// itself ("file_test.go:N: ..."), repeated at the end so that the last
	// screen of a long run says why it failed.
	failures []failure
	// lastPrint is when testsum last printed a line.
	lastPrint time.Time
	// report, when set, collects a line per test that ended, and notes
	// selects the output lines added under it.
	report *strings.Builder
	notes  *regexp.Regexp
}

func newSummary(clk clock.PassiveClock) *summary {
	return &summary{
		clock:     clk,
		output:    map[string]*strings.Builder{},
		running:   map[string]time.Time{},
		skips:     map[string]*skipGroup{},
		lastPrint: clk.Now(),
	}
}

func main() {
	report := flag.Bool("report", false, "print each test's result and duration at the end")
	notes := flag.String("notes", "", "with -report, also print each test's output lines that match this regexp")
	flag.Parse()
	clk := clock.RealClock{}
	s := newSummary(clk)
	if *report {
		s.report = &strings.Builder{}
	}
	if *notes != "" {
		re, err := regexp.Compile(*notes)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum: -notes:", err)
			os.Exit(2)
		}
		s.notes = re
	}
	ticker := clk.NewTicker(Heartbeat / 6)
	done := make(chan struct{}) // closed when stdin is read in full
	go func() {
		for {
			select {
			case <-ticker.C():
				s.heartbeat(os.Stdout)
			case <-done:
				return
			}
		}
	}()
	err := s.read(os.Stdin, os.Stdout)
	close(done)
	ticker.Stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	s.finish(os.Stdout)
	if s.failed > 0 || s.pkgFailed {
		os.Exit(1)
	}
}

func (s *summary) read(r io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not an event (a build error printed as text): pass it on.
			s.println(w, string(line))
			continue
		}
		s.handle(e, w)
	}
	return sc.Err()
}

// println prints one line and notes the time; s.mu must not be held.
func (s *summary) println(w io.Writer, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.printLocked(w, line)
}

func (s *summary) printLocked(w io.Writer, line string) {
	fmt.Fprintln(w, line)
	s.lastPrint = s.clock.Now()
}

// counts is the running tally printed with progress lines.
func (s *summary) counts() string {
	return fmt.Sprintf("[%d passed, %d failed, %d skipped so far]", s.passed, s.failed, s.skipped)
}

// pkgDone matches go test's line for a finished package's tests.
var pkgDone = regexp.MustCompile(`^(ok  |FAIL)\t\S+\t`)

func (s *summary) handle(e event, w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := e.Package + " " + e.Test
	if e.Test == "" {
		switch e.Action {
		case "output":
			out := strings.TrimRight(e.Output, "\n")
			switch {
			case out == "PASS" || out == "":
			case pkgDone.MatchString(out):
				s.printLocked(w, out+"   "+s.counts())
			default:
				s.printLocked(w, out)
			}
		case "fail":
			s.pkgFailed = true
		case "build-output":
			fmt.Fprint(w, e.Output)
			s.lastPrint = s.clock.Now()
		case "build-fail":
			s.pkgFailed = true
		}
		return
	}
	topLevel := !strings.Contains(e.Test, "/")
	switch e.Action {
	case "run":
		if topLevel {
			s.running[key] = s.clock.Now()
		}
	case "output":
		b, ok := s.output[key]
		if !ok {
			b = &strings.Builder{}
			s.output[key] = b
		}
		b.WriteString(e.Output)
	case "pass":
		s.passed++
		s.ended("ok  ", e, w)
	case "skip":
		s.skipped++
		var out string
		if b, ok := s.output[key]; ok {
			out = b.String()
		}
		reason := skipReason(out)
		key := skipGroupKey(reason)
		g := s.skips[key]
		if g == nil {
			g = &skipGroup{reason: reason}
			s.skips[key] = g
		}
		if g.reason != reason {
			g.reason = key // the messages differ in their numbers
		}
		g.tests = append(g.tests, e.Test)
		s.ended("skip", e, w)
	case "fail":
		s.failed++
		var out string
		if b, ok := s.output[key]; ok {
			out = b.String()
			fmt.Fprint(w, out)
		}
		s.failures = append(s.failures, failure{test: e.Test, pkg: e.Package, lines: loggedLines(out), dump: dumpTail(out)})
		s.ended("FAIL", e, w)
	}
}

// ended records the end of a test: its report line, and for a top-level
// test that took SlowTest or more (or failed), a progress line.
func (s *summary) ended(result string, e event, w io.Writer) {
	key := e.Package + " " + e.Test
	s.addReport(result, e)
	delete(s.output, key)
	if strings.Contains(e.Test, "/") {
		return
	}
	// A test whose subtests are parallel reports the time of its own
	// function only (0.00s): the time since its run event is what it took.
	took := time.Duration(e.Elapsed * float64(time.Second))
	if start, ok := s.running[key]; ok {
		took = max(took, s.clock.Since(start))
	}
	delete(s.running, key)
	if took >= SlowTest || result == "FAIL" {
		s.printLocked(w, fmt.Sprintf("  %s %s %s (%.1fs)   %s", result, e.Test, e.Package, took.Seconds(), s.counts()))
	}
}

// heartbeat prints, when nothing was printed for Heartbeat, which
// top-level tests run and for how long.
func (s *summary) heartbeat(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if now.Sub(s.lastPrint) < Heartbeat || len(s.running) == 0 {
		return
	}
	keys := make([]string, 0, len(s.running))
	for k := range s.running {
		keys = append(keys, k)
	}
	// Longest running first.
	sort.Slice(keys, func(i, j int) bool {
		if !s.running[keys[i]].Equal(s.running[keys[j]]) {
			return s.running[keys[i]].Before(s.running[keys[j]])
		}
		return keys[i] < keys[j]
	})
	const shown = 4
	parts := make([]string, 0, shown+1)
	for i, k := range keys {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-shown))
			break
		}
		pkg, test, _ := strings.Cut(k, " ")
		parts = append(parts, fmt.Sprintf("%s %s (%s)", test, pkg, now.Sub(s.running[k]).Round(time.Second)))
	}
	s.printLocked(w, "  ... running: "+strings.Join(parts, ", ")+"   "+s.counts())
}

// skipGroup is the tests skipped for one reason.
type skipGroup struct {
	// reason is the skip message, or its key when the group's messages
	// differ in their numbers.
	reason string
	tests  []string
}

// number matches a run of digits.
var number = regexp.MustCompile(`[0-9]+`)

// skipGroupKey is the skip message with every number shown as "#", so that
// tests skipped for the same reason with different sizes or counts make
// one group.
func skipGroupKey(reason string) string { return number.ReplaceAllString(reason, "#") }

// skipLine matches the start of a line a test logged: "    file_test.go:12: ".
var skipLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

// skipReason extracts the message a skipped test gave t.Skip: the last
// entry it logged (a "file.go:N: " line and its indented continuation).
// A test skipped without a message (or with -run patterns that skip
// nothing) gets "(no message)".
func skipReason(output string) string {
	var entry []string
	for _, line := range strings.Split(output, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "=== "), strings.HasPrefix(strings.TrimSpace(line), "--- "):
		case skipLine.MatchString(line):
			entry = []string{skipLine.ReplaceAllString(line, "")}
		case entry != nil && strings.TrimSpace(line) != "":
			entry = append(entry, strings.TrimSpace(line))
		}
	}
	if len(entry) == 0 {
		return "(no message)"
	}
	return strings.Join(entry, " ")
}

// failure is one failed test and the lines it logged.
type failure struct {
	test, pkg string
	lines     []string
	// dump is the end of what the test attached (a process's log).
	dump []string
}

// Limits of what the failure summary repeats of one test.
const (
	maxFailureLines = 8
	maxFailureLine  = 400
	// The last maxDumpLines of an attached dump are repeated for the first
	// maxDumps failures: what a process said last is most often why it
	// failed, and the middle of a long run's output may not be kept.
	maxDumpLines = 12
	maxDumps     = 3
)

// dumpTail returns the last lines of the dumps a test attached: the
// indented continuations of its logged lines.
func dumpTail(output string) []string {
	var out []string
	for _, line := range strings.Split(output, "\n") {
		if skipLine.MatchString(line) || !strings.HasPrefix(line, "        ") || strings.TrimSpace(line) == "" {
			continue
		}
		line = strings.TrimSpace(line)
		if len(line) > maxFailureLine {
			line = line[:maxFailureLine] + "..."
		}
		out = append(out, line)
	}
	if len(out) > maxDumpLines {
		out = out[len(out)-maxDumpLines:]
	}
	return out
}

// loggedLines returns the first lines a test logged itself (t.Error,
// t.Log: "file.go:N: msg"), not their indented continuations, which hold
// the dumps (a process's whole log) the test attached.
func loggedLines(output string) []string {
	var out []string
	for _, line := range strings.Split(output, "\n") {
		if !skipLine.MatchString(line) {
			continue
		}
		line = strings.TrimSpace(line)
		if len(line) > maxFailureLine {
			line = line[:maxFailureLine] + "..."
		}
		if len(out) == maxFailureLines {
			out = append(out, "...")
			break
		}
		out = append(out, line)
	}
	return out
}

// finish prints the skip reasons, the failures again with the lines their
// tests logged, the report if asked for, and the closing line.
func (s *summary) finish(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.skips) > 0 {
		reasons := make([]string, 0, len(s.skips))
		for r := range s.skips {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			a, b := len(s.skips[reasons[i]].tests), len(s.skips[reasons[j]].tests)
			if a != b {
				return a > b
			}
			return s.skips[reasons[i]].reason < s.skips[reasons[j]].reason
		})
		fmt.Fprintln(w, "skipped, by reason:")
		for _, r := range reasons {
			g := s.skips[r]
			fmt.Fprintf(w, "  %d  %s\n      %s\n", len(g.tests), g.reason, listTests(g.tests))
		}
	}
	if len(s.failures) > 0 {
		fmt.Fprintln(w, "failed:")
		dumps := 0
		for _, f := range s.failures {
			fmt.Fprintf(w, "  %s (%s)\n", f.test, f.pkg)
			for _, l := range f.lines {
				fmt.Fprintf(w, "      %s\n", l)
			}
			if len(f.dump) > 0 && dumps < maxDumps {
				dumps++
				for _, l := range f.dump {
					fmt.Fprintf(w, "      | %s\n", l)
				}
			}
		}
	}
	if s.report != nil {
		fmt.Fprint(w, s.report.String())
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}

// listTests names at most 6 tests, then how many more.
func listTests(tests []string) string {
	const most = 6
	if len(tests) <= most {
		return strings.Join(tests, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tests[:most], ", "), len(tests)-most)
}

// addReport adds the line of a test that ended, and its notes.
func (s *summary) addReport(result string, e event) {
	if s.report == nil {
		return
	}
	fmt.Fprintf(s.report, "%s %s %.1fs\n", result, e.Test, e.Elapsed)
	b, ok := s.output[e.Package+" "+e.Test]
	if s.notes == nil || !ok {
		return
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if s.notes.MatchString(line) {
			fmt.Fprintf(s.report, "       %s\n", strings.TrimSpace(line))
		}
	}
}
