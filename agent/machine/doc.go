// Package machine reads what the agent needs to know of the node it runs
// on: its IP address (HostIP), its CPUs, memory, root filesystem and task
// limit (Capacity, Allocatable, MemoryCapacity, PIDCapacity), whether
// those run short (ReadPressure), whether swap is on (SwapOn), and the
// kernel, OS and IDs a Node reports (SystemInfo).
//
// Data enters from the host: /proc, statfs, sysinfo, uname, the network
// interfaces and a few files of /etc. It leaves as plain values and
// v1.ResourceLists, read afresh at each call; nothing is cached and
// nothing is written. A value that cannot be read is left out or zero,
// never an error that stops the agent, except an --node-ip that is not an
// address.
package machine
