package machine

import (
	"strings"
)

// SwapOn reports whether swap is on: /proc/swaps lists a device below its
// header, as the kubelet checks for --fail-swap-on.
func SwapOn() bool {
	return swapOn(readTrimmed("/proc/swaps"))
}

func swapOn(procSwaps string) bool {
	return len(strings.Split(strings.TrimSpace(procSwaps), "\n")) > 1
}
