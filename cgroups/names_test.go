package cgroups

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPodNames(t *testing.T) {
	const uid = types.UID("1b4e28ba-2fa1-11d2-883f-0016d3cca427")
	tests := []struct {
		name, root, driver string
		class              v1.PodQOSClass
		want               string
	}{
		{"cgroupfs guaranteed", "/", DriverCgroupfs, v1.PodQOSGuaranteed, "/kubepods/pod" + string(uid)},
		{"cgroupfs burstable", "/", DriverCgroupfs, v1.PodQOSBurstable, "/kubepods/burstable/pod" + string(uid)},
		{"cgroupfs besteffort under a root", "/minikubelet-bed-3/node-a", DriverCgroupfs, v1.PodQOSBestEffort, "/minikubelet-bed-3/node-a/kubepods/besteffort/pod" + string(uid)},
		{"systemd guaranteed", "/", DriverSystemd, v1.PodQOSGuaranteed, "/kubepods.slice/kubepods-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice"},
		{"systemd burstable", "/", DriverSystemd, v1.PodQOSBurstable, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice"},
		{"systemd besteffort under a slice", "/system.slice/my-agent.slice", DriverSystemd, v1.PodQOSBestEffort,
			"/my.slice/my-agent.slice/my-agent-kubepods.slice/my-agent-kubepods-besteffort.slice/my-agent-kubepods-besteffort-pod1b4e28ba_2fa1_11d2_883f_0016d3cca427.slice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, err := parseRoot(tt.root, tt.driver)
			if err != nil {
				t.Fatal(err)
			}
			got := podName(root, tt.class, uid).path(tt.driver)
			if got != tt.want {
				t.Errorf("pod cgroup = %s, want %s", got, tt.want)
			}
			dir := got[len(got)-len(lastElem(got)):]
			back, ok := uidFromPodDir(dir, tt.driver)
			if !ok || back != uid {
				t.Errorf("uidFromPodDir(%q) = %q, %v; want %q", dir, back, ok, uid)
			}
		})
	}
}

func lastElem(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

func TestUIDFromPodDirRejects(t *testing.T) {
	tests := []struct{ dir, driver string }{
		{"burstable", DriverCgroupfs},
		{"pod", DriverCgroupfs},
		{"0123abcd", DriverCgroupfs},
		{"kubepods-burstable.slice", DriverSystemd},
		{"kubepods.slice", DriverSystemd},
		{"cri-containerd-abc.scope", DriverSystemd},
	}
	for _, tt := range tests {
		t.Run(tt.driver+"/"+tt.dir, func(t *testing.T) {
			if uid, ok := uidFromPodDir(tt.dir, tt.driver); ok {
				t.Errorf("uidFromPodDir(%q) = %q, want no pod", tt.dir, uid)
			}
		})
	}
}

func TestParseRootErrors(t *testing.T) {
	tests := []struct{ root, driver string }{
		{"", DriverCgroupfs},
		{"relative", DriverCgroupfs},
		{"/not-a-slice", DriverSystemd},
	}
	for _, tt := range tests {
		t.Run(tt.driver+" "+tt.root, func(t *testing.T) {
			if _, err := parseRoot(tt.root, tt.driver); err == nil {
				t.Errorf("parseRoot(%q, %s) succeeded; want an error", tt.root, tt.driver)
			}
		})
	}
}

func TestContainerPath(t *testing.T) {
	tests := []struct{ parent, id, driver, want string }{
		{"/kubepods/burstable/podu", "abc", DriverCgroupfs, "/kubepods/burstable/podu/abc"},
		{"/kubepods.slice/kubepods-podu.slice", "abc", DriverSystemd, "/kubepods.slice/kubepods-podu.slice/cri-containerd-abc.scope"},
	}
	for _, tt := range tests {
		t.Run(tt.driver, func(t *testing.T) {
			if got := containerPath(tt.parent, tt.id, tt.driver); got != tt.want {
				t.Errorf("containerPath = %s, want %s", got, tt.want)
			}
		})
	}
}
