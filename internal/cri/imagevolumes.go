package cri

import (
	"strconv"
	"strings"
)

// ImageVolumes reports what the runtime name at version (as CRI Version
// reports them) does with image volumes: whether it mounts an image named
// by a CRI Mount (containerd 2.1, CRI-O 1.31), and whether it honours the
// Mount's image_sub_path (containerd 2.2, CRI-O 1.33). CRI has no way to
// ask, and a runtime that predates the fields ignores them (containerd
// 1.6.20 sees a mount with an empty host path and fails CreateContainer
// with `failed to mkdir "": mkdir : no such file or directory`; 2.1.4,
// built on cri-api 0.32, mounts the whole image where a subPath was asked
// for), so the answer goes by the version. A runtime it
// does not know, or a version it cannot read, supports neither.
func ImageVolumes(name, version string) (mount, subPath bool) {
	major, minor, ok := majorMinor(version)
	if !ok {
		return false, false
	}
	atLeast := func(maj, min int) bool { return major > maj || (major == maj && minor >= min) }
	switch strings.ToLower(name) {
	case "containerd":
		return atLeast(2, 1), atLeast(2, 2)
	case "cri-o":
		return atLeast(1, 31), atLeast(1, 33)
	}
	return false, false
}

// majorMinor reads the major and minor numbers of a version such as
// "v2.1.4", "1.6.20~ds1" or "2.2.0-rc.1".
func majorMinor(version string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return 0, 0, false
	}
	end := 0
	for end < len(parts[1]) && parts[1][end] >= '0' && parts[1][end] <= '9' {
		end++
	}
	minor, err = strconv.Atoi(parts[1][:end])
	if err != nil {
		return 0, 0, false
	}
	return major, minor, true
}
