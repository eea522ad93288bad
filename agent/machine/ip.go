package machine

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
)

// HostIP returns the node's IP: override when set, else the first global
// unicast IPv4 address of the interface of the default route, else of any
// interface, else 127.0.0.1. It reads the routing table and sends nothing.
func HostIP(override string) (string, error) {
	if override != "" {
		ip := net.ParseIP(override)
		if ip == nil {
			return "", fmt.Errorf("--node-ip: %q is not an IP address", override)
		}
		return ip.String(), nil
	}
	if dev := defaultRouteInterface("/proc/net/route"); dev != "" {
		if ifc, err := net.InterfaceByName(dev); err == nil {
			if ip := firstIPv4(ifc.Addrs()); ip != "" {
				return ip, nil
			}
		}
	}
	if ip := firstIPv4(net.InterfaceAddrs()); ip != "" {
		return ip, nil
	}
	return "127.0.0.1", nil
}

// defaultRouteInterface returns the interface of the IPv4 default route in
// a /proc/net/route table, or "".
func defaultRouteInterface(path string) string {
	f, err := os.Open(path) //nolint:gosec // G304: the path is a fixed procfs file
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Iface Destination Gateway Flags ...; the default route has
		// destination and mask 00000000.
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && fields[1] == "00000000" && fields[7] == "00000000" {
			return fields[0]
		}
	}
	return ""
}

func firstIPv4(addrs []net.Addr, err error) string {
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
