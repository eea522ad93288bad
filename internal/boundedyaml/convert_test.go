package boundedyaml

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestToJSON(t *testing.T) {
	limits := Limits{MaxIndicators: 1000, MaxExpanded: 1 << 20, MaxNodes: 2000, MaxDepth: 20}
	tests := []struct {
		name string
		doc  string
		// wantErr is a substring of the error; empty for a document that
		// converts as sigs.k8s.io/yaml converts it.
		wantErr string
		// limit is true when the error must be a *LimitError.
		limit bool
	}{
		{name: "plain", doc: "a: 1\nb: [x, y]\nc: {d: e}\n"},
		{name: "anchor without alias", doc: "a: &x 1\nb: 2 * 3\n"},
		{name: "a few aliases", doc: "a: &x [1, 2]\nb: *x\nc: *x\n"},
		{name: "merge key", doc: "base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n"},
		{name: "star and ampersand in strings", doc: "cmd: 'ls * && echo'\n"},
		{name: "duplicate key", doc: "a: 1\na: 2\n", wantErr: `key "a" already set in map`},
		{name: "syntax", doc: "a: [\n", wantErr: "yaml: line"},
		{name: "unknown anchor", doc: "a: *nope\n", wantErr: "unknown anchor 'nope' referenced"},
		{name: "too many indicators", doc: strings.Repeat("- {}\n", 600), wantErr: "the YAML has 1200 keys, list entries and brackets, more than the 1000", limit: true},
		{name: "indicators in quoted text count", doc: "a: '" + strings.Repeat(",", 1000) + "'\n", wantErr: "more than the 1000", limit: true},
		{name: "string aliased past the limit", doc: "a: &s " + strings.Repeat("x", 100<<10) + "\nb: [" + strings.Repeat("*s,", 11) + "*s]\n",
			wantErr: "aliases (*name) expand it to more than 1048576 bytes", limit: true},
		{name: "string aliased within the limit", doc: "a: &s " + strings.Repeat("x", 100<<10) + "\nb: [" + strings.Repeat("*s,", 8) + "*s]\n"},
		{name: "list aliased past the node limit", doc: "a: &l [" + strings.Repeat("x,", 99) + "x]\nb: [" + strings.Repeat("*l,", 20) + "*l]\n",
			wantErr: "expand it to more than 2000 keys and list entries", limit: true},
		{name: "list aliased within the node limit", doc: "a: &l [" + strings.Repeat("x,", 99) + "x]\nb: [" + strings.Repeat("*l,", 17) + "*l]\n"},
		{name: "billion laughs", doc: billionLaughs(), wantErr: "document contains excessive aliasing"},
		{name: "flow 20 deep", doc: "a: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "\n"},
		{name: "flow 21 deep", doc: "a: " + strings.Repeat("[", 21) + strings.Repeat("]", 21) + "\n", wantErr: "the YAML nests more than 20 levels deep", limit: true},
		{name: "entries 21 deep", doc: "a:\n  " + strings.Repeat("- ", 21) + "x\n", wantErr: "nests more than 20", limit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ToJSON([]byte(tt.doc), limits)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ToJSON error = %v, want it to contain %q", err, tt.wantErr)
				}
				var le *LimitError
				if errors.As(err, &le) != tt.limit {
					t.Errorf("ToJSON error is a *LimitError: %v, want %v", !tt.limit, tt.limit)
				}
				return
			}
			if err != nil {
				t.Fatalf("ToJSON: %v", err)
			}
			want, err := yaml.YAMLToJSONStrict([]byte(tt.doc))
			if err != nil {
				t.Fatalf("YAMLToJSONStrict: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("ToJSON = %s, want %s", got, want)
			}
		})
	}
}

func TestNoLimits(t *testing.T) {
	doc := strings.Repeat("- {}\n", 600)
	if _, err := ToJSON([]byte(doc), Limits{}); err != nil {
		t.Fatalf("ToJSON without limits: %v", err)
	}
}

func TestDepth(t *testing.T) {
	tests := []struct {
		doc  string
		want int
	}{
		{"", 0},
		{"a: b", 0},
		{"a: [b, {c: d}]", 2},
		{"a: [[]] [[[]]]", 3},
		{"]]]] [", 1},
		{"- a\n- b", 1},
		{"- - - a\n  - b", 3},
		{"a: - b", 0},
		{"a: x-y - z", 0},
	}
	for _, tt := range tests {
		if got := Depth([]byte(tt.doc)); got != tt.want {
			t.Errorf("Depth(%q) = %d, want %d", tt.doc, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		doc  string
		want int
	}{
		{"", 0},
		{"plain text", 0},
		{"a: 1", 1},
		{"- a\n- b\n-", 3},
		{"-1\n- -2", 1},
		{"? a\n: b", 2},
		{"[a, b, {c: d}]", 5},
		{"url: http://x", 2},
	}
	for _, tt := range tests {
		if got := Count([]byte(tt.doc)); got != tt.want {
			t.Errorf("Count(%q) = %d, want %d", tt.doc, got, tt.want)
		}
	}
}

// billionLaughs is ten levels of nine aliases each.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	return b.String()
}
