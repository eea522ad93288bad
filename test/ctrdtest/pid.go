package ctrdtest

import (
	"context"
	"encoding/json"
	"fmt"
)

// ContainerPID reads a container's process ID from the runtime's verbose
// status, for tests that kill a container's process from outside.
func (c *Containerd) ContainerPID(ctx context.Context, id string) (int, error) {
	resp, err := c.Runtime().ContainerStatus(ctx, id, true)
	if err != nil {
		return 0, err
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		return 0, fmt.Errorf("verbose status of %s: %w", id, err)
	}
	if info.Pid == 0 {
		return 0, fmt.Errorf("no pid in the verbose status of %s", id)
	}
	return info.Pid, nil
}
