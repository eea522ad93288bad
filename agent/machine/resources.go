package machine

import (
	"errors"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The kubelet's default hard eviction thresholds that its allocatable
// subtracts from the node's capacity, and that ReadPressure judges by.
const (
	evictionMemoryAvailable = 100 << 20 // memory.available<100Mi
	evictionNodefsPercent   = 10        // nodefs.available<10%
)

// Allocatable is what the node offers pods, as the kubelet computes it
// without --kube-reserved or --system-reserved: the node's cpus, its memory
// less the default memory eviction threshold, and the capacity of
// rootDir's filesystem less the default nodefs threshold. A resource that
// cannot be read is left out. It reads the node once; downwardAPI volumes
// report it for limits a container does not set, and memory-backed volumes
// are sized by it.
func Allocatable(rootDir string) v1.ResourceList {
	out := v1.ResourceList{
		v1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil {
		if mem := int64(si.Totalram)*int64(si.Unit) - evictionMemoryAvailable; mem > 0 {
			out[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
		}
	}
	var fs unix.Statfs_t
	if err := statfsExisting(rootDir, &fs); err == nil {
		capacity := int64(fs.Blocks) * fs.Bsize
		out[v1.ResourceEphemeralStorage] = *resource.NewQuantity(capacity-capacity*evictionNodefsPercent/100, resource.BinarySI)
	}
	return out
}

// Capacity is the machine as the Node reports it: its cpus, memory
// (bytes, left out when 0) and the capacity of rootDir's filesystem.
func Capacity(rootDir string, memory int64) v1.ResourceList {
	out := v1.ResourceList{
		v1.ResourceCPU: *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
	}
	if memory > 0 {
		out[v1.ResourceMemory] = *resource.NewQuantity(memory, resource.BinarySI)
	}
	var fs unix.Statfs_t
	if err := statfsExisting(rootDir, &fs); err == nil {
		out[v1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	return out
}

// PIDCapacity is the node's task limit as the kubelet counts it: the
// smaller of kernel.pid_max and kernel.threads-max; 0 when neither can be
// read.
func PIDCapacity() int64 {
	var limit int64
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if v, err := strconv.ParseInt(readTrimmed(f), 10, 64); err == nil && (limit == 0 || v < limit) {
			limit = v
		}
	}
	return limit
}

// MemoryCapacity is the node's memory in bytes (MemTotal of
// /proc/meminfo); 0 when it cannot be read.
func MemoryCapacity() int64 {
	total, _ := meminfo("MemTotal:")
	return total
}

// meminfo reads the field key (with its colon) of /proc/meminfo, in bytes.
func meminfo(key string) (int64, bool) {
	for _, line := range strings.Split(readTrimmed("/proc/meminfo"), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// statfsExisting statfs-es dir or, when it does not exist yet, its
// nearest existing parent: the filesystem it will be on.
func statfsExisting(dir string, fs *unix.Statfs_t) error {
	for {
		err := unix.Statfs(dir, fs)
		parent := filepath.Dir(dir)
		if !errors.Is(err, unix.ENOENT) || parent == dir {
			return err
		}
		dir = parent
	}
}
