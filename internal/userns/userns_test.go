package userns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func hostOf(t *testing.T, ns *runtimeapi.UserNamespace) uint32 {
	t.Helper()
	if ns.Mode != runtimeapi.NamespaceMode_POD || len(ns.Uids) != 1 || len(ns.Gids) != 1 || ns.Uids[0].String() != ns.Gids[0].String() ||
		ns.Uids[0].ContainerId != 0 || ns.Uids[0].Length != 65536 {
		t.Fatalf("user namespace %v: want one 65536-ID range mapped to 0, the same for groups", ns)
	}
	return ns.Uids[0].HostId
}

// Each pod gets a range of its own, the same one each time it asks and
// after a restart (the file in its directory), never host IDs below 65536;
// a range released is handed out again.
func TestMappings(t *testing.T) {
	pods := t.TempDir()
	m, err := New(pods)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Mappings("a")
	b, _ := m.Mappings("b")
	again, _ := m.Mappings("a")
	if hostOf(t, a) != 65536 || hostOf(t, b) != 131072 || hostOf(t, again) != 65536 {
		t.Errorf("ranges a=%d b=%d a again=%d", hostOf(t, a), hostOf(t, b), hostOf(t, again))
	}
	data, err := os.ReadFile(filepath.Join(pods, "a", "userns"))
	if err != nil || !strings.Contains(string(data), `"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}]`) {
		t.Errorf("userns file of a: %s (%v)", data, err)
	}

	// A restarted agent finds the ranges its pods use.
	m2, err := New(pods)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m2.Mappings("c")
	b2, _ := m2.Mappings("b")
	if hostOf(t, c) != 196608 || hostOf(t, b2) != 131072 {
		t.Errorf("after a restart: c=%d b=%d", hostOf(t, c), hostOf(t, b2))
	}
	m2.Release("a")
	if _, err := os.Stat(filepath.Join(pods, "a", "userns")); !os.IsNotExist(err) {
		t.Errorf("a's file after its release: %v", err)
	}
	d, _ := m2.Mappings("d")
	if hostOf(t, d) != 65536 {
		t.Errorf("d after a's release: %d, want a's range", hostOf(t, d))
	}
}

// A file that is not a range the manager would hand out stops it: giving
// that range out again could share IDs between pods.
func TestNewRefusesBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"not json":    "{",
		"host root":   `{"uidMappings":[{"hostId":0,"containerId":0,"length":65536}],"gidMappings":[{"hostId":0,"containerId":0,"length":65536}]}`,
		"unaligned":   `{"uidMappings":[{"hostId":70000,"containerId":0,"length":65536}],"gidMappings":[{"hostId":70000,"containerId":0,"length":65536}]}`,
		"uid and gid": `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
	} {
		pods := t.TempDir()
		if err := os.MkdirAll(filepath.Join(pods, "p"), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pods, "p", "userns"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(pods); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	pods := t.TempDir()
	for _, p := range []string{"p", "q"} {
		if err := os.MkdirAll(filepath.Join(pods, p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pods, p, "userns"), []byte(`{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(pods); err == nil || !strings.Contains(err.Error(), "both hold host IDs 65536-131071") {
		t.Errorf("two pods on one range: %v", err)
	}
	if _, err := New(filepath.Join(pods, "missing")); err != nil {
		t.Errorf("no pods directory yet: %v", err)
	}
}
