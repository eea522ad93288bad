package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/apparmor"
	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// waitRefused waits until the static pod name shows on /pods as refused at
// admission: phase Failed with reason and "Pod was rejected: " + message.
func (a *agent) waitRefused(name, reason, message string) *v1.Pod {
	a.t.Helper()
	var p *v1.Pod
	polltest.Until(a.t, 30*time.Second, name+" refused with "+reason, func() (bool, string) {
		p = a.pod(name)
		if p == nil {
			return false, "not on /pods"
		}
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == reason && p.Status.Message == "Pod was rejected: "+message,
			fmt.Sprintf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	})
	return p
}

// noSandbox fails the test if the runtime holds a sandbox of the static pod
// name.
func (a *agent) noSandbox(name string) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sandboxes, _, err := runtimePods(ctx, a.rt, a.node)
	if err != nil {
		a.t.Fatal(err)
	}
	for _, sb := range sandboxes {
		if sb.GetMetadata().GetName() == a.podName(name) {
			a.t.Errorf("the refused pod %s has a sandbox: %s", name, sb.Id)
		}
	}
}

// --max-pods 2: the third static pod is refused at admission as the
// kubelet refuses it (phase Failed, reason OutOfpods, the kubelet's
// message; `minikubelet pods` shows the reason), gets no sandbox, and
// stays refused when a running pod goes and when its manifest is edited;
// written anew once there is room, it runs.
func TestAdmissionMaxPods(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgentWith(t, rt, agentOptions{args: []string{"--max-pods", "2"}})
		a.writeManifest("one.yaml", sleeperPod("one"))
		a.writeManifest("two.yaml", sleeperPod("two"))
		a.waitRunning("one", 60*time.Second)
		a.waitRunning("two", 60*time.Second)
		a.writeManifest("three.yaml", sleeperPod("three"))
		a.waitRefused("three", "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2")
		a.noSandbox("three")
		out, _, err := a.cli("pods")
		if err != nil {
			t.Fatalf("minikubelet pods: %v", err)
		}
		if !strings.Contains(out, a.podName("three")) || !strings.Contains(out, "OutOfpods") {
			t.Errorf("minikubelet pods does not show the refusal:\n%s", out)
		}

		// A pod leaving does not admit it: it is not started by an edit.
		a.removeManifest("one.yaml")
		polltest.True(t, 30*time.Second, "one gone from /pods", func() bool { return a.pod("one") == nil })
		a.writeManifest("three.yaml", strings.Replace(sleeperPod("three"), "3600", "3601", 1))
		polltest.True(t, 10*time.Second, "the edit seen", func() bool {
			p := a.pod("three")
			return p != nil && len(p.Spec.Containers) == 1 && strings.Contains(strings.Join(p.Spec.Containers[0].Command, " "), "3601")
		})
		if p := a.pod("three"); p.Status.Phase != v1.PodFailed || p.Status.Reason != "OutOfpods" {
			t.Errorf("edited refused pod: %s reason %q, want it still refused", describe(p), p.Status.Reason)
		}
		a.noSandbox("three")

		// Written anew (removed, then added after the 500ms edit window),
		// it is admitted and runs.
		a.removeManifest("three.yaml")
		polltest.True(t, 30*time.Second, "three gone from /pods", func() bool { return a.pod("three") == nil })
		a.writeManifest("three.yaml", sleeperPod("three"))
		a.waitRunning("three", 60*time.Second)
	})
}

