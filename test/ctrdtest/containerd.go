package ctrdtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
)

// Options configures Start.
type Options struct {
	// Runtime is the containerd build to run (one of Bed.Runtimes).
	Runtime Runtime
	// Bed supplies runc, the CNI plugin dir and the images to import.
	Bed *Bed
	// BaseDir holds the instance directory; it is created if missing.
	BaseDir string
	// SlotDir holds network slot reservations; DefaultSlotDir if empty.
	SlotDir string
	// StartTimeout bounds the daemon start, image import and image check;
	// DefaultStartTimeout if zero.
	StartTimeout time.Duration
	// CRITimeout is the per-call timeout of the CRI clients;
	// DefaultCRITimeout if zero.
	CRITimeout time.Duration
}

// Defaults for Options.
const (
	DefaultStartTimeout = 60 * time.Second
	DefaultCRITimeout   = 30 * time.Second
)

// maxSocketPath keeps "<dir>/containerd.sock.ttrpc" within sun_path.
const maxSocketPath = 100

// Timings records how long Start's phases took.
type Timings struct {
	// Ready is from launching containerd to CRI reporting RuntimeReady and
	// NetworkReady.
	Ready time.Duration
	// Import is importing every bed image with ctr and seeing each through
	// CRI ImageStatus.
	Import time.Duration
}

// Containerd is a running private containerd. Its methods are safe for
// concurrent use; Stop is idempotent.
type Containerd struct {
	inst    *instance
	rt      Runtime
	bed     *Bed
	timings Timings

	// mu guards exited and inst.PID, which StartDaemon replaces.
	mu sync.Mutex
	// exited is closed by the goroutine that waits for the daemon process,
	// which ends when the process exits (teardown guarantees it does).
	exited chan struct{}

	runtime internalapi.RuntimeService
	images  internalapi.ImageManagerService

	stopOnce sync.Once
	stopErr  error
}

// Start brings up a private containerd as described in the package doc,
// imports the bed's images into namespace k8s.io and checks that CRI sees
// them. On any error everything it created is torn down again. ctx bounds
// the whole start (as does Options.StartTimeout).
func Start(ctx context.Context, opts Options) (_ *Containerd, err error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	inst, err := newInstance(opts)
	if err != nil {
		return nil, err
	}
	c := &Containerd{inst: inst, rt: opts.Runtime, bed: opts.Bed}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop(ctx))
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := c.prepare(opts.SlotDir); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := c.launch(); err != nil {
		return nil, err
	}
	if err := c.waitReady(sctx, opts.CRITimeout); err != nil {
		return nil, err
	}
	t1 := time.Now()
	c.timings.Ready = t1.Sub(t0)
	if err := c.importImages(sctx); err != nil {
		return nil, err
	}
	c.timings.Import = time.Since(t1)
	return c, nil
}

// complete validates opts and fills in defaults.
func (o *Options) complete() error {
	if o.Bed == nil {
		return errors.New("ctrdtest: Options.Bed is nil")
	}
	if o.Runtime.Containerd == "" {
		return errors.New("ctrdtest: Options.Runtime is empty (pick one of Bed.Runtimes)")
	}
	if o.BaseDir == "" {
		return errors.New("ctrdtest: Options.BaseDir is empty")
	}
	if o.SlotDir == "" {
		o.SlotDir = DefaultSlotDir
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.CRITimeout == 0 {
		o.CRITimeout = DefaultCRITimeout
	}
	return nil
}

// newInstance creates the instance dir and its first state.json.
func newInstance(opts Options) (*instance, error) {
	base, err := filepath.Abs(opts.BaseDir)
	if err != nil {
		return nil, fmt.Errorf("base dir %q: %w", opts.BaseDir, err)
	}
	if strings.ContainsAny(base, "\"\\\n") {
		return nil, fmt.Errorf("base dir %q: quotes, backslashes and newlines are not supported", base)
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, fmt.Errorf("create base dir %q: %w", base, err)
	}
	dir, err := os.MkdirTemp(base, opts.Runtime.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("create instance dir under %q: %w", base, err)
	}
	inst := &instance{Dir: dir, Runtime: opts.Runtime.Name, Runc: opts.Bed.Runc}
	if n := len(inst.socket() + ".ttrpc"); n > maxSocketPath {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("instance dir %q: socket path is %d bytes, over %d; use a shorter base dir", dir, n, maxSocketPath)
	}
	if err := inst.save(); err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	return inst, nil
}

// prepare reserves the network slot and writes the configs.
func (c *Containerd) prepare(slotDir string) error {
	n, file, err := reserveSlot(slotDir, c.inst.Dir)
	if err != nil {
		return err
	}
	c.inst.Slot, c.inst.SlotFile = n, file
	if err := c.inst.save(); err != nil {
		return err
	}
	for _, d := range []string{c.inst.rootDir(), c.inst.stateDir(), c.inst.runcRoot(), c.inst.cniConfDir(), c.inst.ipamDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %q: %w", d, err)
		}
	}
	pause, err := c.bed.Image(RolePause)
	if err != nil {
		return err
	}
	p := configParams{
		Root: c.inst.rootDir(), State: c.inst.stateDir(),
		Socket: c.inst.socket(), TTRPCSocket: c.inst.socket() + ".ttrpc",
		PauseRef: pause.Ref, Runc: c.bed.Runc, RuncRoot: c.inst.runcRoot(),
		CNIBinDir: c.bed.CNIBinDir, CNIConfDir: c.inst.cniConfDir(),
	}
	if err := writeConfig(c.inst, c.rt.ConfigVersion, p); err != nil {
		return err
	}
	return writeCNIConfig(c.inst)
}

