package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Bins is the Go form of $MINIKUBELET_CACHE/cluster.json, written by
// test/scripts/prepare-cluster.sh (its write_cluster function must be kept
// in sync): the binaries and images a cluster needs beyond bed.json's
// containerd, kube-apiserver, kubectl and etcd.
type Bins struct {
	// KubeVersion is the version every kube binary was built at, the
	// bed's kube-apiserver's included, e.g. v1.36.3.
	KubeVersion string `json:"kubeVersion"`
	// ControllerManager, Scheduler, Proxy and Kubelet are the components.
	ControllerManager string `json:"kubeControllerManager"`
	Scheduler         string `json:"kubeScheduler"`
	Proxy             string `json:"kubeProxy"`
	Kubelet           string `json:"kubelet"`
	// CoreDNS is the cluster's DNS server, run as a host process.
	CoreDNS        string `json:"coredns"`
	CoreDNSVersion string `json:"corednsVersion"`
	// MetricsServer is metrics-server (kubectl top's aggregated API), run
	// as a host process when Options.MetricsServer asks. Optional here: a
	// cluster that wants it checks it.
	MetricsServer        string `json:"metricsServer,omitempty"`
	MetricsServerVersion string `json:"metricsServerVersion,omitempty"`
	// E2ETest is Kubernetes' e2e suite (go test -c k8s.io/kubernetes/test/e2e),
	// Ginkgo the ginkgo CLI of the same build, which runs it in parallel.
	E2ETest string `json:"e2eTest"`
	Ginkgo  string `json:"ginkgo"`
	// Agnhost is the e2e suite's test server, also packed in Images.
	Agnhost string `json:"agnhost"`
	// Images are the stand-ins of the images the e2e suite pulls from
	// registry.k8s.io, under the exact references the suite uses.
	Images []ctrdtest.Image `json:"images"`
}

// LoadBins reads and validates cluster.json at path.
func LoadBins(path string) (*Bins, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w (run test/scripts/prepare-cluster.sh)", path, err)
	}
	var b Bins
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // keeps Bins and prepare-cluster.sh in sync
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("parse %q: %w", path, err)
	}
	if err := b.validate(); err != nil {
		return nil, fmt.Errorf("%q: %w (re-run test/scripts/prepare-cluster.sh)", path, err)
	}
	return &b, nil
}

func (b *Bins) validate() error {
	var errs []error
	for field, path := range map[string]string{
		"kubeControllerManager": b.ControllerManager, "kubeScheduler": b.Scheduler,
		"kubeProxy": b.Proxy, "kubelet": b.Kubelet, "coredns": b.CoreDNS,
		"e2eTest": b.E2ETest, "ginkgo": b.Ginkgo, "agnhost": b.Agnhost,
	} {
		if path == "" {
			errs = append(errs, fmt.Errorf("field %s is empty", field))
		} else if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("field %s: %w", field, err))
		}
	}
	if b.MetricsServer != "" {
		if _, err := os.Stat(b.MetricsServer); err != nil {
			errs = append(errs, fmt.Errorf("field metricsServer: %w", err))
		}
	}
	if b.KubeVersion == "" {
		errs = append(errs, errors.New("field kubeVersion is empty"))
	}
	for _, im := range b.Images {
		if im.Ref == "" || im.Tar == "" {
			errs = append(errs, fmt.Errorf("image %q: ref and tar are required", im.Ref))
		}
	}
	return errors.Join(errs...)
}

// checkBed checks that bed.json names what a cluster needs from it.
func checkBed(bed *ctrdtest.Bed) error {
	if bed.KubeAPIServer == "" || bed.Etcd == "" || bed.Kubectl == "" {
		return errors.New("bed.json names no kube-apiserver, etcd or kubectl; run test/scripts/prepare.sh again")
	}
	return nil
}

// Environment variables naming the bed's files, and their defaults.
const (
	// EnvBed is bed.json's path (default $MINIKUBELET_CACHE/bed.json).
	EnvBed = "MINIKUBELET_BED"
	// EnvBins is cluster.json's path (default
	// $MINIKUBELET_CACHE/cluster.json).
	EnvBins = "MINIKUBELET_CLUSTER"
	// EnvCache is the cache dir (default /var/cache/minikubelet).
	EnvCache = "MINIKUBELET_CACHE"
	// EnvClusterTests=on runs the tests that start a whole cluster; they
	// need the host's iptables and the host-wide cluster lock, so
	// test/scripts/test.sh runs them in a go test invocation of their own,
	// after the rest.
	EnvClusterTests = "MINIKUBELET_CLUSTER_TESTS"
)

// EnvKubemark names kubemark's binary (default
// $MINIKUBELET_CACHE/kubemark-<kubeVersion>/bin/kubemark, which
// test/scripts/prepare-cluster.sh scale builds; cluster.json does not name
// it).
const EnvKubemark = "MINIKUBELET_KUBEMARK"

// Kubemark is the path of kubemark's binary of KubeVersion, as EnvKubemark
// says. It may not exist: prepare-cluster.sh builds it only for make scale.
func (b *Bins) Kubemark() string {
	if p := os.Getenv(EnvKubemark); p != "" {
		return p
	}
	return filepath.Join(cacheDir(), "kubemark-"+b.KubeVersion, "bin", "kubemark")
}

// cacheDir is $MINIKUBELET_CACHE, by default /var/cache/minikubelet.
func cacheDir() string {
	if cache := os.Getenv(EnvCache); cache != "" {
		return cache
	}
	return "/var/cache/minikubelet"
}

// Load reads bed.json and cluster.json from where the environment says.
func Load() (*ctrdtest.Bed, *Bins, error) {
	cache := cacheDir()
	bedPath, binsPath := os.Getenv(EnvBed), os.Getenv(EnvBins)
	if bedPath == "" {
		bedPath = filepath.Join(cache, "bed.json")
	}
	if binsPath == "" {
		binsPath = filepath.Join(cache, "cluster.json")
	}
	bed, err := ctrdtest.LoadBed(bedPath)
	if err != nil {
		return nil, nil, err
	}
	bins, err := LoadBins(binsPath)
	if err != nil {
		return nil, nil, err
	}
	return bed, bins, nil
}
