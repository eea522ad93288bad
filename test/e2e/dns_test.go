package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// printFiles is a container command that prints /etc/resolv.conf and
// /etc/hosts, each on one line with | for its line breaks, then sleeps.
const printFiles = `
    command:
    - sh
    - -c
    - |
      echo "resolv=$(tr '\n' '|' < /etc/resolv.conf)"
      echo "hosts=$(tr '\n' '|' < /etc/hosts)"
      exec sleep 3600`

// Static pods get the kubelet's DNS and /etc/hosts: dnsPolicy None takes
// dnsConfig alone; ClusterFirst on the pod network gets --cluster-dns with
// the cluster's search path before the host's and ndots:5; a host-network
// pod keeps the host's resolv.conf (--resolv-conf). /etc/hosts is the
// managed file with the pod's IP, hostname.subdomain.ns.svc.<domain> and
// hostAliases; a host-network pod's is the host's with the hostAliases.
func TestStaticPodDNSAndHosts(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		resolv := filepath.Join(t.TempDir(), "resolv.conf")
		if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.1\nsearch host.example\noptions timeout:1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a := startAgent(t, rt, "--cluster-dns", "10.96.0.10", "--cluster-domain", "cluster.local", "--resolv-conf", resolv)
		a.writeManifest("none.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: none
spec:
  terminationGracePeriodSeconds: 1
  hostname: h
  subdomain: sub
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.53, 192.0.2.54]
    searches: [a.example]
    options:
    - name: ndots
      value: "2"
    - name: edns0
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo, foo.example]
  - ip: 10.1.2.4
    hostnames: [bar]
  containers:
  - name: main
    image: %s%s
`, env.busybox, printFiles))
		a.writeManifest("cluster.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: cluster
  namespace: team
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s%s
`, env.busybox, printFiles))
		a.writeManifest("hostnet.yaml", fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: hostnet
spec:
  terminationGracePeriodSeconds: 1
  hostNetwork: true
  hostAliases:
  - ip: 10.1.2.3
    hostnames: [foo]
  containers:
  - name: main
    image: %s%s
`, env.busybox, printFiles))

		none := a.waitRunning("none", 60*time.Second)
		resolvLine := settingsWaitLog(t, a, none, "main", "resolv=")
		hostsLine := settingsWaitLog(t, a, none, "main", "hosts=")
		for _, want := range []string{"search a.example|", "nameserver 192.0.2.53|nameserver 192.0.2.54|", "options edns0 ndots:2|"} {
			if !strings.Contains(resolvLine, want) {
				t.Errorf("dnsPolicy None: resolv.conf %q lacks %q", resolvLine, want)
			}
		}
		if strings.Contains(resolvLine, "10.96.0.10") || strings.Contains(resolvLine, "192.0.2.1|") {
			t.Errorf("dnsPolicy None: resolv.conf %q has the cluster's or the host's DNS", resolvLine)
		}
		wantHosts := "hosts=# Kubernetes-managed hosts file.|127.0.0.1\tlocalhost|::1\tlocalhost ip6-localhost ip6-loopback|" +
			"fe00::0\tip6-localnet|fe00::0\tip6-mcastprefix|fe00::1\tip6-allnodes|fe00::2\tip6-allrouters|" +
			none.Status.PodIP + "\th.sub.default.svc.cluster.local\th||# Entries added by HostAliases.|10.1.2.3\tfoo\tfoo.example|10.1.2.4\tbar|"
		if none.Status.PodIP == "" || !strings.HasSuffix(hostsLine, wantHosts) {
			t.Errorf("pod IP %q: /etc/hosts\n%q\nwant\n%q", none.Status.PodIP, hostsLine, wantHosts)
		}

		cluster := a.waitRunning("cluster", 60*time.Second)
		resolvLine = settingsWaitLog(t, a, cluster, "main", "resolv=")
		for _, want := range []string{"search team.svc.cluster.local svc.cluster.local cluster.local host.example|", "nameserver 10.96.0.10|", "options ndots:5|"} {
			if !strings.Contains(resolvLine, want) {
				t.Errorf("ClusterFirst: resolv.conf %q lacks %q", resolvLine, want)
			}
		}

		hostnet := a.waitRunning("hostnet", 60*time.Second)
		resolvLine = settingsWaitLog(t, a, hostnet, "main", "resolv=")
		hostsLine = settingsWaitLog(t, a, hostnet, "main", "hosts=")
		for _, want := range []string{"search host.example|", "nameserver 192.0.2.1|", "options timeout:1|"} {
			if !strings.Contains(resolvLine, want) {
				t.Errorf("host network: resolv.conf %q lacks %q (the host's)", resolvLine, want)
			}
		}
		host, err := os.ReadFile("/etc/hosts")
		if err != nil {
			t.Fatal(err)
		}
		wantHosts = "hosts=# Kubernetes-managed hosts file (host network).|" + strings.ReplaceAll(string(host), "\n", "|") + "|# Entries added by HostAliases.|10.1.2.3\tfoo|"
		if !strings.HasSuffix(hostsLine, wantHosts) {
			t.Errorf("host network: /etc/hosts\n%q\nwant\n%q", hostsLine, wantHosts)
		}
	})
}