// daemonEnv is the environment of containerd and ctr: ours, with the
// runtime's bin dir (for its shim) and runc's dir first on PATH.
func (c *Containerd) daemonEnv() []string {
	env := []string{"PATH=" + c.rt.BinDir + ":" + filepath.Dir(c.bed.Runc) + ":" + os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "NOTIFY_SOCKET", "CONTAINERD_ADDRESS", "CONTAINERD_NAMESPACE":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// launch starts the daemon in its own process group (so a terminal's
// Ctrl-C reaches the test, which then tears down in order) and records
// its PID.
func (c *Containerd) launch() error {
	logf, err := os.OpenFile(c.inst.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open containerd log %q: %w", c.inst.logPath(), err)
	}
	defer func() { _ = logf.Close() }() // the child holds its own copy
	cmd := exec.Command(c.rt.Containerd, "--config", c.inst.configPath())
	cmd.Env = c.daemonEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = newProcessGroup()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %q: %w", c.rt.Containerd, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exited = exited
	c.inst.PID = cmd.Process.Pid
	return c.inst.save()
}

// exitedCh is closed once the current daemon process has exited; nil
// before the first launch.
func (c *Containerd) exitedCh() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exited
}

// Endpoint is the CRI endpoint, "unix://<dir>/containerd.sock".
func (c *Containerd) Endpoint() string { return "unix://" + c.inst.socket() }

// Socket is the path of containerd's gRPC socket (ctr --address).
func (c *Containerd) Socket() string { return c.inst.socket() }

// Name is the bed runtime name, e.g. "containerd-2.1".
func (c *Containerd) Name() string { return c.rt.Name }

// Dir is the instance directory; nothing of the instance lives elsewhere
// except what the package doc lists.
func (c *Containerd) Dir() string { return c.inst.Dir }

// LogPath is containerd's log file.
func (c *Containerd) LogPath() string { return c.inst.logPath() }

// PID is containerd's process ID (of the current process, after a
// StartDaemon).
func (c *Containerd) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inst.PID
}

// Bridge is the name of the instance's CNI bridge (created with its first
// CNI pod).
func (c *Containerd) Bridge() string { return c.inst.bridge() }

// Subnet is the instance's pod subnet, 10.88.N.0/24.
func (c *Containerd) Subnet() string { return c.inst.subnet() }

// Network is the instance's CNI network name.
func (c *Containerd) Network() string { return c.inst.network() }

// CgroupParent is a cgroupfs parent unique to the instance for tests to put
// their pods under; teardown removes it from every hierarchy.
func (c *Containerd) CgroupParent() string { return c.inst.cgroupParent() }

// Runtime is the CRI runtime client. It is closed by Stop.
func (c *Containerd) Runtime() internalapi.RuntimeService { return c.runtime }

// Images is the CRI image client. It is closed by Stop.
func (c *Containerd) Images() internalapi.ImageManagerService { return c.images }

// Timings reports how long Start's phases took.
func (c *Containerd) Timings() Timings { return c.timings }

// logTail returns the last lines of containerd's log for error messages.
func (c *Containerd) logTail() string {
	data, err := os.ReadFile(c.inst.logPath())
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
