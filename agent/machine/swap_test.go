package machine

import "testing"

func TestSwapOn(t *testing.T) {
	header := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	if swapOn(header) || swapOn("") {
		t.Error("swap on with no device listed")
	}
	if !swapOn(header + "/dev/sda2                               partition\t8388604\t\t0\t\t-2\n") {
		t.Error("swap off with a device listed")
	}
}
