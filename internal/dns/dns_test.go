package dns

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const hostResolvConf = `# host
nameserver 10.0.0.2 ; comment
nameserver 10.0.0.3
search example.com. corp.example.com .
options timeout:2 attempts:3
options timeout:1
`

func writeResolvConf(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func pod(policy v1.DNSPolicy, hostNetwork bool, cfg *v1.PodDNSConfig) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"},
		Spec:       v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNetwork, DNSConfig: cfg},
	}
}

func TestParseResolvConf(t *testing.T) {
	got, err := ParseResolvConf(strings.NewReader(hostResolvConf))
	if err != nil {
		t.Fatal(err)
	}
	want := &runtimeapi.DNSConfig{
		Servers:  []string{"10.0.0.2", "10.0.0.3"},
		Searches: []string{"example.com", "corp.example.com"},
		Options:  []string{"timeout:1", "attempts:3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ParseResolvConf(strings.NewReader("nameserver\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a nameserver with no address: err %v, want one naming line 1", err)
	}
}

func TestPodDNS(t *testing.T) {
	host := writeResolvConf(t, hostResolvConf)
	cluster := Configurer{ClusterDNS: []net.IP{net.ParseIP("10.96.0.10")}, ClusterDomain: "cluster.local", ResolvConf: host}
	hostCfg := &runtimeapi.DNSConfig{
		Servers:  []string{"10.0.0.2", "10.0.0.3"},
		Searches: []string{"example.com", "corp.example.com"},
		Options:  []string{"timeout:1", "attempts:3"},
	}
	clusterCfg := &runtimeapi.DNSConfig{
		Servers:  []string{"10.96.0.10"},
		Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example.com"},
		Options:  []string{"ndots:5"},
	}
	five := "5"
	for _, tc := range []struct {
		name     string
		c        Configurer
		pod      *v1.Pod
		want     *runtimeapi.DNSConfig
		warnings []string
	}{
		{name: "ClusterFirst", c: cluster, pod: pod(v1.DNSClusterFirst, false, nil), want: clusterCfg},
		{name: "ClusterFirst on the host network is Default", c: cluster, pod: pod(v1.DNSClusterFirst, true, nil), want: hostCfg},
		{name: "ClusterFirstWithHostNet", c: cluster, pod: pod(v1.DNSClusterFirstWithHostNet, true, nil), want: clusterCfg},
		{name: "Default", c: cluster, pod: pod(v1.DNSDefault, false, nil), want: hostCfg},
		{
			name: "ClusterFirst without cluster DNS falls back to Default",
			c:    Configurer{ClusterDomain: "cluster.local", ResolvConf: host}, pod: pod(v1.DNSClusterFirst, false, nil), want: hostCfg,
			warnings: []string{`MissingClusterDNS: the node has no cluster DNS (--cluster-dns, clusterDNS) and cannot give pod team/p dnsPolicy "ClusterFirst": it falls back to "Default"`},
		},
		{
			name: "Default without resolv.conf looks nothing up",
			c:    Configurer{NodeIPs: []net.IP{net.ParseIP("192.0.2.1"), net.ParseIP("2001:db8::1")}}, pod: pod(v1.DNSDefault, false, nil),
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1", "::1"}, Searches: []string{"."}},
		},
		{
			name: "None takes only dnsConfig",
			c:    cluster,
			pod: pod(v1.DNSNone, false, &v1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "1.1.1.1"},
				Searches:    []string{"a.example"},
				Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "edns0"}},
			}),
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []string{"edns0", "ndots:5"}},
		},
		{
			name: "dnsConfig adds to ClusterFirst and replaces its options",
			c:    cluster,
			pod: pod(v1.DNSClusterFirst, false, &v1.PodDNSConfig{
				Nameservers: []string{"10.96.0.10", "8.8.8.8"},
				Searches:    []string{"svc.cluster.local", "extra.example"},
				Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: new("2")}},
			}),
			want: &runtimeapi.DNSConfig{
				Servers:  []string{"10.96.0.10", "8.8.8.8"},
				Searches: []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example.com", "extra.example"},
				Options:  []string{"ndots:2"},
			},
		},
		{
			name: "more than three nameservers",
			c:    cluster,
			pod:  pod(v1.DNSDefault, false, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8"}}),
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3", "1.1.1.1"}, Searches: hostCfg.Searches, Options: []string{"attempts:3", "timeout:1"}},
			warnings: []string{
				"DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.2 10.0.0.3 1.1.1.1",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := tc.c.PodDNS(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
		})
	}
}

func TestPodDNSBadResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	c := Configurer{ResolvConf: path}
	if _, _, err := c.PodDNS(pod(v1.DNSDefault, false, nil)); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--resolv-conf") {
		t.Errorf("err %v, want one naming %s and --resolv-conf", err, path)
	}
}

func TestFitSearches(t *testing.T) {
	long := strings.Repeat("a", 254)
	many := make([]string, 0, 40)
	for i := range 40 {
		many = append(many, string(rune('a'+i%26))+strings.Repeat("x", i)+".example")
	}
	wide := make([]string, 0, 20)
	for i := range 20 {
		wide = append(wide, strings.Repeat(string(rune('a'+i)), 200))
	}
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{name: "a name longer than 253 is left out", in: []string{"a.example", long, "b.example"}, want: []string{"a.example", "b.example"}},
		{name: "32 domains at most", in: many, want: many[:32]},
		// 10 domains of 200 bytes and 9 spaces: 2009 bytes; an 11th
		// would make 2210.
		{name: "2048 bytes at most", in: wide, want: wide[:10]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings := fitSearches(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %d domains %v, want %d", len(got), got, len(tc.want))
			}
			want := "DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(tc.want, " ")
			if len(warnings) != 1 || warnings[0] != want {
				t.Errorf("warnings %q, want one", warnings)
			}
		})
	}
	if got, warnings := fitSearches([]string{"a", "b"}); len(got) != 2 || warnings != nil {
		t.Errorf("within the limits: got %v %v", got, warnings)
	}
}
