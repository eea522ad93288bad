package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// Bounds of the node's start.
const (
	containerdTimeout = 3 * time.Minute // start and import the images
	nodeReadyTimeout  = 3 * time.Minute
	nodePoll          = 500 * time.Millisecond
)

// startContainerd starts the node's private containerd with the bed's
// images and the e2e suite's stand-ins imported.
func (c *Cluster) startContainerd(ctx context.Context) error {
	rt, err := c.opts.Bed.Runtime(c.opts.Runtime)
	if err != nil {
		return err
	}
	bed := *c.opts.Bed
	bed.Images = append(slices.Clone(bed.Images), c.opts.Bins.Images...)
	c.ctr, err = ctrdtest.Start(ctx, ctrdtest.Options{Runtime: rt, Bed: &bed, BaseDir: c.opts.Dir, StartTimeout: containerdTimeout})
	if err != nil {
		return err
	}
	return c.saveState()
}

// nodeDir holds the agent's root, manifest and pod log directories. It
// lives in the containerd instance's directory so that the bed's teardown
// (which unmounts everything under it) also removes the pods' volume
// mounts after a crash.
func (c *Cluster) nodeDir() string { return filepath.Join(c.ctr.Dir(), "node") }

// PodLogsDir is the node agent's pod log directory.
func (c *Cluster) PodLogsDir() string { return filepath.Join(c.nodeDir(), "logs") }

// startNode starts the node agent, then kube-proxy and CoreDNS once the
// Node is registered, and waits for the Node to be Ready and the default
// namespace to have its ServiceAccount.
func (c *Cluster) startNode(ctx context.Context) error {
	for _, d := range []string{"root", "manifests", "logs"} {
		if err := os.MkdirAll(filepath.Join(c.nodeDir(), d), 0o755); err != nil {
			return fmt.Errorf("node dir: %w", err)
		}
	}
	if err := c.StartAgent(); err != nil {
		return err
	}
	client, err := c.Client()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	err = poll(wctx, "wait for the Node "+c.nodeName+" to register", nodePoll, func(ctx context.Context) error {
		_, err := client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
		return err
	}, c.agent)
	if err != nil {
		return err
	}
	if err := c.startAddons(wctx); err != nil {
		return err
	}
	err = poll(wctx, "wait for the Node "+c.nodeName+" to be Ready", nodePoll, func(ctx context.Context) error {
		n, err := client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node not Ready: %w", errNotYet)
	}, c.agent)
	if err != nil {
		return err
	}
	return c.waitDefaultServiceAccount(wctx)
}

// waitDefaultServiceAccount waits until the controller-manager made the
// default namespace's ServiceAccount, which pods need.
func (c *Cluster) waitDefaultServiceAccount(ctx context.Context) error {
	client, err := c.Client()
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, nodeReadyTimeout)
	defer cancel()
	return poll(wctx, "wait for the default ServiceAccount", nodePoll, func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}, c.kcm)
}

// StartAgent starts the node agent (again, after StopAgent) on the same
// directories. It does not wait for anything.
func (c *Cluster) StartAgent() error {
	bin, args, err := c.agentCommand()
	if err != nil {
		return err
	}
	c.agent, err = launch(string(c.opts.Agent), bin, c.AgentLog(), nil, append(args, c.opts.AgentArgs...)...)
	return err
}

// StopAgent stops the node agent (SIGTERM), leaving its pods running.
func (c *Cluster) StopAgent() { c.agent.stop() }

// AgentPID is the node agent's process ID (minikubelet's or the
// kubelet's), or 0 when it is not running: for measuring it from outside
// (its RSS and CPU time in /proc).
func (c *Cluster) AgentPID() int {
	if c.agent == nil || !c.agent.running() {
		return 0
	}
	return c.agent.cmd.Process.Pid
}

