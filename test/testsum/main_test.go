package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"run","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB"}`,
		`{"Action":"skip","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}`,
		`{"Action":"fail","Package":"p"}`,
		`# q`,
	}, "\n")
	s := &summary{output: map[string]*strings.Builder{}}
	var out bytes.Buffer
	if err := s.read(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if s.passed != 1 || s.failed != 1 || s.skipped != 1 || !s.pkgFailed {
		t.Errorf("counts = %d passed, %d failed, %d skipped, package failed %v", s.passed, s.failed, s.skipped, s.pkgFailed)
	}
	for _, want := range []string{"b_test.go:9: boom", "FAIL\tp\t0.1s", "# q"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "=== RUN   TestA") {
		t.Errorf("a passing test's output was printed:\n%s", out.String())
	}
}

func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"    a_test.go:3: converged in 2s\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"    a_test.go:4: noise\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA/x","Elapsed":2.5}`,
		`{"Action":"fail","Package":"p","Test":"TestA","Elapsed":3}`,
	}, "\n")
	s := &summary{output: map[string]*strings.Builder{}, report: &strings.Builder{}, notes: regexp.MustCompile("converged")}
	if err := s.read(strings.NewReader(in), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want := "ok   TestA/x 2.5s\n       a_test.go:3: converged in 2s\nFAIL TestA 3.0s\n"
	if got := s.report.String(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}
