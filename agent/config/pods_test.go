package config

import (
	"reflect"
	"strings"
	"testing"
)

// allowedUnsafeSysctls comes from the file or the flag (which wins), and a
// pattern that is not namespaced or not a sysctl stops the start with the
// kubelet's message, naming the field or the flag.
func TestAllowedUnsafeSysctls(t *testing.T) {
	c, _, err := loadWith(t, header+"allowedUnsafeSysctls: [\"net.core.somaxconn\", \"kernel.msg*\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"net.core.somaxconn", "kernel.msg*"}; !reflect.DeepEqual(c.AllowedUnsafeSysctls, want) {
		t.Errorf("from the file: %v, want %v", c.AllowedUnsafeSysctls, want)
	}
	if kc := c.KubeletConfiguration(); !reflect.DeepEqual(kc.AllowedUnsafeSysctls, c.AllowedUnsafeSysctls) {
		t.Errorf("configz: %v", kc.AllowedUnsafeSysctls)
	}
	c, _, err = loadWith(t, header+"allowedUnsafeSysctls: [\"net.core.somaxconn\"]\n", "--allowed-unsafe-sysctls", "fs.mqueue.*, net.ipv4.route.min_pmtu")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fs.mqueue.*", "net.ipv4.route.min_pmtu"}; !reflect.DeepEqual(c.AllowedUnsafeSysctls, want) {
		t.Errorf("flag over the file: %v, want %v", c.AllowedUnsafeSysctls, want)
	}

	_, _, err = loadWith(t, header+"allowedUnsafeSysctls: [\"vm.swappiness\"]\n")
	if want := `allowedUnsafeSysctls: the sysctls "vm.swappiness" are not known to be namespaced`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err %v, want it to say %s", err, want)
	}
	for _, bad := range []string{"kernel.*", "Net.Core", "net..x"} {
		c := Default()
		c.AllowedUnsafeSysctls = []string{bad}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--allowed-unsafe-sysctls") {
			t.Errorf("Validate with %q: %v, want an error naming --allowed-unsafe-sysctls", bad, err)
		}
	}
}
