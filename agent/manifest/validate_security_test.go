package manifest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The security fields a static pod could get wrong are refused as the API
// server refuses them, each error naming its field.
func TestValidateSecurity(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{name: "valid", mutate: func(p *v1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.SecurityContext = &v1.PodSecurityContext{
				Sysctls:                  []v1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1 2"}, {Name: "net/core/somaxconn", Value: "1"}},
				SupplementalGroupsPolicy: ptr(v1.SupplementalGroupsPolicyStrict),
			}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr(v1.UnmaskedProcMount)}
		}},
		{name: "sysctls", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: ""}, {Name: "Net.Core"}, {Name: "a.b"}, {Name: "a.b"}}}
		}, want: []string{
			"spec.securityContext.sysctls[0].name: Required value",
			`spec.securityContext.sysctls[1].name: Invalid value: "Net.Core": must have at most 253 characters`,
			`spec.securityContext.sysctls[3].name: Duplicate value: "a.b"`,
		}},
		{name: "supplementalGroupsPolicy", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: ptr(v1.SupplementalGroupsPolicy("Replace"))}
		}, want: []string{`spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Replace": supported values: "Merge", "Strict"`}},
		{name: "Unmasked without a user namespace", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr(v1.UnmaskedProcMount)}
		}, want: []string{"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"}},
		{name: "unknown procMount", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: ptr(v1.ProcMountType("Open"))}
		}, want: []string{`spec.containers[0].securityContext.procMount: Unsupported value: "Open"`}},
		{name: "host namespaces with hostUsers false", mutate: func(p *v1.Pod) {
			p.Spec.HostUsers = ptr(false)
			p.Spec.HostPID, p.Spec.HostIPC = true, true
		}, want: []string{"spec.hostPID: Forbidden: when `hostUsers` is false", "spec.hostIPC: Forbidden: when `hostUsers` is false"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			var got []string
			for _, e := range Validate(pod) {
				got = append(got, e.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Validate = %q, want %q", got, tt.want)
			}
			for i := range tt.want {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
