package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
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
	s := newSummary(testingclock.NewFakePassiveClock(time.Now()))
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
	s := newSummary(testingclock.NewFakePassiveClock(time.Now()))
	s.report, s.notes = &strings.Builder{}, regexp.MustCompile("converged")
	if err := s.read(strings.NewReader(in), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	want := "ok   TestA/x 2.5s\n       a_test.go:3: converged in 2s\nFAIL TestA 3.0s\n"
	if got := s.report.String(); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
}

// progress feeds in and returns what testsum printed, with a fake clock
// stepped by each event's step first.
type timed struct {
	step time.Duration
	line string
}

func run(t *testing.T, s *summary, clk *testingclock.FakePassiveClock, events []timed) string {
	t.Helper()
	var out bytes.Buffer
	for _, e := range events {
		clk.SetTime(clk.Now().Add(e.step))
		if e.line == "" {
			s.heartbeat(&out)
			continue
		}
		if err := s.read(strings.NewReader(e.line), &out); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

// A slow top-level test gets a line with the running counts as it ends;
// a fast one does not; a package's ok line carries the counts; a long
// silence gets a line naming the running tests.
func TestProgress(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newSummary(clk)
	out := run(t, s, clk, []timed{
		{0, `{"Action":"run","Package":"example/e2e","Test":"TestFast"}`},
		{0, `{"Action":"pass","Package":"example/e2e","Test":"TestFast","Elapsed":0.2}`},
		// Parallel subtests: the parent's own Elapsed is 0, it took 2s.
		{0, `{"Action":"run","Package":"example/e2e","Test":"TestParallel"}`},
		{2 * time.Second, `{"Action":"pass","Package":"example/e2e","Test":"TestParallel","Elapsed":0}`},
		{0, `{"Action":"run","Package":"example/e2e","Test":"TestSlow"}`},
		{0, `{"Action":"run","Package":"example/e2e","Test":"TestSlow/containerd-1.6"}`},
		{0, `{"Action":"pass","Package":"example/e2e","Test":"TestSlow/containerd-1.6","Elapsed":12}`},
		{Heartbeat - time.Second, ""}, // not quiet for long enough yet
		{2 * time.Second, ""},         // now it is
		{time.Second, ""},             // and the line just printed resets the silence
		{0, `{"Action":"pass","Package":"example/e2e","Test":"TestSlow","Elapsed":12.3}`},
		{0, `{"Action":"output","Package":"example/e2e","Output":"ok  \texample/e2e\t12.6s\n"}`},
		{0, `{"Action":"pass","Package":"example/e2e","Elapsed":12.6}`},
	})
	want := strings.Join([]string{
		"  ok   TestParallel example/e2e (2.0s)   [2 passed, 0 failed, 0 skipped so far]",
		"  ... running: TestSlow example/e2e (31s)   [3 passed, 0 failed, 0 skipped so far]",
		"  ok   TestSlow example/e2e (32.0s)   [4 passed, 0 failed, 0 skipped so far]",
		"ok  \texample/e2e\t12.6s   [4 passed, 0 failed, 0 skipped so far]",
		"",
	}, "\n")
	if out != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out, want)
	}
}

// The summary groups skipped tests by their skip message, most frequent
// first, and still ends with the closing line.
func TestSkipReasons(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    main_test.go:156: MINIKUBELET_BED is not set: run prepare.sh\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: some log line\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    main_test.go:156: MINIKUBELET_BED is not set: run prepare.sh\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"q","Test":"TestC/x","Output":"    c_test.go:9: needs root\n"}`,
		`{"Action":"output","Package":"q","Test":"TestC/x","Output":"        to create cgroups\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestC/x"}`,
		`{"Action":"skip","Package":"q","Test":"TestD"}`,
		`{"Action":"output","Package":"q","Test":"TestE/a","Output":"    e_test.go:9: agent refused 1048576 bytes\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestE/a"}`,
		`{"Action":"output","Package":"q","Test":"TestE/b","Output":"    e_test.go:9: agent refused 65536 bytes\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestE/b"}`,
		`{"Action":"output","Package":"q","Test":"TestE/c","Output":"    e_test.go:9: agent refused 65536 bytes\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestE/c"}`,
	}, "\n")
	clk := testingclock.NewFakePassiveClock(time.Now())
	s := newSummary(clk)
	var out bytes.Buffer
	if err := s.read(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	s.finish(&out)
	want := strings.Join([]string{
		"skipped, by reason:",
		"  3  agent refused # bytes",
		"      TestE/a, TestE/b, TestE/c",
		"  2  MINIKUBELET_BED is not set: run prepare.sh",
		"      TestA, TestB",
		"  1  (no message)",
		"      TestD",
		"  1  needs root to create cgroups",
		"      TestC/x",
		"0 passed, 0 failed, 7 skipped",
		"",
	}, "\n")
	if got := out.String(); got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}

func TestListTests(t *testing.T) {
	if got, want := listTests([]string{"a", "b", "c", "d", "e", "f", "g", "h"}), "a, b, c, d, e, f and 2 more"; got != want {
		t.Errorf("listTests = %q, want %q", got, want)
	}
}

// The closing lines repeat each failed test with the lines it logged
// itself, and only the end of the dump of a process's log it attached, so
// that the last screen of a long run says why it failed.
func TestFailuresRepeatedAtTheEnd(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"run","Package":"p","Test":"TestA/x"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"    a_test.go:12: pod web not Running after 30s: Pending\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"    agent_test.go:188: minikubelet log (node-1):\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"        I1125 15:15:12.237332   11046 reflector.go:507] \"Caches populated\"\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA/x","Output":"--- FAIL: TestA/x (3.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA/x"}`,
		`{"Action":"fail","Package":"p","Test":"TestA"}`,
		`{"Action":"run","Package":"p","Test":"TestB"}`,
		`{"Action":"pass","Package":"p","Test":"TestB"}`,
	}, "\n")
	s := newSummary(testingclock.NewFakePassiveClock(time.Now()))
	var progress, out bytes.Buffer
	if err := s.read(strings.NewReader(in), &progress); err != nil {
		t.Fatal(err)
	}
	s.finish(&out)
	want := strings.Join([]string{
		"failed:",
		"  TestA/x (p)",
		"      a_test.go:12: pod web not Running after 30s: Pending",
		"      agent_test.go:188: minikubelet log (node-1):",
		`      | I1125 15:15:12.237332   11046 reflector.go:507] "Caches populated"`,
		"  TestA (p)",
		"1 passed, 2 failed, 0 skipped",
		"",
	}, "\n")
	if got := out.String(); got != want {
		t.Errorf("printed:\n%s\nwant:\n%s", got, want)
	}
}
