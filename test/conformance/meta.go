package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MetaFile is the name of a run's Meta in its output dir.
const MetaFile = "meta.json"

// Meta describes one run of the suite against one node agent.
type Meta struct {
	// Agent is "minikubelet" or "kubelet"; AgentVersion what it says of
	// itself (minikubelet version, kubelet --version).
	Agent        string `json:"agent"`
	AgentVersion string `json:"agentVersion"`
	// NodeListsObjects says the node could list and watch configMaps and
	// secrets, beyond a production node's rights.
	NodeListsObjects bool `json:"nodeListsObjects,omitempty"`
	// KubeVersion is the control plane's and e2e.test's version;
	// CoreDNSVersion CoreDNS's.
	KubeVersion    string `json:"kubeVersion"`
	CoreDNSVersion string `json:"corednsVersion"`
	// Node is the Node's nodeInfo as the agent reported it.
	ContainerRuntime string `json:"containerRuntime"`
	KernelVersion    string `json:"kernelVersion"`
	OSImage          string `json:"osImage"`
	// Started is when the cluster started; ClusterStartSeconds how long
	// it took to be ready, SuiteSeconds how long the suite ran.
	Started             time.Time `json:"started"`
	ClusterStartSeconds float64   `json:"clusterStartSeconds"`
	SuiteSeconds        float64   `json:"suiteSeconds"`
	// Procs, Focus and Skip are how the suite was run.
	Procs int    `json:"procs"`
	Focus string `json:"focus"`
	Skip  string `json:"skip"`
}

// WriteMeta writes m into dir.
func WriteMeta(dir string, m Meta) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal %s: %w", MetaFile, err)
	}
	if err := os.WriteFile(filepath.Join(dir, MetaFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", MetaFile, err)
	}
	return nil
}

// Run is one run's description and results, read from its output dir.
type Run struct {
	Meta    Meta
	Results []Result
}

// ReadRun reads dir's meta.json and junit.xml.
func ReadRun(dir string) (*Run, error) {
	data, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	var r Run
	if err := json.Unmarshal(data, &r.Meta); err != nil {
		return nil, fmt.Errorf("parse %s: %w", filepath.Join(dir, MetaFile), err)
	}
	if r.Results, err = ReadJUnit(filepath.Join(dir, JUnitFile)); err != nil {
		return nil, err
	}
	return &r, nil
}
