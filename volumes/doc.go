// Package volumes will own pod volumes: one small plugin per volume type
// (emptyDir, hostPath, downwardAPI, and for apiserver pods configMap, secret
// and projected) behind one interface, set up under
// <root-dir>/pods/<uid>/volumes before a pod's sandbox starts and torn down
// after its last container is gone.
//
// Nothing is implemented yet: the agent runs pods without volumes, and a
// container's volumeMounts are not passed to the runtime. Data will enter as
// a pod's spec.volumes and leave as CRI mounts for its containers.
package volumes
