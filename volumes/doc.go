// Package volumes owns pod volumes on the node: it sets them up under
// <root-dir>/pods/<uid>/volumes before a pod's containers start, gives each
// container its CRI mounts, and tears everything under <root-dir>/pods/<uid>
// down after the pod's last container and sandbox are gone.
//
// Data enters as a pod's spec.volumes and its containers' volumeMounts
// (Manager.SetUpPod, PodVolumes.Mounts), plus, for configMap, secret and
// serviceAccountToken content, the API objects an object source serves in
// node mode. It leaves as directories and files on the host and as
// k8s.io/cri-api Mounts that the pod worker puts in each ContainerConfig.
// The Manager keeps no state about a pod but what is on disk and whether
// it was set up, so an agent that restarts picks up what is there.
//
// One small plugin per volume type sets it up, in the kubelet's layout
// (<pod dir>/volumes/<plugin dir>/<volume name>):
//
//   - emptyDir (kubernetes.io~empty-dir): a directory, mode 0777; with
//     medium Memory a tmpfs mounted there, sized as the kubelet sizes it:
//     the smallest of sizeLimit, the pod's memory limit (when every
//     container declares one) and Config.NodeAllocatable's memory; unsized
//     (the kernel's default, half the RAM) when none is known. Medium
//     HugePages is refused.
//   - hostPath: containers mount the host path itself; the volume's type
//     is checked (DirectoryOrCreate and FileOrCreate create what is
//     missing, 0755 and 0644 under the umask, as the kubelet does) at every
//     sync, before any container starts.
//   - downwardAPI (kubernetes.io~downward-api): metadata.name, .namespace,
//     .uid, .labels, .annotations (key="value" lines sorted by key, values
//     quoted, no final newline, as the kubelet writes them), one label or
//     annotation, and container resources with a divisor (an unset limit
//     reads as the node's allocatable amount), resolved by
//     internal/downward, which resolves env fieldRefs and
//     resourceFieldRefs too.
//   - configMap (kubernetes.io~configmap), secret (kubernetes.io~secret) and
//     projected (kubernetes.io~projected: configMap, secret, downwardAPI and
//     serviceAccountToken sources): through Config.Objects; without it (a
//     standalone agent, static pods) they fail with an error saying they
//     need an apiserver. Static pods are refused such volumes earlier, at
//     manifest validation.
//   - image (volumes[].image): nothing on the host; a CRI Mount naming the
//     image, read-only, of a subPath or subPathExpr inside it
//     (image_sub_path), which the runtime mounts from the image's layers.
//     The pod worker pulls the image (its pullPolicy, the pod's
//     imagePullSecrets) and ResolveImageMounts puts the image it got into
//     the mount. Config.ImageVolumes says what the runtime can do: on one
//     that cannot mount images (containerd before 2.1) the volume fails to
//     set up, and the pod does not start; a subPath where the runtime
//     cannot honour it (containerd 2.1) fails that container's mount.
//
// downwardAPI, configMap, secret and projected volumes are written by an
// atomic writer in the kubelet's layout (a timestamped directory, a ..data
// symlink switched by rename, user-visible symlinks into ..data), are
// rewritten at a sync only when their content or modes changed, and are
// mounted read-only. downwardAPI, secret and projected volumes live on a
// tmpfs, configMap volumes on disk, as with the kubelet.
//
// mountPropagation HostToContainer and Bidirectional need the volume's host
// path on a shared (or, for HostToContainer, slave) mount, as with the
// kubelet: containerd refuses the container otherwise.
//
// Where it departs from the kubelet:
//   - fsGroup is applied as the kubelet applies it to downwardAPI,
//     configMap, secret and projected volumes (files handed to the group,
//     group read added, a token 0640) and to an emptyDir's directory
//     (group-writable, setgid), but as fsGroupChangePolicy OnRootMismatch
//     always: files already in an emptyDir (after an agent restart) are
//     not walked. A projected token is not handed to the containers'
//     common runAsUser, as the kubelet does. hostPath volumes are never
//     changed, as with the kubelet.
//   - No SELinux relabelling and no recursiveReadOnly IfPossible (treated
//     as not possible; Enabled is passed to the runtime).
//   - A disk emptyDir's sizeLimit is not enforced (the kubelet evicts the
//     pod); a tmpfs is not resized when its size would change.
//   - Errors are returned to the caller, which reports them in the
//     containers' waiting state; no FailedMount events.
//   - Only emptyDir, hostPath, downwardAPI, configMap, secret, projected
//     and image volumes; the others (persistentVolumeClaim, csi, nfs, ...)
//     are refused with an error naming the type.
//   - Teardown never deletes through a mount: it reads /proc/self/mountinfo,
//     unmounts everything under the pod's directory deepest first (detaching
//     a busy mount as the last resort), reads it again, and only removes the
//     directory when nothing is mounted under it.
package volumes
