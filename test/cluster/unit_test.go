package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A certificate the CA issues verifies against it for its usage, and a
// client certificate carries the user and groups the apiserver reads.
func TestCAIssue(t *testing.T) {
	dir := t.TempDir()
	ca, err := newCA(dir, "ca", "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM) {
		t.Fatal("CA PEM does not parse")
	}
	ip := net.ParseIP("192.0.2.7")
	certFile, keyFile, err := ca.issue(dir, "node", certSpec{cn: "system:node:n1", orgs: []string{"system:nodes"}, client: true, server: true, ips: []net.IP{ip}, dns: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:n1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject %v", cert.Subject)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("verify for usage %v: %v", usage, err)
		}
	}
	if err := cert.VerifyHostname("192.0.2.7"); err != nil {
		t.Errorf("serving SAN: %v", err)
	}
	clientOnly, _, err := ca.issue(dir, "client", certSpec{cn: "admin", client: true})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(clientOnly)
	block, _ := pem.Decode(data)
	c2, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate verifies for serving")
	}
	for _, f := range []string{ca.KeyFile, keyFile} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("key %s: mode %v, %v; want 0600", f, st.Mode().Perm(), err)
		}
	}
}

// LoadBins names each missing or empty field and refuses fields it does
// not know (a cluster.json out of step with this package).
func TestLoadBinsErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"kubeVersion": "v1.36.3", "kubelet": "/nonexistent/kubelet"}`)
	_, err := LoadBins(path)
	if err == nil {
		t.Fatal("LoadBins accepted a cluster.json without binaries")
	}
	for _, want := range []string{"field kubeControllerManager is empty", "field kubelet:", "prepare-cluster.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	write(`{"kubeVersion": "v1.36.3", "extra": 1}`)
	if _, err := LoadBins(path); err == nil || !strings.Contains(err.Error(), `unknown field "extra"`) {
		t.Errorf("unknown field: %v", err)
	}
}

func TestOptionsComplete(t *testing.T) {
	o := Options{Agent: "kubelet2", HostIP: net.ParseIP("127.0.0.1")}
	err := o.complete()
	if err == nil {
		t.Fatal("complete accepted bad options")
	}
	for _, want := range []string{"Options.Bed and Options.Bins are required", "Options.Dir is required", `Options.Agent "kubelet2"`, "non-loopback"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// Cleanup leaves a directory without a cluster record alone, and refuses a
// record that names another directory.
func TestCleanupChecksRecord(t *testing.T) {
	dir := t.TempDir()
	if err := Cleanup(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Cleanup removed a dir without a record: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(`{"dir": "/elsewhere"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Cleanup(dir); err == nil || !strings.Contains(err.Error(), "/elsewhere") {
		t.Fatalf("Cleanup of a foreign record: %v", err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Cleanup removed a dir with a foreign record: %v", err)
	}
}

func TestHollowOptionsComplete(t *testing.T) {
	o := HollowOptions{Kind: HollowMinikubelet, Count: 300}
	err := o.complete()
	if err == nil {
		t.Fatal("complete accepted bad options")
	}
	for _, want := range []string{"FakeCRI is required", "Binary is required", "Count 300"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := (&HollowOptions{Kind: "virtual", Count: 1, Binary: "b"}).complete(); err == nil || !strings.Contains(err.Error(), `Kind "virtual"`) {
		t.Errorf("unknown kind: %v", err)
	}
	ok := HollowOptions{Kind: HollowKubemark, Count: 1, Binary: "kubemark"}
	if err := ok.complete(); err != nil || ok.Prefix != "hollow-kubemark" || ok.Parallel != hollowParallel {
		t.Errorf("defaults: %v %+v", err, ok)
	}
}
