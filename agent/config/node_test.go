package config

import (
	"flag"
	"io"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestNodeFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantErr    bool
		wantLabels map[string]string
		wantTaints []v1.Taint
	}{
		{name: "defaults"},
		{
			name:       "labels and taints",
			args:       []string{"--node-labels", "a=b,example.com/role=edge", "--register-with-taints", "k=v:NoSchedule,only-key:NoExecute"},
			wantLabels: map[string]string{"a": "b", "example.com/role": "edge"},
			wantTaints: []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}, {Key: "only-key", Effect: v1.TaintEffectNoExecute}},
		},
		{name: "label without value", args: []string{"--node-labels", "a"}, wantErr: true},
		{name: "taint without effect", args: []string{"--register-with-taints", "k=v"}, wantErr: true},
		{name: "taint with a bad effect", args: []string{"--register-with-taints", "k=v:Sometimes"}, wantErr: true},
		{name: "max-pods zero", args: []string{"--max-pods", "0"}, wantErr: true},
		{name: "bootstrap and rotation", args: []string{"--kubeconfig", "/k", "--bootstrap-kubeconfig", "/b", "--rotate-certificates"}},
		{name: "bootstrap without kubeconfig", args: []string{"--bootstrap-kubeconfig", "/b"}, wantErr: true},
		// As with the kubelet (kubeadm's config sets it), rotation standalone
		// is allowed and does nothing.
		{name: "rotation standalone", args: []string{"--rotate-certificates"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			cfg.AddFlags(fs)
			err := fs.Parse(tt.args)
			if err == nil {
				err = cfg.Validate()
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if cfg.MaxPods != 110 && len(tt.args) == 0 {
				t.Errorf("max-pods default = %d, want 110", cfg.MaxPods)
			}
			if !reflect.DeepEqual(cfg.NodeLabels, tt.wantLabels) && (len(cfg.NodeLabels) > 0 || len(tt.wantLabels) > 0) {
				t.Errorf("labels = %v, want %v", cfg.NodeLabels, tt.wantLabels)
			}
			if boot := slices.Contains(tt.args, "--bootstrap-kubeconfig"); boot != (cfg.BootstrapKubeconfig == "/b") || slices.Contains(tt.args, "--rotate-certificates") != cfg.RotateCertificates {
				t.Errorf("bootstrap kubeconfig %q, rotate %v", cfg.BootstrapKubeconfig, cfg.RotateCertificates)
			}
			if !reflect.DeepEqual(cfg.RegisterWithTaints, tt.wantTaints) {
				t.Errorf("taints = %v, want %v", cfg.RegisterWithTaints, tt.wantTaints)
			}
		})
	}
}
