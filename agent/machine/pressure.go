package machine

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Pressure says which of the node's resources run short.
type Pressure struct {
	Memory, Disk, PID bool
}

// ReadPressure judges the node's resources by the kubelet's default hard
// eviction thresholds: memory.available<100Mi, nodefs.available<10% (of
// rootDir's filesystem); and pids: fewer than 10% of pid_max free.
func ReadPressure(rootDir string) Pressure {
	var p Pressure
	if avail, ok := meminfo("MemAvailable:"); ok {
		p.Memory = avail < evictionMemoryAvailable
	}
	var fs unix.Statfs_t
	if err := statfsExisting(rootDir, &fs); err == nil && fs.Blocks > 0 {
		p.Disk = fs.Bavail*100 < fs.Blocks*evictionNodefsPercent
	}
	if pidMax, err := strconv.Atoi(readTrimmed("/proc/sys/kernel/pid_max")); err == nil && pidMax > 0 {
		if entries, err := os.ReadDir("/proc"); err == nil {
			var n int
			for _, e := range entries {
				if _, err := strconv.Atoi(e.Name()); err == nil {
					n++
				}
			}
			p.PID = (pidMax-n)*10 < pidMax
		}
	}
	return p
}
