package admission

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The safe set follows the kernel's release as the kubelet's does.
func TestSafeSysctls(t *testing.T) {
	old := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	if got := SafeSysctls("3.10.0-1160.el7.x86_64"); !slices.Equal(got, old) {
		t.Errorf("3.10: %v, want %v", got, old)
	}
	if got := SafeSysctls("not a version"); !slices.Equal(got, old) {
		t.Errorf("unknown kernel: %v, want %v", got, old)
	}
	v45 := SafeSysctls("4.5.0")
	if !slices.Contains(v45, "net.ipv4.tcp_keepalive_time") || slices.Contains(v45, "net.ipv4.tcp_fin_timeout") || slices.Contains(v45, "net.ipv4.tcp_rmem") {
		t.Errorf("4.5: %v", v45)
	}
	if got := SafeSysctls("6.18.3-amd64\n"); len(got) != len(safeSysctls) {
		t.Errorf("6.18: %v, want all %d", got, len(safeSysctls))
	}
}

func sysctlPod(hostNet, hostIPC bool, names ...string) *v1.Pod {
	sc := &v1.PodSecurityContext{}
	for _, n := range names {
		sc.Sysctls = append(sc.Sysctls, v1.Sysctl{Name: n, Value: "1"})
	}
	return &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: sc}}
}

// A pod's sysctls must be safe or allowed, and not of a namespace it
// shares with the host; refusals carry the kubelet's reason and message.
func TestSysctls(t *testing.T) {
	h, err := Sysctls("6.1.0", []string{"net.core.somaxconn", "kernel.msg*", "fs.mqueue.*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string // "" admits
	}{
		{"none", &v1.Pod{}, ""},
		{"safe", sysctlPod(false, false, "net.ipv4.ip_local_port_range", "kernel.shm_rmid_forced", "net.ipv4.tcp_rmem"), ""},
		{"slash separators", sysctlPod(false, false, "net/ipv4/ping_group_range"), ""},
		{"allowed unsafe", sysctlPod(false, false, "net.core.somaxconn", "kernel.msgmax", "fs.mqueue.msg_max"), ""},
		{"not allowed", sysctlPod(false, false, "net.ipv4.ip_forward"), `forbidden sysctl: "net.ipv4.ip_forward" not allowlisted`},
		{"not namespaced", sysctlPod(false, false, "vm.swappiness"), `forbidden sysctl: "vm.swappiness" not allowlisted`},
		{"net on the host network", sysctlPod(true, false, "net.ipv4.ip_local_port_range"), `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{"ipc with host IPC", sysctlPod(false, true, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"allowed pattern with host IPC", sysctlPod(false, true, "kernel.msgmnb"), `forbidden sysctl: "kernel.msgmnb" not allowed with host IPC enabled`},
		{"net with host IPC only", sysctlPod(false, true, "net.core.somaxconn"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h(tc.pod, nil)
			if tc.want == "" {
				if !r.Admit {
					t.Errorf("refused: %+v", r)
				}
				return
			}
			if r.Admit || r.Reason != "SysctlForbidden" || r.Message != tc.want {
				t.Errorf("got %+v, want SysctlForbidden %q", r, tc.want)
			}
		})
	}
	if _, err := Sysctls("6.1.0", []string{"kernel.panic"}); err == nil {
		t.Errorf("a sysctl that is not namespaced was allowed")
	}
}
