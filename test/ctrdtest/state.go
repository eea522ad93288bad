package ctrdtest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// stateFile is the name of the instance record inside an instance dir.
const stateFile = "state.json"

// criNamespace is the containerd namespace CRI uses.
const criNamespace = "k8s.io"

// instance is the record of one instance, written to <dir>/state.json
// before the daemon starts and updated with its PID once it runs. Cleanup
// needs nothing else to tear the instance down.
type instance struct {
	// Dir is the instance directory; Cleanup refuses a record whose Dir is
	// not the directory it was found in.
	Dir string `json:"dir"`
	// Runtime is the bed runtime name.
	Runtime string `json:"runtime"`
	// PID is containerd's PID, 0 before it started.
	PID int `json:"pid"`
	// Runc is the runc binary, used to force-delete leftover containers.
	Runc string `json:"runc"`
	// Slot is the reserved network slot N (bridge mkbedN, 10.88.N.0/24).
	Slot int `json:"slot"`
	// SlotFile is the reservation file for Slot ("" if none reserved).
	SlotFile string `json:"slotFile"`
}

// Derived names and paths of an instance.

func (s *instance) socket() string     { return filepath.Join(s.Dir, "containerd.sock") }
func (s *instance) configPath() string { return filepath.Join(s.Dir, "config.toml") }
func (s *instance) logPath() string    { return filepath.Join(s.Dir, "containerd.log") }
func (s *instance) rootDir() string    { return filepath.Join(s.Dir, "root") }
func (s *instance) stateDir() string   { return filepath.Join(s.Dir, "state") }
func (s *instance) runcRoot() string   { return filepath.Join(s.Dir, "runc") }
func (s *instance) cniConfDir() string { return filepath.Join(s.Dir, "cni", "net.d") }
func (s *instance) ipamDir() string    { return filepath.Join(s.Dir, "cni", "ipam") }
func (s *instance) bridge() string     { return "mkbed" + strconv.Itoa(s.Slot) }
func (s *instance) network() string    { return "minikubelet-bed-" + strconv.Itoa(s.Slot) }
func (s *instance) subnet() string     { return fmt.Sprintf("10.88.%d.0/24", s.Slot) }

// cgroupParent is the cgroupfs parent tests may give their pods; teardown
// removes it from every cgroup hierarchy.
func (s *instance) cgroupParent() string { return "/minikubelet-bed-" + strconv.Itoa(s.Slot) }

// save writes the record atomically.
func (s *instance) save() error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal %s: %w", stateFile, err)
	}
	path := filepath.Join(s.Dir, stateFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %q: %w", tmp, err)
	}
	return nil
}

// loadInstance reads <dir>/state.json and checks it belongs to dir.
func loadInstance(dir string) (*instance, error) {
	path := filepath.Join(dir, stateFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read instance record %q: %w", path, err)
	}
	var s instance
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse instance record %q: %w", path, err)
	}
	if filepath.Clean(s.Dir) != filepath.Clean(dir) {
		return nil, fmt.Errorf("instance record %q names dir %q, not its own dir", path, s.Dir)
	}
	return &s, nil
}
