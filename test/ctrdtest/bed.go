package ctrdtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Bed describes the test bed prepared by test/scripts/prepare.sh; it is the
// Go form of $MINIKUBELET_CACHE/bed.json and must be kept in sync with the
// write_bed function of that script.
type Bed struct {
	// Runtimes lists the containerd builds that can be started.
	Runtimes []Runtime `json:"runtimes"`
	// Runc is the runc binary every runtime is configured with.
	Runc string `json:"runc"`
	// CNIBinDir holds the bridge, host-local and loopback CNI plugins.
	CNIBinDir string `json:"cniBinDir"`
	// Images are OCI layout tarballs imported into every instance.
	Images []Image `json:"images"`
	// KubeAPIServer, Kubectl and Etcd are the node-mode tests' apiserver,
	// kubectl and etcd (test/apitest); empty in a bed prepared before
	// they were added.
	KubeAPIServer string `json:"kubeAPIServer,omitempty"`
	Kubectl       string `json:"kubectl,omitempty"`
	Etcd          string `json:"etcd,omitempty"`
}

// Runtime is one containerd build.
type Runtime struct {
	// Name identifies the build, e.g. "containerd-1.6" or "containerd-2.1".
	Name string `json:"name"`
	// Containerd is the daemon binary.
	Containerd string `json:"containerd"`
	// Ctr is the ctr binary of the same build, used for image import.
	Ctr string `json:"ctr"`
	// BinDir is put first on the daemon's PATH so it finds its own shim.
	BinDir string `json:"binDir"`
	// ConfigVersion is the config schema the build reads: 2 (1.6) or 3 (2.x).
	ConfigVersion int `json:"configVersion"`
}

// Image is a local image tarball and the reference it is imported as.
type Image struct {
	// Ref is the full reference, e.g. localhost/minikubelet/pause:3.10.
	Ref string `json:"ref"`
	// Tar is an OCI image layout tarball.
	Tar string `json:"tar"`
	// Role is "pause" (the sandbox image), "busybox" or "probeserver".
	Role string `json:"role"`
}

// Image roles known to the bed.
const (
	RolePause   = "pause"
	RoleBusybox = "busybox"
	// RoleProbe is test/images/probeserver: HTTP, TCP, gRPC and exec
	// checks whose answers tests flip.
	RoleProbe = "probeserver"
)

// LoadBed reads and validates bed.json at path.
func LoadBed(path string) (*Bed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bed %q: %w", path, err)
	}
	var b Bed
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // keeps Bed and prepare.sh's write_bed in sync
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("parse bed %q: %w", path, err)
	}
	if err := b.validate(); err != nil {
		return nil, fmt.Errorf("bed %q: %w (re-run test/scripts/prepare.sh)", path, err)
	}
	return &b, nil
}

// Runtime returns the runtime called name.
func (b *Bed) Runtime(name string) (Runtime, error) {
	for _, r := range b.Runtimes {
		if r.Name == name {
			return r, nil
		}
	}
	names := make([]string, 0, len(b.Runtimes))
	for _, r := range b.Runtimes {
		names = append(names, r.Name)
	}
	return Runtime{}, fmt.Errorf("runtime %q not in bed (have %q)", name, names)
}

// Image returns the image with the given role.
func (b *Bed) Image(role string) (Image, error) {
	for _, im := range b.Images {
		if im.Role == role {
			return im, nil
		}
	}
	return Image{}, fmt.Errorf("no image with role %q in bed", role)
}

func (b *Bed) validate() error {
	var errs []error
	if len(b.Runtimes) == 0 {
		errs = append(errs, errors.New("no runtimes"))
	}
	for _, r := range b.Runtimes {
		if r.Name == "" || r.Containerd == "" || r.Ctr == "" || r.BinDir == "" {
			errs = append(errs, fmt.Errorf("runtime %q: name, containerd, ctr and binDir are required", r.Name))
		}
		if r.ConfigVersion != 2 && r.ConfigVersion != 3 {
			errs = append(errs, fmt.Errorf("runtime %q: configVersion %d, want 2 or 3", r.Name, r.ConfigVersion))
		}
	}
	if b.Runc == "" || b.CNIBinDir == "" {
		errs = append(errs, errors.New("runc and cniBinDir are required"))
	}
	if _, err := b.Image(RolePause); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
