package boundedyaml

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// FuzzToJSON checks ToJSON against sigs.k8s.io/yaml.YAMLToJSONStrict: a
// document within the limits converts to the same JSON, or fails as that
// does; one over a limit yields a *LimitError. Small limits let the fuzzer
// reach them.
func FuzzToJSON(f *testing.F) {
	for _, seed := range []string{
		"a: 1\nb: [x, y]\nc: {d: e}\n",
		"a: &x [1, 2]\nb: *x\nc: *x\n",
		"base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n",
		"a: &s xxxxxxxxxxxxxxxx\nb: [*s, *s, *s, *s]\n",
		billionLaughs(),
		"a: " + strings.Repeat("[", 60) + strings.Repeat("]", 60) + "\n",
		strings.Repeat("- ", 60) + "x\n",
		strings.Repeat("- {}\n", 700),
		"a: 1\na: 2\n",
		"? [a, b]\n: c\n",
		"1: one\ntrue: yes\n1.5: x\n~: null\n",
		"a: *nope\n",
		"\ufeffa: b\n",
		"%YAML 1.1\n---\na: !!binary aGVsbG8=\n",
	} {
		f.Add([]byte(seed))
	}
	limits := Limits{MaxIndicators: 2000, MaxExpanded: 64 << 10, MaxNodes: 5000, MaxDepth: 50}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := ToJSON(doc, limits)
		var le *LimitError
		if errors.As(err, &le) {
			if le.Msg == "" {
				t.Fatal("a LimitError without a message")
			}
			return
		}
		want, wantErr := yaml.YAMLToJSONStrict(doc)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("ToJSON error %v, YAMLToJSONStrict error %v", err, wantErr)
		}
		// Keys that differ in YAML can be one key in JSON (0 and .0 are
		// both "0"), and which value wins then depends on the order of a
		// Go map: YAMLToJSONStrict may answer differently each time.
		for i := 0; err == nil && !bytes.Equal(got, want); i++ {
			if i == 100 {
				t.Fatalf("ToJSON = %s, YAMLToJSONStrict = %s", got, want)
			}
			want, _ = yaml.YAMLToJSONStrict(doc)
		}
	})
}
