package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzConfigFile feeds arbitrary bytes to the config file's parser. It
// never panics, and its error is at most maxConfigErrors+1 lines, each
// naming the file and at most a kilobyte or so long.
func FuzzConfigFile(f *testing.F) {
	example, err := os.ReadFile("../../examples/config.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example),
		header,
		header + "staticPodPath: /etc/kubernetes/manifests\nsyncFrequency: 1m\nreadOnlyPort: 10255\nfeatureGates: {EventedPLEG: true}\n",
		header + "staticPodURLHeader: {Authorization: [Bearer x]}\ncrashLoopBackOff: {maxContainerRestartPeriod: 1m}\n",
		header + "authentication: {x509: {clientCAFile: /ca.pem}, anonymous: {enabled: false}}\n",
		header + "syncFrequency: 5x\nhealthzPort: many\nmaxPods: -3\nstaticPodPat: x\n",
		header + "containerLogMaxSize: \"1e999999999\"\n",
		header + "featureGates: &g {A: true}\nx: *g\n",
		`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","address":"0.0.0.0"}`,
		"- a\n", "", "\xff", "apiVersion: [",
	} {
		f.Add([]byte(seed))
	}
	const path = "config.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxConfigSize {
			return // readConfigFile refuses it before parsing
		}
		_, _, err := parseConfigFile(path, data)
		if err == nil {
			return
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) > maxConfigErrors+1 {
			t.Fatalf("error of %d lines", len(lines))
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "config file "+path+": ") || len(l) > maxConfigErrorLen+200 {
				t.Fatalf("line does not name the file, or is %d bytes long: %.300q", len(l), l)
			}
		}
	})
}
