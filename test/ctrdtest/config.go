package ctrdtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"text/template"
)

// configParams fills the containerd config templates.
type configParams struct {
	Root, State, Socket, TTRPCSocket string
	PauseRef                         string
	Runc, RuncRoot                   string
	CNIBinDir, CNIConfDir            string
}

// disabledPlugins are snapshotters and helpers a private test daemon never
// uses; "opt" would otherwise create /opt/containerd.
var disabledPlugins = []string{
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.internal.v1.opt",
}

// configV2 is for containerd 1.6: the whole CRI config lives under
// plugins."io.containerd.grpc.v1.cri".
var configV2 = template.Must(template.New("v2").Funcs(tmplFuncs).Parse(`version = 2
root = {{q .Root}}
state = {{q .State}}
disabled_plugins = {{list .Disabled}}

[grpc]
  address = {{q .Socket}}

[ttrpc]
  address = {{q .TTRPCSocket}}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = {{q .PauseRef}}
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = {{q .Runc}}
        Root = {{q .RuncRoot}}
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = {{q .CNIBinDir}}
    conf_dir = {{q .CNIConfDir}}
    max_conf_num = 1
`))

// configV3 is for containerd 2.x: CRI is split into the runtime and images
// plugins; NRI is disabled because its socket is global.
var configV3 = template.Must(template.New("v3").Funcs(tmplFuncs).Parse(`version = 3
root = {{q .Root}}
state = {{q .State}}
disabled_plugins = {{list .Disabled}}

[grpc]
  address = {{q .Socket}}

[ttrpc]
  address = {{q .TTRPCSocket}}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = {{q .PauseRef}}

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      sandboxer = "podsandbox"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = {{q .Runc}}
        Root = {{q .RuncRoot}}
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [{{q .CNIBinDir}}]
    conf_dir = {{q .CNIConfDir}}
    max_conf_num = 1

[plugins."io.containerd.nri.v1.nri"]
  disable = true
`))

var tmplFuncs = template.FuncMap{
	"q": strconv.Quote, // a Go quoted string of printable ASCII is a TOML basic string
	"list": func(items []string) string {
		b, _ := json.Marshal(items) // a JSON string array is a TOML array
		return string(b)
	},
}

// writeConfig renders the config matching version to s.configPath().
func writeConfig(s *instance, version int, p configParams) error {
	tmpl := configV2
	if version == 3 {
		tmpl = configV3
	}
	data := struct {
		configParams
		Disabled []string
	}{p, disabledPlugins}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		return fmt.Errorf("render containerd config v%d: %w", version, err)
	}
	if err := os.WriteFile(s.configPath(), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write containerd config %q: %w", s.configPath(), err)
	}
	return nil
}

// cniConflist is the instance's network: a bridge with host-local IPAM.
// containerd itself sets up the pod's loopback with the loopback plugin
// from the same bin dir, so the list does not chain it.
func cniConflist(s *instance) map[string]any {
	return map[string]any{
		"cniVersion": "1.0.0",
		"name":       s.network(),
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      s.bridge(),
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": s.subnet()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": s.ipamDir(),
				},
			},
		},
	}
}

// writeCNIConfig writes the conflist into the instance's CNI conf dir.
func writeCNIConfig(s *instance) error {
	data, err := json.MarshalIndent(cniConflist(s), "", "  ")
	if err != nil {
		return fmt.Errorf("marshal CNI conflist: %w", err)
	}
	path := filepath.Join(s.cniConfDir(), "10-"+s.network()+".conflist")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write CNI conflist %q: %w", path, err)
	}
	return nil
}
