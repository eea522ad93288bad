// Package fakecri is an in-memory CRI runtime for hollow nodes: the
// RuntimeService and ImageService of k8s.io/cri-api over gRPC, answered by
// cri-api's FakeRuntimeService and FakeImageService (the fakes kubemark's
// hollow kubelet runs against, through k8s.io/cri-client/pkg/fake), with
// what those fakes leave out and a node agent calls:
//
//   - each sandbox on the pod network gets an address of its own from
//     Config.PodCIDR (the fake gives every sandbox 192.168.192.168), released
//     when the sandbox is removed; a host-network sandbox gets none;
//   - GetContainerEvents streams the events containerd 2.x sends: created,
//     started, stopped and deleted, for sandboxes and containers, each with
//     the sandbox's status and the statuses of its containers, so that an
//     agent runs its evented PLEG;
//   - stats: ContainerStats, PodSandboxStats and their List forms answer for
//     every container and sandbox with zero usage (nothing runs) at the
//     time of the call; ImageFsInfo reports Config.StateDir's filesystem;
//   - Status reports the runtime and the network ready and the default
//     runtime handler; RuntimeConfig the cgroupfs driver;
//   - StartContainer creates the container's log file, as containerd does,
//     and ContainerStatus reports its path;
//   - stopping a sandbox stops its containers and removing it removes them,
//     as CRI requires; a verb on an object that does not exist answers
//     NotFound.
//
// Nothing runs: no process, no mount, no cgroup, no network namespace. The
// fakes record every call they get in a slice; the server empties it after
// each call, so that memory stays flat however long a node runs. Exec,
// Attach, PortForward, checkpoints and the Stream* list verbs answer
// Unimplemented (cri-client falls back to the List verbs).
//
// Data enters as CRI calls on the socket main listens on; it leaves as
// their answers and as events to every GetContainerEvents subscriber.
package fakecri
