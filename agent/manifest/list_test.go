package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const listYAML = `apiVersion: v1
kind: PodList
items:
- metadata:
    name: web
  spec:
    containers:
    - name: app
      image: nginx:1.27
- apiVersion: v1
  kind: Pod
  metadata:
    name: api
    namespace: ops
  spec:
    containers:
    - name: app
      image: api:2
`

const listJSON = `{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"1"},"items":[
 {"metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}},
 {"metadata":{"name":"api","namespace":"ops"},"spec":{"containers":[{"name":"app","image":"api:2"}]}}]}`

// listItem is a PodList item of pod name with image, for building lists.
func listItem(name, image string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"containers":[{"name":"app","image":%q}]}}`, name, image)
}

func podList(items ...string) string {
	return `{"apiVersion":"v1","kind":"PodList","items":[` + strings.Join(items, ",") + `]}`
}

func TestDecodeList(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    []string // name=image of each pod
		wantErr string
	}{
		{name: "one pod yaml", data: goodYAML, want: []string{"web=nginx:1.27"}},
		{name: "one pod json", data: goodJSON, want: []string{"web=nginx:1.27"}},
		{name: "list yaml", data: listYAML, want: []string{"web=nginx:1.27", "api=api:2"}},
		{name: "list json", data: listJSON, want: []string{"web=nginx:1.27", "api=api:2"}},
		{name: "empty list", data: "apiVersion: v1\nkind: PodList\nitems: []\n", want: []string{}},
		{name: "list without items", data: "apiVersion: v1\nkind: PodList\n", want: []string{}},
		{name: "empty body", data: "", wantErr: "manifest is empty"},
		{name: "wrong kind", data: "apiVersion: v1\nkind: ServiceList\n", wantErr: `kind is "ServiceList": set "kind: Pod" or "kind: PodList"`},
		{name: "not an object", data: "[]", wantErr: "manifest is not an object: it must hold one Pod or a PodList"},
		{name: "unknown field in an item", data: podList(listItem("a", "x:1"), strings.Replace(listItem("b", "x:1"), `"image"`, `"imagee"`, 1)),
			wantErr: `unknown field "items[1].spec.containers[0].imagee"`},
		{name: "unknown field in the list", data: strings.Replace(listJSON, `"items"`, `"itemz"`, 1), wantErr: `unknown field "itemz"`},
		{name: "duplicate field in an item", data: podList(strings.Replace(listItem("a", "x:1"), `"image":"x:1"`, `"image":"x:1","image":"y"`, 1)),
			wantErr: `duplicate field "items[0].spec.containers[0].image"`},
		{name: "item of another kind", data: podList(listItem("a", "x:1"), `{"kind":"Service","metadata":{"name":"s"}}`),
			wantErr: `items[1].kind is "Service": set "kind: Pod" or leave it out`},
		{name: "item of another version", data: podList(`{"apiVersion":"v2","metadata":{"name":"s"}}`),
			wantErr: `items[0].apiVersion is "v2"`},
		{name: "two documents", data: goodYAML + "---\n" + goodYAML, wantErr: "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := DecodeList([]byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeList error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeList: %v", err)
			}
			got := []string{}
			for _, p := range pods {
				got = append(got, p.Name+"="+p.Spec.Containers[0].Image)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("DecodeList = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoadList(t *testing.T) {
	in := Identity{NodeName: "node-a", Source: SourceHTTP, Origin: "http://x/pods", Seen: seen}
	tests := []struct {
		name    string
		data    string
		want    []string // namespace/name of each pod
		wantErr string   // every error, "; "-separated, after "invalid pod: "
	}{
		{name: "one pod", data: goodYAML, want: []string{"default/web-node-a"}},
		{name: "list", data: listYAML, want: []string{"default/web-node-a", "ops/api-node-a"}},
		{name: "empty list", data: podList(), want: []string{}},
		{name: "decode error", data: "kind: PodList\n", wantErr: "apiVersion is missing"},
		{
			name:    "bad item names its index",
			data:    podList(listItem("a", "x:1"), listItem("b", "x:1"), listItem("c", "")),
			wantErr: "invalid pod: items[2].spec.containers[0].image: Required value: image is required",
		},
		{
			name:    "a single bad pod has no index",
			data:    strings.Replace(goodJSON, "nginx:1.27", "", 1),
			wantErr: "invalid pod: spec.containers[0].image: Required value",
		},
		{
			name:    "two items define one pod",
			data:    podList(listItem("a", "x:1"), listItem("b", "x:1"), listItem("a", "x:2")),
			wantErr: `invalid pod: items[2].metadata.name: Duplicate value: "a"`,
		},
		{
			name: "same name in two namespaces is fine",
			data: podList(listItem("a", "x:1"), strings.Replace(listItem("a", "x:1"), `"name":"a"`, `"name":"a","namespace":"ops"`, 1)),
			want: []string{"default/a-node-a", "ops/a-node-a"},
		},
		{
			name:    "the default namespace written out is the same pod",
			data:    podList(listItem("a", "x:1"), strings.Replace(listItem("a", "x:1"), `"name":"a"`, `"name":"a","namespace":"default"`, 1)),
			wantErr: `invalid pod: items[1].metadata.name: Duplicate value: "a"`,
		},
		{
			name:    "name too long with the node suffix",
			data:    podList(listItem(strings.Repeat("w", 250), "x:1")),
			wantErr: `invalid pod: items[0].metadata.name: Invalid value: "www`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, err := LoadList([]byte(tt.data), in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadList error = %v, want it to contain %q", err, tt.wantErr)
				}
				if pods != nil {
					t.Errorf("LoadList returned pods with its error")
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadList: %v", err)
			}
			got := []string{}
			for _, p := range pods {
				got = append(got, p.Namespace+"/"+p.Name)
				if p.Annotations[AnnotationConfigSource] != SourceHTTP || p.UID == "" {
					t.Errorf("pod %s lacks its static identity", p.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("LoadList = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoadListReportsEveryItem(t *testing.T) {
	data := podList(listItem("A", "x:1"), listItem("b", "x:1"), strings.Replace(listItem("c", "x:1"), `"spec":{`, `"spec":{"serviceAccountName":"default",`, 1))
	_, err := LoadList([]byte(data), Identity{NodeName: "n", Source: SourceHTTP, Origin: "http://x"})
	var inv *InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("LoadList error = %v, want an *InvalidError", err)
	}
	var got []string
	for _, e := range inv.Errs {
		got = append(got, e.Field)
	}
	if want := []string{"items[0].metadata.name", "items[2].spec.serviceAccountName"}; !slices.Equal(got, want) {
		t.Fatalf("fields = %q, want %q", got, want)
	}
}

func TestLoadListUIDStableAcrossEdits(t *testing.T) {
	in := Identity{NodeName: "n", Source: SourceHTTP, Origin: "http://x/pods", Seen: seen}
	first, err := LoadList([]byte(podList(listItem("a", "x:1"), listItem("b", "x:1"))), in)
	if err != nil {
		t.Fatal(err)
	}
	// b edited, a dropped, c added: b keeps its UID.
	second, err := LoadList([]byte(podList(listItem("c", "x:1"), listItem("b", "x:2"))), in)
	if err != nil {
		t.Fatal(err)
	}
	if first[1].UID != second[1].UID {
		t.Errorf("UID of b changed with its image: %s -> %s", first[1].UID, second[1].UID)
	}
	if first[1].Annotations[AnnotationConfigHash] == second[1].Annotations[AnnotationConfigHash] {
		t.Errorf("config.hash of b did not change with its image")
	}
	if first[0].UID == second[0].UID {
		t.Errorf("a and c share a UID")
	}
}
