package imageref

import (
	// go-digest takes sha384 and sha512 only when they are linked, as
	// they are in the agent (TLS links them).
	_ "crypto/sha512"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

var refs = []struct {
	in, docker string // docker "" means an error
}{
	{"busybox", "docker.io/library/busybox:latest"},
	{"busybox:1.36", "docker.io/library/busybox:1.36"},
	{"library/busybox", "docker.io/library/busybox:latest"},
	{"team/app", "docker.io/team/app:latest"},
	{"docker.io/busybox", "docker.io/library/busybox:latest"},
	{"index.docker.io/busybox:1", "docker.io/library/busybox:1"},
	{"localhost/app", "localhost/app:latest"},
	{"localhost:5000/app:v2", "localhost:5000/app:v2"},
	{"reg.example/team/sub/app:1.0-rc_1", "reg.example/team/sub/app:1.0-rc_1"},
	{"Reg.Example:443/app", "Reg.Example:443/app:latest"},
	{"[::1]:5000/app", "[::1]:5000/app:latest"},
	{"10.0.0.1:5000/app", "10.0.0.1:5000/app:latest"},
	{"a.b__c/d-e--f.g_h", "a.b__c/d-e--f.g_h:latest"},
	{"app@sha256:" + strings.Repeat("ab", 32), "docker.io/library/app@sha256:" + strings.Repeat("ab", 32)},
	{"app:1@sha256:" + strings.Repeat("ab", 32), "docker.io/library/app@sha256:" + strings.Repeat("ab", 32)},
	{"app@sha512:" + strings.Repeat("0", 128), "docker.io/library/app@sha512:" + strings.Repeat("0", 128)},
	{"app@sha256+b64u.x:" + strings.Repeat("0", 32), ""},
	{"app@sha256:" + strings.Repeat("AB", 32), ""},
	{"app@sha256:" + strings.Repeat("ab", 33), ""},
	{"localhost:5000", "docker.io/library/localhost:5000"},
	{"", ""},
	{"Busybox", ""},
	{"team/App", ""},
	{"app:", ""},
	{"app:-x", ""},
	{"app:" + strings.Repeat("t", 129), ""},
	{"app@sha256:abc", ""},
	{"app@:" + strings.Repeat("0", 32), ""},
	{"app@1sha:" + strings.Repeat("0", 32), ""},
	{"-app", ""},
	{"app-", ""},
	{"a..b", ""},
	{"a___b", ""},
	{"a//b", ""},
	{"/app", ""},
	{"app/", ""},
	{"reg:port/app", ""},
	{"[::1/app", ""},
	{"[]/app", ""},
	{"-reg.example/app", ""},
	{strings.Repeat("0123456789abcdef", 4), ""},
	{strings.Repeat("a", 256), ""},
	{"app@sha256:" + strings.Repeat("ab", 32) + "@x", ""},
}

func TestParseDocker(t *testing.T) {
	for _, tt := range refs {
		got, err := ParseDocker(tt.in)
		switch {
		case tt.docker == "" && err == nil:
			t.Errorf("ParseDocker(%q) = %q, want an error", tt.in, got)
		case tt.docker != "" && (err != nil || got.String() != tt.docker):
			t.Errorf("ParseDocker(%q) = %q, %v; want %q", tt.in, got, err, tt.docker)
		}
	}
}

// The answers are distribution/reference's, for every reference above.
func TestAgreesWithDistribution(t *testing.T) {
	for _, tt := range refs {
		agree(t, tt.in)
	}
}

func FuzzAgreesWithDistribution(f *testing.F) {
	for _, tt := range refs {
		f.Add(tt.in)
	}
	f.Fuzz(agree)
}

func agree(t *testing.T, in string) {
	want, wantErr := reference.ParseDockerRef(in)
	got, err := ParseDocker(in)
	if (err == nil) != (wantErr == nil) || err == nil && got.String() != want.String() {
		t.Errorf("ParseDocker(%q) = %q, %v; distribution/reference says %v, %v", in, got, err, want, wantErr)
	}
	if err == nil && wantErr == nil && got.Name() != want.Name() {
		t.Errorf("ParseDocker(%q).Name() = %q; distribution/reference says %q", in, got.Name(), want.Name())
	}
	wantN, wantErr := reference.ParseNormalizedNamed(in)
	gotN, err := ParseNormalized(in)
	if (err == nil) != (wantErr == nil) || err == nil && gotN.String() != wantN.String() {
		t.Errorf("ParseNormalized(%q) = %q, %v; distribution/reference says %v, %v", in, gotN, err, wantN, wantErr)
	}
}
