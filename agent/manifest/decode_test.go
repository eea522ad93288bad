package manifest

import (
	"bytes"
	"strings"
	"testing"
)

const goodYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1.27
`

const goodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},
 "spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}`

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string // substring; empty means success
	}{
		{name: "yaml", data: goodYAML},
		{name: "json", data: goodJSON},
		{name: "leading document separator and comments", data: "# static pod\n---\n" + goodYAML},
		{name: "trailing empty document", data: goodYAML + "---\n# nothing\n"},
		{name: "empty", data: "", wantErr: "manifest is empty"},
		{name: "whitespace only", data: " \n\t\n", wantErr: "manifest is empty"},
		{name: "comments only", data: "# a\n---\n# b\n", wantErr: "manifest is empty"},
		{name: "yaml null", data: "null\n", wantErr: "manifest is empty"},
		{name: "too large", data: goodYAML + "#" + strings.Repeat("x", MaxSize), wantErr: "larger than 10485760 bytes"},
		{name: "two documents", data: goodYAML + "---\n" + goodYAML, wantErr: "more than one YAML document: put each pod in its own file"},
		{name: "yaml syntax", data: "apiVersion: v1\nkind: Pod\nmetadata: [\n", wantErr: "YAML document 1: yaml: line"},
		{name: "not an object", data: "- a\n- b\n", wantErr: "manifest is not an object"},
		{name: "missing apiVersion", data: "kind: Pod\n", wantErr: `apiVersion is missing: set "apiVersion: v1"`},
		{name: "wrong apiVersion", data: "apiVersion: apps/v1\nkind: Pod\n", wantErr: `apiVersion is "apps/v1": set "apiVersion: v1"`},
		{name: "missing kind", data: "apiVersion: v1\n", wantErr: `kind is missing: set "kind: Pod"`},
		{name: "wrong kind", data: "apiVersion: v1\nkind: Deployment\n", wantErr: `kind is "Deployment": set "kind: Pod"`},
		{name: "kind is case-sensitive", data: "apiVersion: v1\nkind: pod\n", wantErr: `kind is "pod"`},
		{
			name:    "unknown field",
			data:    strings.Replace(goodYAML, "    image:", "    imagee:", 1),
			wantErr: `unknown field "spec.containers[0].imagee"`,
		},
		{
			name:    "unknown field differs only in case",
			data:    strings.Replace(goodYAML, "  name: web", "  Name: web", 1),
			wantErr: `unknown field "metadata.Name"`,
		},
		{
			name:    "unknown field json",
			data:    strings.Replace(goodJSON, `"image"`, `"imagee"`, 1),
			wantErr: `unknown field "spec.containers[0].imagee"`,
		},
		{
			name:    "duplicate field yaml",
			data:    goodYAML + "    image: nginx:1.28\n",
			wantErr: `line 9: key "image" already set in map: remove the duplicate key`,
		},
		{
			name:    "duplicate field json",
			data:    strings.Replace(goodJSON, `"image":"nginx:1.27"`, `"image":"nginx:1.27","image":"x"`, 1),
			wantErr: `duplicate field "spec.containers[0].image"`,
		},
		{
			name:    "wrong type",
			data:    strings.Replace(goodYAML, "    image: nginx:1.27", "    image: nginx:1.27\n    ports:\n    - containerPort: http", 1),
			wantErr: "decode Pod: json: cannot unmarshal string into Go struct field",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, err := Decode([]byte(tt.data))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if pod.Name != "web" || len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != "nginx:1.27" {
					t.Fatalf("Decode = %+v", pod)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Decode error = %q, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Decode error spans lines: %q", err)
			}
		})
	}
}

func TestDecodeAtMaxSize(t *testing.T) {
	data := []byte(goodYAML + "#")
	data = append(data, bytes.Repeat([]byte("x"), MaxSize-len(data))...)
	if _, err := Decode(data); err != nil {
		t.Fatalf("Decode of exactly MaxSize bytes: %v", err)
	}
}
