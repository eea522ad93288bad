// Package ctrdtest runs a private containerd for integration tests and tears
// it down completely.
//
// Data enters through bed.json (written by test/scripts/prepare.sh and read
// with LoadBed), which names the containerd builds, runc, the CNI plugin
// directory and the local image tarballs. Start creates one instance
// directory under Options.BaseDir holding everything the daemon owns:
//
//	<base>/<runtime>-NNNN/
//	  state.json        instance record (dir, PID, runc, slot) read by Cleanup
//	  config.toml       containerd config (version 2 for 1.6, version 3 for 2.x)
//	  containerd.log    daemon stdout and stderr
//	  containerd.sock   gRPC (CRI) socket; containerd.sock.ttrpc next to it
//	  root/ state/      containerd root and state; pod netns mounts live in state/
//	  runc/             runc state root (runc --root runc/k8s.io)
//	  cni/net.d/        the instance's conflist; cni/ipam/ its host-local dataDir
//
// Each instance reserves a network slot N (1..254) under Options.SlotDir; N
// names what cannot live in the directory, so concurrent instances (in one
// process or many) never share it: the bridge "mkbedN" with subnet
// 10.88.N.0/24, the CNI network "minikubelet-bed-N" and the cgroupfs parent
// "/minikubelet-bed-N" offered to tests (CgroupParent). Outside the
// directory, containerd and libcni also write shim sockets in
// /run/containerd/s and cached CNI results in /var/lib/cni/results; the
// teardown removes the instance's entries there but leaves those shared
// directories.
//
// Data leaves through CRI: Endpoint names the socket, Runtime and Images are
// cri-client connections. StopDaemon and StartDaemon (or Restart) restart
// the daemon alone on the same dirs and socket, its shims and containers
// running on, for tests of what a client does across a runtime restart. Stop removes every pod through CRI, then runs the
// same teardown as Cleanup, which needs nothing but state.json and so also
// works from another process (cmd/bedclean) after the test process died:
// stop containerd, SIGKILL its shims (only those naming its socket), "runc
// delete --force" what is left in its runc root, unmount everything under
// the directory deepest first, delete the bridge and its ports, remove the
// cgroups, then the directory, then the slot reservation.
package ctrdtest
