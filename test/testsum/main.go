// Command testsum reads `go test -json` from stdin and prints what a
// person wants from a test run: go test's usual per-package lines, the full
// output of every test that failed, and a closing line that says what ran,
// `N passed, N failed, N skipped`. It exits 1 if any test or package failed
// (a build failure included).
//
//	go test -json ./... | go run ./test/testsum
//
// With -report, the closing line is preceded by one line per test and
// subtest, in the order they ended: its result and how long it took; with
// -notes REGEXP too, each followed by the lines of its output that match
// REGEXP (the numbers a test logs, say).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

type summary struct {
	passed, failed, skipped int
	pkgFailed               bool
	// output buffers each running test's output until it ends.
	output map[string]*strings.Builder
	// report, when set, collects a line per test that ended, and notes
	// selects the output lines added under it.
	report *strings.Builder
	notes  *regexp.Regexp
}

func main() {
	report := flag.Bool("report", false, "print each test's result and duration at the end")
	notes := flag.String("notes", "", "with -report, also print each test's output lines that match this regexp")
	flag.Parse()
	s := &summary{output: map[string]*strings.Builder{}}
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
	if err := s.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
	}
	if s.report != nil {
		fmt.Print(s.report.String())
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
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
			fmt.Fprintln(w, string(line))
			continue
		}
		s.handle(e, w)
	}
	return sc.Err()
}

func (s *summary) handle(e event, w io.Writer) {
	key := e.Package + " " + e.Test
	if e.Test == "" {
		switch e.Action {
		case "output":
			if out := strings.TrimRight(e.Output, "\n"); out != "PASS" && out != "" {
				fmt.Fprintln(w, out)
			}
		case "fail":
			s.pkgFailed = true
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			s.pkgFailed = true
		}
		return
	}
	switch e.Action {
	case "output":
		b, ok := s.output[key]
		if !ok {
			b = &strings.Builder{}
			s.output[key] = b
		}
		b.WriteString(e.Output)
	case "pass":
		s.passed++
		s.addReport("ok  ", e)
		delete(s.output, key)
	case "skip":
		s.skipped++
		s.addReport("skip", e)
		delete(s.output, key)
	case "fail":
		s.failed++
		if b, ok := s.output[key]; ok {
			fmt.Fprint(w, b.String())
		}
		s.addReport("FAIL", e)
		delete(s.output, key)
	}
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
