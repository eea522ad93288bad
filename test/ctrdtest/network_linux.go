package ctrdtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// deleteNetwork deletes the links still enslaved to the instance's bridge,
// the bridge itself, and libcni's cached results for the instance's network.
func deleteNetwork(s *instance) error {
	if s.Slot == 0 {
		return nil
	}
	var errs []error
	ports, _ := os.ReadDir(filepath.Join("/sys/class/net", s.bridge(), "brif"))
	for _, p := range ports {
		errs = append(errs, deleteLink(p.Name()))
	}
	errs = append(errs, deleteLink(s.bridge()), removeCNIResults(s.network(), "*"))
	return errors.Join(errs...)
}

// deleteLink deletes a network link by name; a missing link is not an error.
func deleteLink(name string) error {
	if _, err := os.Lstat(filepath.Join("/sys/class/net", name)); err != nil {
		return ignoreNotExist(err)
	}
	ip, err := ipCommand()
	if err != nil {
		return err
	}
	out, err := exec.Command(ip, "link", "delete", "dev", name).CombinedOutput()
	if err == nil {
		return nil
	}
	if _, statErr := os.Lstat(filepath.Join("/sys/class/net", name)); errors.Is(statErr, os.ErrNotExist) {
		return nil // gone, possibly with its peer's namespace
	}
	return fmt.Errorf("delete link %q: %w: %s", name, err, strings.TrimSpace(string(out)))
}

// ipCommand finds iproute2's ip.
func ipCommand() (string, error) {
	if p, err := exec.LookPath("ip"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("iproute2 ip command not found (apt-get install iproute2)")
}

// removeCNIResults removes libcni's cached ADD results, named
// "<network>-<containerID>-<ifname>", for the given network and container
// ID patterns ("*" for any). A crash leaves them behind: the instance's own
// network and containerd's "cni-loopback" network for every sandbox.
func removeCNIResults(network, id string) error {
	pattern := filepath.Join(cniResultsDir, network+"-"+id+"-*")
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("list CNI results %q: %w", pattern, err)
	}
	var errs []error
	for _, m := range matches {
		errs = append(errs, ignoreNotExist(os.Remove(m)))
	}
	return errors.Join(errs...)
}
