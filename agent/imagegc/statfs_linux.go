package imagegc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// statfs returns the capacity and available bytes of the filesystem
// holding path, as cAdvisor reports them to the kubelet: blocks and
// blocks available to unprivileged users, times the block size.
func statfs(path string) (FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	return FsStats{Capacity: st.Blocks * bsize, Available: st.Bavail * bsize}, nil
}
