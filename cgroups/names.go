package cgroups

import (
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cgroup drivers (--cgroup-driver): who names and creates cgroups.
const (
	// DriverCgroupfs: cgroups are directories the agent and runc create
	// directly, named by path (/kubepods/burstable/pod<uid>).
	DriverCgroupfs = "cgroupfs"
	// DriverSystemd: cgroups are systemd slices and scopes, named
	// kubepods-burstable-pod<uid with _ for ->.slice.
	DriverSystemd = "systemd"
)

// The kubelet's names of the QoS cgroups and the pod cgroup prefix.
const (
	podsCgroup       = "kubepods"
	burstableCgroup  = "burstable"
	bestEffortCgroup = "besteffort"
	podPrefix        = "pod"
	systemdSuffix    = ".slice"
	// containerdScopePrefix is what containerd's CRI plugin puts before a
	// container's ID in its scope name with the systemd driver
	// (<slice>:cri-containerd:<id>).
	containerdScopePrefix = "cri-containerd-"
)

// name is a cgroup named by its components below a hierarchy's root,
// independent of the driver, as the kubelet's CgroupName:
// {"kubepods", "burstable", "pod<uid>"}. The empty name is the root.
type name []string

// child returns n with one more component; n is not changed.
func (n name) child(c string) name {
	out := make(name, len(n), len(n)+1)
	copy(out, n)
	return append(out, c)
}

// cgroupfs is n as a cgroupfs path: /kubepods/burstable/pod<uid>.
func (n name) cgroupfs() string {
	return "/" + path.Join(n...)
}

// systemd is n as the path of nested systemd slices, each named by the
// components up to it joined with "-", a "-" inside a component written
// "_": /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice.
func (n name) systemd() string {
	if len(n) == 0 {
		return "/"
	}
	var b strings.Builder
	unit := ""
	for i, c := range n {
		c = strings.ReplaceAll(c, "-", "_")
		if i == 0 {
			unit = c
		} else {
			unit += "-" + c
		}
		b.WriteString("/" + unit + systemdSuffix)
	}
	return b.String()
}

// path is n written for driver.
func (n name) path(driver string) string {
	if driver == DriverSystemd {
		return n.systemd()
	}
	return n.cgroupfs()
}

// parseRoot reads --cgroup-root for driver. For cgroupfs it is a path
// ("/", "/a/b"); for systemd "/" or a slice ("/system.slice/foo-bar.slice"
// and "foo-bar.slice" are both {"foo", "bar"}), as the kubelet parses it.
func parseRoot(root, driver string) (name, error) {
	if root == "" {
		return nil, fmt.Errorf("--cgroup-root: must not be empty (use \"/\")")
	}
	if driver != DriverSystemd {
		if !strings.HasPrefix(root, "/") {
			return nil, fmt.Errorf("--cgroup-root: %q must be an absolute cgroup path such as /kubelet", root)
		}
		var n name
		for _, c := range strings.Split(path.Clean(root), "/") {
			if c != "" {
				n = append(n, c)
			}
		}
		return n, nil
	}
	if path.Clean(root) == "/" {
		return nil, nil
	}
	base := path.Base(root)
	if !strings.HasSuffix(base, systemdSuffix) {
		return nil, fmt.Errorf("--cgroup-root: %q must be \"/\" or a systemd slice such as /kubelet.slice with --cgroup-driver=systemd", root)
	}
	var n name
	for _, c := range strings.Split(strings.TrimSuffix(base, systemdSuffix), "-") {
		n = append(n, strings.ReplaceAll(c, "_", "-"))
	}
	return n, nil
}

// qosName is the name of the QoS cgroup of class below root: root/kubepods
// for Guaranteed pods, root/kubepods/burstable and root/kubepods/besteffort.
func qosName(root name, class v1.PodQOSClass) name {
	n := root.child(podsCgroup)
	switch class {
	case v1.PodQOSBurstable:
		return n.child(burstableCgroup)
	case v1.PodQOSBestEffort:
		return n.child(bestEffortCgroup)
	}
	return n
}

// podName is the name of a pod's cgroup in its QoS cgroup.
func podName(root name, class v1.PodQOSClass, uid types.UID) name {
	return qosName(root, class).child(podPrefix + string(uid))
}

// uidFromPodDir reads the pod UID out of a pod cgroup's directory name:
// pod<uid> (cgroupfs) or <...>-pod<uid with _>.slice (systemd); ok is false
// for any other name.
func uidFromPodDir(dir, driver string) (types.UID, bool) {
	if driver == DriverSystemd {
		base, ok := strings.CutSuffix(dir, systemdSuffix)
		if !ok {
			return "", false
		}
		i := strings.LastIndex(base, "-"+podPrefix)
		if i < 0 {
			return "", false
		}
		uid := base[i+1+len(podPrefix):]
		if uid == "" {
			return "", false
		}
		return types.UID(strings.ReplaceAll(uid, "_", "-")), true
	}
	uid, ok := strings.CutPrefix(dir, podPrefix)
	if !ok || uid == "" {
		return "", false
	}
	return types.UID(uid), true
}

// containerPath is where containerd puts a container's cgroup below its
// sandbox's cgroup parent: <parent>/<id> with cgroupfs, and the scope
// <parent>/cri-containerd-<id>.scope with systemd.
func containerPath(parent, id, driver string) string {
	if driver == DriverSystemd {
		return path.Join(parent, containerdScopePrefix+id+".scope")
	}
	return path.Join(parent, id)
}
