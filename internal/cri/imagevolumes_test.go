package cri

import "testing"

func TestImageVolumes(t *testing.T) {
	tests := []struct {
		name, version  string
		mount, subPath bool
	}{
		{"containerd", "1.6.20~ds1", false, false},
		{"containerd", "v1.7.27", false, false},
		{"containerd", "v2.0.5", false, false},
		{"containerd", "v2.1.4", true, false},
		{"containerd", "v2.2.0-rc.1", true, true},
		{"containerd", "v3.0.0", true, true},
		{"cri-o", "1.30.4", false, false},
		{"cri-o", "1.31.0", true, false},
		{"cri-o", "1.33.1", true, true},
		{"containerd", "", false, false},
		{"containerd", "devel", false, false},
		{"other", "9.9.9", false, false},
	}
	for _, tt := range tests {
		mount, subPath := ImageVolumes(tt.name, tt.version)
		if mount != tt.mount || subPath != tt.subPath {
			t.Errorf("ImageVolumes(%q, %q) = %v, %v; want %v, %v", tt.name, tt.version, mount, subPath, tt.mount, tt.subPath)
		}
	}
}
