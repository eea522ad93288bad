package stats

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// netInterface is one interface's counters from /proc/<pid>/net/dev.
type netInterface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// ignoredInterface reports the interfaces cAdvisor leaves out of a
// network's figures: loopback, and the host ends of container links.
func ignoredInterface(name string) bool {
	return name == "lo" || strings.HasPrefix(name, "veth") || strings.HasPrefix(name, "docker")
}

// readNetDev parses a net/dev file of procfs, which describes the network
// namespace of the process it belongs to, leaving out ignoredInterface.
// Interfaces are sorted by name.
func readNetDev(path string) ([]netInterface, error) {
	f, err := os.Open(path) //nolint:gosec // G304: a procfs file of a pod's process
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []netInterface
	sc := bufio.NewScanner(f)
	for line := 0; sc.Scan(); line++ {
		if line < 2 {
			continue // two header lines
		}
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if ignoredInterface(name) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) < 16 {
			return nil, fmt.Errorf("%s: interface %s has %d fields, want 16", path, name, len(fields))
		}
		var v [16]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(fields[i], 10, 64); err != nil {
				return nil, fmt.Errorf("%s: interface %s: %w", path, name, err)
			}
		}
		// Receive: bytes packets errs drop fifo frame compressed multicast;
		// transmit: bytes packets errs drop fifo colls carrier compressed.
		out = append(out, netInterface{
			Name:    name,
			RxBytes: v[0], RxPackets: v[1], RxErrors: v[2], RxDropped: v[3],
			TxBytes: v[8], TxPackets: v[9], TxErrors: v[10], TxDropped: v[11],
		})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