// agentCommand is the agent's binary and flags.
func (c *Cluster) agentCommand() (string, []string, error) {
	dir := c.nodeDir()
	if c.opts.Agent == Kubelet {
		if err := makeCgroup(c.ctr.CgroupParent()); err != nil {
			return "", nil, err
		}
		cfg, err := c.writeKubeletConfig()
		if err != nil {
			return "", nil, err
		}
		return c.opts.Bins.Kubelet, append(c.bootstrapArgs(),
			"--config", cfg,
			"--kubeconfig", c.agentKubeconfig(),
			"--root-dir", filepath.Join(dir, "root"),
			"--cert-dir", c.NodeCertDir(),
			"--hostname-override", c.nodeName,
			"--node-ip", c.hostIP.String(),
			"-v", "2",
		), nil
	}
	return c.opts.AgentBinary, append(c.bootstrapArgs(),
		"--kubeconfig", c.agentKubeconfig(),
		"--hostname-override", c.nodeName,
		"--node-ip", c.hostIP.String(),
		"--container-runtime-endpoint", c.ctr.Endpoint(),
		"--root-dir", filepath.Join(dir, "root"),
		"--pod-logs-dir", filepath.Join(dir, "logs"),
		"--pod-manifest-path", filepath.Join(dir, "manifests"),
		"--read-only-port", strconv.Itoa(c.ports.agentReadOnly),
		"--healthz-port", strconv.Itoa(c.ports.agentHealthz),
		"--cgroup-root", c.ctr.CgroupParent(),
		// Pods' DNS as the kubelet's above: CoreDNS's Service IP.
		"--cluster-dns", DNSServiceIP,
		"--cluster-domain", DNSDomain,
		// The kubelet port as the kubelet's above: the serving certificate
		// the cluster CA signed, client certificates of the cluster CA
		// (the apiserver's kubelet client), token webhook and
		// SubjectAccessReview (node mode's defaults).
		"--address", c.hostIP.String(),
		"--port", strconv.Itoa(c.ports.kubelet),
		"--tls-cert-file", c.files.nodeCert,
		"--tls-private-key-file", c.files.nodeKey,
		"--client-ca-file", c.ca.CertFile,
		"--socket", filepath.Join(dir, "minikubelet.sock"),
		"-v", "2",
	), nil
}

// bootstrapArgs are the agent's flags for a bootstrap (Options.Bootstrap).
func (c *Cluster) bootstrapArgs() []string {
	if !c.opts.Bootstrap {
		return nil
	}
	return []string{"--bootstrap-kubeconfig", c.files.bootstrapKubeconfig}
}

// writeKubeletConfig writes the kubelet's KubeletConfiguration: kubeadm's
// defaults where they apply (webhook authentication and authorization,
// client certificates of the cluster CA, clusterDNS), the directories,
// ports and cgroup root of this cluster, its serving certificate signed
// by the cluster CA, and failCgroupV1: false (this host runs cgroup v1).
func (c *Cluster) writeKubeletConfig() (string, error) {
	dir := c.nodeDir()
	cfg := kubeletconfig.KubeletConfiguration{
		TypeMeta:                 metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		FailCgroupV1:             ptr.To(false),
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               c.ctr.CgroupParent(),
		ContainerRuntimeEndpoint: c.ctr.Endpoint(),
		Address:                  c.hostIP.String(),
		Port:                     int32(c.ports.kubelet),
		ReadOnlyPort:             0,
		HealthzBindAddress:       "127.0.0.1",
		HealthzPort:              ptr.To(int32(c.ports.agentHealthz)),
		TLSCertFile:              c.files.nodeCert,
		TLSPrivateKeyFile:        c.files.nodeKey,
		Authentication: kubeletconfig.KubeletAuthentication{
			X509:      kubeletconfig.KubeletX509Authentication{ClientCAFile: c.ca.CertFile},
			Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:  kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook},
		ClusterDNS:     []string{DNSServiceIP},
		ClusterDomain:  DNSDomain,
		ResolverConfig: ptr.To("/etc/resolv.conf"),
		StaticPodPath:  filepath.Join(dir, "manifests"),
		PodLogsDir:     filepath.Join(dir, "logs"),
		FailSwapOn:     ptr.To(false),
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("kubelet config: %w", err)
	}
	path := filepath.Join(c.dir, "kubelet.yaml")
	c.files.kubeletConfig = path
	return path, writeFile(path, data)
}

// cgroupMounts is where the cgroup hierarchies are mounted.
const cgroupMounts = "/sys/fs/cgroup"

// makeCgroup creates the cgroup path in every hierarchy mounted under
// /sys/fs/cgroup (v1 controllers and the v2 one): the kubelet refuses a
// cgroupRoot that does not exist. The bed's teardown removes it.
func makeCgroup(path string) error {
	entries, err := os.ReadDir(cgroupMounts)
	if err != nil {
		return fmt.Errorf("list cgroup hierarchies: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if err := os.MkdirAll(filepath.Join(cgroupMounts, e.Name(), path), 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", path, err)
		}
	}
	return nil
}
