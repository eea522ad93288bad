package etchosts

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's managed hosts file, as it writes it for these pods.
const (
	kubeletLocal = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	kubeletAliases = "\n# Entries added by HostAliases.\n" +
		"123.45.67.89\tfoo\tbar\tbaz\n" +
		"456.78.90.123\tpark\tdoo\tboo\n"
)

var aliases = []v1.HostAlias{
	{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}},
	{IP: "456.78.90.123", Hostnames: []string{"park", "doo", "boo"}},
}

func TestContent(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostFile, []byte("127.0.0.1\tlocalhost\n10.0.0.5\tnode1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pod  Pod
		want string
	}{
		{
			name: "pod network",
			pod:  Pod{IPs: []string{"10.244.0.7"}, Hostname: "web"},
			want: kubeletLocal + "10.244.0.7\tweb\n",
		},
		{
			name: "subdomain and two IPs",
			pod:  Pod{IPs: []string{"10.244.0.7", "fd00::7"}, Hostname: "web-0", Domain: "web.team.svc.cluster.local"},
			want: kubeletLocal + "10.244.0.7\tweb-0.web.team.svc.cluster.local\tweb-0\n" + "fd00::7\tweb-0.web.team.svc.cluster.local\tweb-0\n",
		},
		{
			name: "hostAliases",
			pod:  Pod{IPs: []string{"10.244.0.7"}, Hostname: "web", Aliases: aliases},
			want: kubeletLocal + "10.244.0.7\tweb\n" + kubeletAliases,
		},
		{
			name: "host network",
			pod:  Pod{HostNetwork: true, HostFile: hostFile, IPs: []string{"10.0.0.5"}, Hostname: "ignored"},
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n10.0.0.5\tnode1\n",
		},
		{
			name: "host network with hostAliases",
			pod:  Pod{HostNetwork: true, HostFile: hostFile, Aliases: aliases},
			want: "# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n10.0.0.5\tnode1\n" + kubeletAliases,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Content(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path, err := Write(dir, Pod{IPs: []string{"10.244.0.7"}, Hostname: "web"})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "etc-hosts") || fi.Mode().Perm() != 0o644 {
		t.Errorf("wrote %s mode %v, want %s/etc-hosts mode 0644", path, fi.Mode().Perm(), dir)
	}
	if _, err := Write(dir, Pod{HostNetwork: true, HostFile: filepath.Join(dir, "missing")}); err == nil {
		t.Error("a host-network pod without the host's hosts file: no error")
	}
}

func TestMountedAndDomain(t *testing.T) {
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{{Name: "h", MountPath: "/etc/hosts/"}}}
	if !Mounted(c) || Mounted(&v1.Container{}) {
		t.Error("Mounted: want true only for a container that mounts /etc/hosts")
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team"}, Spec: v1.PodSpec{Subdomain: "web"}}
	if got := Domain(pod, "cluster.local"); got != "web.team.svc.cluster.local" {
		t.Errorf("Domain %q", got)
	}
	if got := Domain(&v1.Pod{}, "cluster.local"); got != "" {
		t.Errorf("Domain without a subdomain %q", got)
	}
}
