package e2e

import (
	"debug/elf"
	"strings"
	"testing"
)

// The agent's binary leaves out what it does not use and what, once
// linked, costs memory in every node for nothing: client-go's all-groups
// clientset and the API groups a node never reads (internal/kubeclient),
// gRPC's request tracing, whose html/template keeps every exported
// method of every type (the grpcnotrace build tag), and containerd's Go
// client, whose image import agent/imageimport does on containerd's gRPC
// API. Each is MiBs of resident binary pages; this catches an import that
// brings one back.
func TestBinaryLeavesOutUnusedPackages(t *testing.T) {
	if env.skip != "" {
		t.Skip(env.skip)
	}
	f, err := elf.Open(env.binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatalf("symbols of %s: %v", env.binary, err)
	}
	banned := []string{
		"k8s.io/client-go/kubernetes/scheme.",
		"k8s.io/client-go/informers.",
		"k8s.io/api/apps/",
		"k8s.io/api/batch/",
		"golang.org/x/net/trace.",
		"html/template.",
		"github.com/containerd/containerd/v2/",
	}
	found := map[string]string{}
	for _, s := range syms {
		for _, b := range banned {
			if strings.HasPrefix(s.Name, b) {
				found[b] = s.Name
			}
		}
	}
	for b, sym := range found {
		t.Errorf("%s links %s (e.g. %s)", env.binary, strings.TrimRight(b, "./"), sym)
	}
}
