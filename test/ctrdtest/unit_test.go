package ctrdtest

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadBed(t *testing.T) {
	valid := `{"runtimes":[{"name":"containerd-2.1","containerd":"/c","ctr":"/ctr","binDir":"/b","configVersion":3}],
	  "runc":"/usr/sbin/runc","cniBinDir":"/usr/lib/cni",
	  "images":[{"ref":"localhost/minikubelet/pause:3.10","tar":"/p.tar","role":"pause"}]}`
	tests := []struct {
		name, json, wantErr string
	}{
		{"valid", valid, ""},
		{"unknown field", strings.Replace(valid, `"runc"`, `"extra":1,"runc"`, 1), `unknown field "extra"`},
		{"bad config version", strings.Replace(valid, `"configVersion":3`, `"configVersion":1`, 1), "configVersion 1"},
		{"no pause image", strings.Replace(valid, `"role":"pause"`, `"role":"busybox"`, 1), `role "pause"`},
		{"no runtimes", `{"runtimes":[],"runc":"/r","cniBinDir":"/c","images":[{"ref":"p:1","tar":"/p","role":"pause"}]}`, "no runtimes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bed.json")
			if err := os.WriteFile(path, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadBed(path)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("LoadBed: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("LoadBed error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestShimSockets(t *testing.T) {
	argv := []string{"/usr/bin/containerd-shim-runc-v2", "-namespace", "k8s.io", "-id", "abc", "-address", "/d/containerd.sock"}
	got := shimSockets(argv)
	want := fmt.Sprintf("/run/containerd/s/%x", sha256.Sum256([]byte("/d/containerd.sock/k8s.io/abc")))
	if len(got) != 2 || got[0] != want {
		t.Fatalf("shimSockets = %v, want first %s", got, want)
	}
	if !isShim(argv) || isShim([]string{"/usr/bin/containerd", "--config", "x"}) {
		t.Fatal("isShim misclassifies")
	}
}

func TestUnescapeMount(t *testing.T) {
	tests := map[string]string{
		`/a/b`:            "/a/b",
		`/a\040b`:         "/a b",
		`/x\134y`:         `/x\y`,
		`/trailing\04`:    `/trailing\04`,
		`/tab\011and\012`: "/tab\tand\n",
	}
	for in, want := range tests {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSlotFree(t *testing.T) {
	ip := func(a, b, c, d uint32) uint32 { return a<<24 | b<<16 | c<<8 | d }
	tests := []struct {
		name   string
		routes []ipv4Route
		free   bool
	}{
		{"no routes", nil, true},
		{"other net", []ipv4Route{{dst: ip(192, 0, 2, 0), mask: 0xffffff00}}, true},
		{"same /24", []ipv4Route{{dst: ip(10, 88, 200, 0), mask: 0xffffff00}}, false},
		{"covering /16", []ipv4Route{{dst: ip(10, 88, 0, 0), mask: 0xffff0000}}, false},
		{"inside /25", []ipv4Route{{dst: ip(10, 88, 200, 128), mask: 0xffffff80}}, false},
		{"neighbour /24", []ipv4Route{{dst: ip(10, 88, 201, 0), mask: 0xffffff00}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "200")
			if got := slotFree(file, 200, tt.routes); got != tt.free {
				t.Fatalf("slotFree = %v, want %v", got, tt.free)
			}
		})
	}
}

func TestParseHexLE(t *testing.T) {
	// /proc/net/route prints 192.0.2.0 as 000200C0.
	if v, err := parseHexLE("000200C0"); err != nil || v != 192<<24|0<<16|2<<8 {
		t.Fatalf("parseHexLE = %x, %v", v, err)
	}
}

func TestReserveSlot(t *testing.T) {
	slots := t.TempDir()
	live := t.TempDir() // an instance dir with a state.json holds its slot
	if err := os.WriteFile(filepath.Join(live, stateFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	n1, f1, err := reserveSlot(slots, live)
	if err != nil {
		t.Fatal(err)
	}
	n2, _, err := reserveSlot(slots, filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	if n1 == n2 {
		t.Fatalf("two reservations got slot %d", n1)
	}
	if err := releaseSlot(f1, "/not/the/owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f1); err != nil {
		t.Fatalf("releaseSlot by a non-owner removed the slot: %v", err)
	}
	if err := releaseSlot(f1, live); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f1); !os.IsNotExist(err) {
		t.Fatalf("slot file still there after release: %v", err)
	}
}

func TestConfigRendering(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprint("v", version), func(t *testing.T) {
			s := &instance{Dir: t.TempDir(), Slot: 7}
			p := configParams{Root: "/r", State: "/s", Socket: "/x.sock", TTRPCSocket: "/x.sock.ttrpc",
				PauseRef: "localhost/p:1", Runc: "/usr/sbin/runc", RuncRoot: "/rr", CNIBinDir: "/cni", CNIConfDir: "/conf"}
			if err := writeConfig(s, version, p); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(s.configPath())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{fmt.Sprintf("version = %d", version), "restrict_oom_score_adj = true",
				"netns_mounts_under_state_dir = true", `BinaryName = "/usr/sbin/runc"`, "SystemdCgroup = false",
				`"localhost/p:1"`, `"io.containerd.snapshotter.v1.btrfs"`} {
				if !strings.Contains(string(data), want) {
					t.Errorf("config v%d lacks %q:\n%s", version, want, data)
				}
			}
			if nri := strings.Contains(string(data), `"io.containerd.nri.v1.nri"`); nri != (version == 3) {
				t.Errorf("config v%d: NRI section present = %v", version, nri)
			}
		})
	}
}
