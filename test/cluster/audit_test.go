package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Audit events as kube-apiserver v1.36 writes them at the Metadata level
// (trimmed of the fields countRequests does not read).
const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"RequestReceived","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/mk-node-1?timeout=10s","verb":"update","user":{"username":"system:node:mk-node-1","groups":["system:nodes","system:authenticated"]},"objectRef":{"resource":"leases","namespace":"kube-node-lease","name":"mk-node-1","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"requestReceivedTimestamp":"2026-11-26T10:00:00.000000Z","stageTimestamp":"2026-11-26T10:00:00.000000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a1","stage":"ResponseComplete","requestURI":"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/mk-node-1?timeout=10s","verb":"update","user":{"username":"system:node:mk-node-1"},"objectRef":{"resource":"leases","namespace":"kube-node-lease","name":"mk-node-1","apiGroup":"coordination.k8s.io","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"RequestReceived","requestURI":"/api/v1/namespaces/default/pods/p1/status","verb":"patch","user":{"username":"system:node:mk-node-1"},"objectRef":{"resource":"pods","namespace":"default","name":"p1","apiVersion":"v1","subresource":"status"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a2","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods/p1/status","verb":"patch","user":{"username":"system:node:mk-node-1"},"objectRef":{"resource":"pods","namespace":"default","name":"p1","apiVersion":"v1","subresource":"status"},"responseStatus":{"metadata":{},"status":"Failure","reason":"Conflict","code":409}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a3","stage":"RequestReceived","requestURI":"/api/v1/namespaces/default/pods/p2/status","verb":"patch","user":{"username":"system:node:mk-node-1"},"objectRef":{"resource":"pods","namespace":"default","name":"p2","apiVersion":"v1","subresource":"status"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a4","stage":"RequestReceived","requestURI":"/api?timeout=32s","verb":"get","user":{"username":"system:node:mk-node-1"}}
`

// countRequests counts each request once, at its RequestReceived event,
// by verb and resource/subresource (the path for a request of no
// resource), and the failed answers by status.
func TestCountRequests(t *testing.T) {
	got, err := countRequests(strings.NewReader(auditLines))
	if err != nil {
		t.Fatal(err)
	}
	want := map[Request]int{
		{"update", "leases"}:     1,
		{"patch", "pods/status"}: 2,
		{"get", "/api"}:          1,
	}
	if !reflect.DeepEqual(got.Count, want) {
		t.Errorf("counts %v, want %v", got.Count, want)
	}
	if got.Total() != 4 {
		t.Errorf("total %d, want 4", got.Total())
	}
	if f := got.FormatFailed(); !reflect.DeepEqual(f, []string{"patch pods/status: 409 x1"}) {
		t.Errorf("failed %v", f)
	}
	if k := got.Kinds(); k[0] != (Request{"patch", "pods/status"}) {
		t.Errorf("kinds %v: the most frequent first", k)
	}
	if _, err := countRequests(strings.NewReader("{not json\n")); err == nil {
		t.Error("a line that is not JSON: no error")
	}
}

// AuditMark stops at the last complete line, so that counting from a mark
// never starts mid-line; NodeRequests counts between two marks.
func TestAuditMarks(t *testing.T) {
	c := &Cluster{opts: Options{AuditNode: true}, dir: t.TempDir()}
	if m, err := c.AuditMark(); err != nil || m != 0 {
		t.Fatalf("mark of a log not yet written: %d, %v", m, err)
	}
	lines := strings.SplitAfter(auditLines, "\n")
	first := strings.Join(lines[:2], "")
	// Two lines and half of the third.
	if err := os.WriteFile(filepath.Join(c.dir, auditLogName), []byte(first+lines[2][:40]), 0o600); err != nil {
		t.Fatal(err)
	}
	m1, err := c.AuditMark()
	if err != nil || m1 != int64(len(first)) {
		t.Fatalf("mark %d, %v; want %d", m1, err, len(first))
	}
	if err := os.WriteFile(filepath.Join(c.dir, auditLogName), []byte(auditLines), 0o600); err != nil {
		t.Fatal(err)
	}
	m2, err := c.AuditMark()
	if err != nil || m2 != int64(len(auditLines)) {
		t.Fatalf("mark %d, %v; want %d", m2, err, len(auditLines))
	}
	r, err := c.NodeRequests(m1, m2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Total() != 3 || r.Count[Request{"update", "leases"}] != 0 {
		t.Errorf("between the marks: %v, want the last three requests", r.Count)
	}
}
