// Command testsum reads `go test -json` from stdin and prints what a
// person wants from a test run: go test's usual per-package lines, the full
// output of every test that failed, and a closing line that says what ran,
// `N passed, N failed, N skipped`. It exits 1 if any test or package failed
// (a build failure included).
//
//	go test -json ./... | go run ./test/testsum
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of `go test -json` (see `go doc test2json`).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type summary struct {
	passed, failed, skipped int
	pkgFailed               bool
	// output buffers each running test's output until it ends.
	output map[string]*strings.Builder
}

func main() {
	s := &summary{output: map[string]*strings.Builder{}}
	if err := s.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(2)
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
		delete(s.output, key)
	case "skip":
		s.skipped++
		delete(s.output, key)
	case "fail":
		s.failed++
		if b, ok := s.output[key]; ok {
			fmt.Fprint(w, b.String())
		}
		delete(s.output, key)
	}
}
