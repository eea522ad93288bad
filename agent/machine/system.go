package machine

import (
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/minikubelet/minikubelet/internal/version"
)

// SystemInfo describes the machine and the runtime (runtimeName and
// runtimeVersion as CRI Version reports them) as a Node's status does.
func SystemInfo(runtimeName, runtimeVersion string) v1.NodeSystemInfo {
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	return v1.NodeSystemInfo{
		MachineID:               readTrimmed("/etc/machine-id"),
		BootID:                  readTrimmed("/proc/sys/kernel/random/boot_id"),
		KernelVersion:           unix.ByteSliceToString(uts.Release[:]),
		OSImage:                 osImage(),
		ContainerRuntimeVersion: runtimeName + "://" + runtimeVersion,
		KubeletVersion:          version.KubeletVersion(),
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path) //nolint:gosec // G304: fixed system files
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME of /etc/os-release.
func osImage() string {
	for _, line := range strings.Split(readTrimmed("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}
