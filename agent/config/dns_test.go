package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestLoadFileDNS(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		args    []string
		want    DNSConfig
	}{
		{name: "defaults", content: header, want: DNSConfig{ResolvConf: "/etc/resolv.conf"}},
		{
			name:    "the file's fields",
			content: header + "clusterDNS: [10.96.0.10, fd00::a]\nclusterDomain: cluster.local\nresolvConf: /run/systemd/resolve/resolv.conf\n",
			want:    DNSConfig{ClusterDNS: []string{"10.96.0.10", "fd00::a"}, ClusterDomain: "cluster.local", ResolvConf: "/run/systemd/resolve/resolv.conf"},
		},
		{
			name:    "an empty resolvConf is kept",
			content: header + "resolvConf: \"\"\n",
			want:    DNSConfig{},
		},
		{
			name:    "flags win",
			content: header + "clusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\n",
			args:    []string{"--cluster-dns", "10.0.0.10, 10.0.0.11", "--cluster-domain", "k8s.example", "--resolv-conf", ""},
			want:    DNSConfig{ClusterDNS: []string{"10.0.0.10", "10.0.0.11"}, ClusterDomain: "k8s.example"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := loadWith(t, tc.content, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.DNSConfig, tc.want) {
				t.Errorf("got %+v, want %+v", c.DNSConfig, tc.want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestLoadFileDNSErrors(t *testing.T) {
	_, _, err := loadWith(t, header+"clusterDNS: [10.96.0.300]\nclusterDomain: bad_domain\n")
	for _, want := range []string{`clusterDNS: "10.96.0.300" is not an IP address`, `clusterDomain: "bad_domain" is not a DNS domain`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err %v, want it to say %s", err, want)
		}
	}
	c := Default()
	c.ClusterDNS = []string{"dns.example"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--cluster-dns") {
		t.Errorf("Validate: %v, want an error naming --cluster-dns", err)
	}
}
