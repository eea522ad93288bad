package e2e

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// A pod's env resourceFieldRefs (with and without limits, with divisors,
// of the container itself and of another) and a downwardAPI volume hold
// what the kubelet would put there; an unset limit reads as the node's
// allocatable (cpus; memory less the 100Mi eviction threshold; the root
// dir's filesystem less 10%). Both containers read their values from
// inside.
func TestDownwardAPIResourceFieldRef(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a := startAgent(t, rt)
		a.writeManifest("resources.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: resources
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: cpu, resourceFieldRef: {containerName: limited, resource: limits.cpu, divisor: 1m}}
      - {path: mem, resourceFieldRef: {containerName: unlimited, resource: limits.memory, divisor: 1Mi}}
  containers:
  - name: limited
    image: %[1]s
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 250m, memory: 64Mi}
    env:
    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: CPU_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}
    - {name: CPU_REQ_M, valueFrom: {resourceFieldRef: {resource: requests.cpu, divisor: 1m}}}
    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: MEM_REQ_G, valueFrom: {resourceFieldRef: {resource: requests.memory, divisor: 1G}}}
    - {name: OTHER_CPU_M, valueFrom: {resourceFieldRef: {containerName: unlimited, resource: limits.cpu, divisor: 1m}}}
    command: ["sh", "-c", "echo \"env cpu=$CPU cpum=$CPU_M cpureqm=$CPU_REQ_M mem=$MEM memmi=$MEM_MI memreqg=$MEM_REQ_G othercpum=$OTHER_CPU_M\"; exec sleep 3600"]
  - name: unlimited
    image: %[1]s
    env:
    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: MEM_REQ, valueFrom: {resourceFieldRef: {resource: requests.memory}}}
    - {name: EPH_GI, valueFrom: {resourceFieldRef: {resource: limits.ephemeral-storage, divisor: 1Gi}}}
    command: ["sh", "-c", "echo \"env cpu=$CPU memmi=$MEM_MI memreq=$MEM_REQ ephgi=$EPH_GI\"; echo \"files cpu=$(cat /podinfo/cpu) mem=$(cat /podinfo/mem)\"; exec sleep 3600"]
    volumeMounts:
    - {name: podinfo, mountPath: /podinfo}
`, env.busybox))
		pod := a.waitRunning("resources", 60*time.Second)

		cpus := runtime.NumCPU()
		memMi := ceilDiv(allocatableMemory(t), 1<<20)
		ephGi := ceilDiv(allocatableEphemeral(t, a.dir), 1<<30)
		for _, c := range []struct{ container, prefix, want string }{
			{"limited", "env ", fmt.Sprintf("env cpu=1 cpum=250 cpureqm=100 mem=%d memmi=64 memreqg=1 othercpum=%d", 64<<20, cpus*1000)},
			{"unlimited", "env ", fmt.Sprintf("env cpu=%d memmi=%d memreq=0 ephgi=%d", cpus, memMi, ephGi)},
			{"unlimited", "files ", fmt.Sprintf("files cpu=250 mem=%d", memMi)},
		} {
			if got := settingsWaitLog(t, a, pod, c.container, c.prefix); !strings.HasSuffix(got, c.want) {
				t.Errorf("%s printed %q, want %q", c.container, got, c.want)
			}
		}
	})
}

// allocatableMemory is the node's allocatable memory as the agent computes
// it: all of it less the kubelet's 100Mi memory.available threshold.
func allocatableMemory(t *testing.T) int64 {
	t.Helper()
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	return int64(si.Totalram)*int64(si.Unit) - 100<<20
}

// allocatableEphemeral is the allocatable ephemeral storage of an agent
// whose root dir is under dir: its filesystem less the kubelet's 10%
// nodefs.available threshold.
func allocatableEphemeral(t *testing.T, dir string) int64 {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	capacity := int64(fs.Blocks) * fs.Bsize
	return capacity - capacity*10/100
}

func ceilDiv(a, b int64) int64 {
	return (a + b - 1) / b
}