// sysctlPod is the static pod name with the given sysctls (name=value),
// on the host's network or its own, whose container prints the values
// the kernel holds of net.core.somaxconn, kernel.shm_rmid_forced and
// net.ipv4.ip_local_port_range.
func sysctlPod(name string, hostNetwork bool, sysctls ...string) string {
	var b strings.Builder
	for _, s := range sysctls {
		k, v, _ := strings.Cut(s, "=")
		fmt.Fprintf(&b, "    - {name: %s, value: %q}\n", k, v)
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  hostNetwork: %t
  terminationGracePeriodSeconds: 0
  securityContext:
    sysctls:
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "echo somaxconn=$(cat /proc/sys/net/core/somaxconn) shm=$(cat /proc/sys/kernel/shm_rmid_forced) ports=$(cat /proc/sys/net/ipv4/ip_local_port_range | tr '\t' ' '); sleep 3600"]
`, name, hostNetwork, b.String(), env.busybox)
}

// Sysctls as the kubelet admits them: the safe ones and those of
// --allowed-unsafe-sysctls reach the pod's namespaces (the container reads
// the values set); an unsafe one not allowed, or a network one in a
// host-network pod, refuses the pod with SysctlForbidden and the kubelet's
// message, and it gets no sandbox.
func TestAdmissionSysctls(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgentWith(t, rt, agentOptions{args: []string{"--allowed-unsafe-sysctls", "net.core.*"}})
		a.writeManifest("set.yaml", sysctlPod("set", false, "net.core.somaxconn=1000", "kernel.shm_rmid_forced=1", "net/ipv4/ip_local_port_range=20000 30000"))
		a.writeManifest("unsafe.yaml", sysctlPod("unsafe", false, "net.ipv4.ip_forward=1"))
		a.writeManifest("hostnet.yaml", sysctlPod("hostnet", true, "net.ipv4.ip_local_port_range=20000 30000"))
		p := a.waitRunning("set", 60*time.Second)
		a.waitLog(p, "main", 0, "somaxconn=1000 shm=1 ports=20000 30000")
		a.waitRefused("unsafe", "SysctlForbidden", `forbidden sysctl: "net.ipv4.ip_forward" not allowlisted`)
		a.waitRefused("hostnet", "SysctlForbidden", `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`)
		a.noSandbox("unsafe")
		a.noSandbox("hostnet")
	})
}

// securityPod is the static pod name with the given pod securityContext
// (YAML lines at its indentation) and annotations (one YAML line each).
func securityPod(name string, annotations []string, securityContext ...string) string {
	meta := ""
	if len(annotations) > 0 {
		meta = "  annotations:\n    " + strings.Join(annotations, "\n    ") + "\n"
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
%sspec:
  terminationGracePeriodSeconds: 0
  securityContext:
    %s
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", "id; sleep 3600"]
`, name, meta, strings.Join(securityContext, "\n    "), env.busybox)
}

// AppArmor and supplementalGroupsPolicy as the node can honour them: on a
// host without AppArmor (this one), a pod asking for a profile by field or
// by the deprecated annotation is refused with reason AppArmor, one asking
// for Unconfined runs; supplementalGroupsPolicy Strict runs where the
// runtime reports the feature (containerd 2.x), with the container's user
// reported in its status as the runtime gives it, and is refused with
// SupplementalGroupsPolicyNotSupported where it does not (containerd 1.6).
func TestAdmissionAppArmorAndSupplementalGroupsPolicy(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := rt.Runtime().Status(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		strictOK := st.GetFeatures().GetSupplementalGroupsPolicy()
		appArmorErr := apparmor.HostSupport()

		a := startAgent(t, rt)
		a.writeManifest("field.yaml", securityPod("field", nil, "appArmorProfile: {type: RuntimeDefault}"))
		a.writeManifest("annotation.yaml", securityPod("annotation", []string{"container.apparmor.security.beta.kubernetes.io/main: localhost/k8s-apparmor-example"}, "runAsUser: 0"))
		a.writeManifest("unconfined.yaml", securityPod("unconfined", nil, "appArmorProfile: {type: Unconfined}"))
		a.writeManifest("strict.yaml", securityPod("strict", nil, "runAsUser: 1000", "runAsGroup: 3000", "supplementalGroups: [4000]", "supplementalGroupsPolicy: Strict"))
		// Pod-level resources are not built: the pod is refused, not run
		// without its limit.
		a.writeManifest("podlevel.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: podlevel}
spec:
  hostNetwork: true
  resources: {limits: {memory: 64Mi}}
  containers:
  - {name: main, image: %s, command: ["sleep", "3600"]}
`, env.busybox))

		a.waitRunning("unconfined", 60*time.Second)
		a.waitRefused("podlevel", "PodLevelResourcesNotSupported",
			"spec.resources: pod-level resources are not supported by this node (minikubelet sizes a pod's cgroup from its containers' resources); set the requests and limits on the containers instead")
		a.noSandbox("podlevel")
		if appArmorErr != nil {
			a.waitRefused("field", "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host")
			a.waitRefused("annotation", "AppArmor", "Cannot enforce AppArmor: AppArmor is not enabled on the host")
			a.noSandbox("field")
		} else {
			t.Logf("this host enforces AppArmor: the pods asking for it must run")
			a.waitRunning("field", 60*time.Second)
		}
		if !strictOK {
			a.waitRefused("strict", "SupplementalGroupsPolicyNotSupported", "SupplementalGroupsPolicy=Strict is not supported in this node")
			a.noSandbox("strict")
			return
		}
		p := a.waitRunning("strict", 60*time.Second)
		a.waitLog(p, "main", 0, "uid=1000 gid=3000")
		u := containerStatus(p, "main").User
		if u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 3000 || !slices.Contains(u.Linux.SupplementalGroups, 4000) {
			t.Errorf("containerStatuses[].user = %+v, want uid 1000, gid 3000, groups with 4000", u)
		}
	})
}
