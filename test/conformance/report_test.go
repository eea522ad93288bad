package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSpecName(t *testing.T) {
	tests := []struct{ in, want string }{
		// The label group repeats tags of the text: it goes.
		{"[It] [sig-node] Pods should get a host IP [NodeConformance] [Conformance] [sig-node, NodeConformance, Conformance]",
			"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]"},
		// A lone label that is also a tag of the text.
		{"[It] [sig-storage] EmptyDir volumes x [Conformance] [Conformance]", "[sig-storage] EmptyDir volumes x [Conformance]"},
		// No label group: the text's last tag stays.
		{"[It] [sig-node] x [Conformance]", "[sig-node] x [Conformance]"},
		// A last bracket whose words are not tags of the text stays.
		{"[It] x [Conformance] [Slow, Conformance]", "x [Conformance] [Slow, Conformance]"},
		{"[SynchronizedBeforeSuite]", "[SynchronizedBeforeSuite]"},
	}
	for _, tt := range tests {
		if got := specName(tt.in); got != tt.want {
			t.Errorf("specName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

const junitFixture = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="0" errors="0" failures="2" time="100">
  <testsuite name="Kubernetes e2e suite" package="/x" tests="4" disabled="0" skipped="1" errors="0" failures="2" time="100">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1.5"></testcase>
    <testcase name="[It] [sig-node] A passes [Conformance] [sig-node, Conformance]" classname="Kubernetes e2e suite" status="passed" time="3.25"></testcase>
    <testcase name="[It] [sig-node] B fails [Conformance] [sig-node, Conformance]" classname="Kubernetes e2e suite" status="failed" time="10">
      <failure message="&#xA;failed to get logs from pod: an error on the server (&#34;unknown&#34;)&#xA;more" type="failed">stack</failure>
    </testcase>
    <testcase name="[It] [sig-node] C times out [Conformance] [sig-node, Conformance]" classname="Kubernetes e2e suite" status="timedout" time="300">
      <failure message="timed out waiting for pod" type="timedout">stack</failure>
    </testcase>
    <testcase name="[It] [sig-node] D skipped [Conformance] [sig-node, Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped - no"></skipped>
    </testcase>
    <testcase name="[It] [sig-apps] E not selected [sig-apps]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func writeRun(t *testing.T, junit string, meta Meta) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, JUnitFile), []byte(junit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteMeta(dir, meta); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReadJUnit(t *testing.T) {
	dir := writeRun(t, junitFixture, Meta{})
	got, err := ReadJUnit(filepath.Join(dir, JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{
		{Name: "[sig-node] A passes [Conformance]", State: "passed", Seconds: 3.25},
		{Name: "[sig-node] B fails [Conformance]", State: "failed", Seconds: 10, Message: "\nfailed to get logs from pod: an error on the server (\"unknown\")\nmore"},
		{Name: "[sig-node] C times out [Conformance]", State: "timedout", Seconds: 300, Message: "timed out waiting for pod"},
		{Name: "[sig-node] D skipped [Conformance]", State: "skipped", Message: "skipped - no"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if fl := got[1].FirstLine(); fl != `failed to get logs from pod: an error on the server ("unknown")` {
		t.Errorf("FirstLine = %q", fl)
	}
	if !got[2].Failed() || got[3].Failed() || got[3].Passed() {
		t.Errorf("Failed/Passed wrong for %+v, %+v", got[2], got[3])
	}
}

func TestParseCauses(t *testing.T) {
	cs, err := parseCauses("causes.txt", strings.NewReader("# comment\n\npod logs | an error on the server\nexec | exec\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Group != "pod logs" || cs[1].Pattern.String() != "exec" {
		t.Fatalf("causes %+v", cs)
	}
	_, err = parseCauses("causes.txt", strings.NewReader("no separator\nbad | (\n"))
	if err == nil || !strings.Contains(err.Error(), "causes.txt:1:") || !strings.Contains(err.Error(), "causes.txt:2:") {
		t.Fatalf("want errors naming lines 1 and 2, got %v", err)
	}
}

// The report joins both runs by name, counts, and groups minikubelet's
// failures that the kubelet passes by the first cause that matches.
func TestNewReport(t *testing.T) {
	kubeletJUnit := strings.NewReplacer(`status="failed"`, `status="passed"`, `status="timedout"`, `status="failed"`).Replace(junitFixture)
	mini, err := ReadRun(writeRun(t, junitFixture, Meta{Agent: "minikubelet", KubeVersion: "v1.36.3"}))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := ReadRun(writeRun(t, kubeletJUnit, Meta{Agent: "kubelet", KubeVersion: "v1.36.3"}))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := parseCauses("c", strings.NewReader("pod logs: no kubelet port | an error on the server \\(\"unknown\"\\)\npod start | timed out\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(mini, nil, kube, cs, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	want := Totals{Specs: 4, MinikubeletPassed: 1, MinikubeletFailed: 2, KubeletPassed: 2, KubeletFailed: 1,
		OnlyMinikubeletFails: 1, BothFail: 1}
	if rep.Totals != want {
		t.Errorf("totals %+v, want %+v", rep.Totals, want)
	}
	causes := map[string]string{}
	for _, r := range rep.Rows {
		causes[r.Name] = r.Cause
	}
	if c := causes["[sig-node] B fails [Conformance]"]; c != "pod logs: no kubelet port" {
		t.Errorf("B's cause %q", c)
	}
	if c := causes["[sig-node] C times out [Conformance]"]; c != "pod start" {
		t.Errorf("C fails on both: its cause is the kubelet's failure's, got %q", c)
	}
	if c := causes["[sig-node] A passes [Conformance]"]; c != "" {
		t.Errorf("A passes on both, yet has cause %q", c)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"minikubelet passes 1 of 4, the kubelet 2 of 4 (Kubernetes v1.36.3, 2026-11-25)",
		"### pod logs: no kubelet port (1)",
		`| [sig-node] B fails [Conformance] | failed | 10.0 | passed | 10.0 | failed to get logs from pod: an error on the server ("unknown") |`,
	} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Totals != want || len(back.Rows) != 4 {
		t.Errorf("JSON round trip: %v, %+v", err, back.Totals)
	}
}

// With a run where the node may list configMaps and secrets, a spec that
// passes there is under NodeListCause, one that fails there under the
// cause of that failure.
func TestNewReportNodeLists(t *testing.T) {
	pass := strings.NewReplacer(`status="failed"`, `status="passed"`, `status="timedout"`, `status="passed"`).Replace(junitFixture)
	mini, err := ReadRun(writeRun(t, strings.ReplaceAll(junitFixture, `status="passed"`, `status="failed"`), Meta{Agent: "minikubelet"}))
	if err != nil {
		t.Fatal(err)
	}
	// Node may list: A passes, B still fails (its logs).
	lists, err := ReadRun(writeRun(t, junitFixture, Meta{Agent: "minikubelet", NodeListsObjects: true}))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := ReadRun(writeRun(t, pass, Meta{Agent: "kubelet"}))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := parseCauses("c", strings.NewReader("pod logs | failed to get logs\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(mini, lists, kube, cs, time.Now())
	causes := map[string]string{}
	for _, r := range rep.Rows {
		causes[r.Name] = r.Cause
	}
	if c := causes["[sig-node] A passes [Conformance]"]; c != NodeListCause {
		t.Errorf("A fails in production, passes when the node may list: cause %q", c)
	}
	if c := causes["[sig-node] B fails [Conformance]"]; c != "pod logs" {
		t.Errorf("B fails in both minikubelet runs: cause %q, want the failure's", c)
	}
	if rep.Totals.NodeListsPassed != 1 || rep.Totals.MinikubeletPassed != 0 {
		t.Errorf("totals %+v", rep.Totals)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "(1 when the node may list configMaps and secrets)") {
		t.Errorf("summary lacks the node-lists count:\n%s", md.String())
	}
}

// A report whose only minikubelet run let the node list says so in its
// summary, its column and a paragraph naming the production gap.
func TestReportMinikubeletRunMayList(t *testing.T) {
	lists, err := ReadRun(writeRun(t, junitFixture, Meta{Agent: "minikubelet", NodeListsObjects: true, KubeVersion: "v1.36.3"}))
	if err != nil {
		t.Fatal(err)
	}
	kube, err := ReadRun(writeRun(t, junitFixture, Meta{Agent: "kubelet", KubeVersion: "v1.36.3"}))
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(lists, nil, kube, nil, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"minikubelet (the node may list configMaps and secrets) passes 1 of 4, the kubelet 1 of 4",
		"| | minikubelet (the node may list configMaps and secrets) | kubelet |",
		"**This minikubelet run is not a production node's.**",
		NodeListCause,
	} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, md.String())
		}
	}
}
