package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill"
)

// hostileSeeds are small versions of the hostile inputs of
// hostile_test.go, for the fuzz targets to start from.
func hostileSeeds() []string {
	return []string{
		string(billionLaughs()),
		string(scalarAliasBomb(64, 3)),
		string(listAliasBomb(10, 3)),
		"apiVersion: v1\nkind: Pod\nmetadata: {name: web, x: " + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "}\n",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","x":` + strings.Repeat(`{"a":`, 30) + "1" + strings.Repeat("}", 30) + "}}",
		string(yamlPod("web\xff", "", "", "")),
		string(jsonPod("web", "", "", `,"env":[{"name":"A","value":"x\u0000y"}]`)),
		string(yamlPod("web", "  labels: {a: b}\n  annotations: {A/b: c}\n", "  volumes:\n  - name: v\n    hostPath: {path: ../x}\n",
			"    resources:\n      limits: {cpu: \"1e9999\", memory: 1Gi}\n      requests: {memory: \"1e999999999\"}\n")),
		string(yamlPod("web", "", "  volumes:\n  - name: v\n    downwardAPI: {items: [{path: ../x, resourceFieldRef: {resource: limits.memory, divisor: 1e30}}]}\n", "")),
		"~\n---\n~\n---\n" + goodYAML,
		"---\n---\n---\n",
		`{"apiVersion":"v1","kind":"PodList","items":[{},{},{}]}`,
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  name: again\n",
		`[1,2,3]`,
		`1e999`,
	}
}

// FuzzLoad feeds arbitrary bytes through every step the file source
// takes. None may panic, every error is one short line, and for a pod that
// passes Validate, Default must keep it valid and be idempotent.
func FuzzLoad(f *testing.F) {
	for _, seed := range append([]string{
		goodYAML,
		goodJSON,
		"",
		"null",
		"kind: Pod\n",
		strings.Replace(goodYAML, "image:", "imagee:", 1),
		goodYAML + `    ports:
    - {name: http, containerPort: 80, hostPort: 0}
    resources:
      limits: {cpu: "1", memory: 1Gi, hugepages-2Mi: 4Mi}
      requests: {cpu: 2}
    livenessProbe:
      httpGet: {port: http}
      successThreshold: 0
    lifecycle:
      preStop: {sleep: {seconds: 5}}
    volumeMounts:
    - {name: data, mountPath: /data, subPath: ../x}
    env:
    - {name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
  hostNetwork: true
  dnsPolicy: None
  activeDeadlineSeconds: 0
  volumes:
  - name: data
  - name: s
    secret: {secretName: s}
  - name: p
    projected: {sources: [{}]}
`,
	}, hostileSeeds()...) {
		f.Add([]byte(seed))
	}
	in := Identity{NodeName: "node-a", Source: SourceFile, Origin: "/etc/kubernetes/manifests/web.yaml", Seen: seen}
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, err := Load(data, in)
		checkFuzzError(t, err)
		if err == nil && pod == nil {
			t.Fatal("Load returned neither a pod nor an error")
		}
		pod, err = Decode(data)
		checkFuzzError(t, err)
		if err == nil {
			checkDefault(t, pod)
		}
	})
}

// FuzzLoadList is FuzzLoad for the HTTP source's body: one Pod or a
// PodList. A body that loads holds at most maxPods pods, each valid, no
// two of the same namespace and name.
func FuzzLoadList(f *testing.F) {
	for _, seed := range append([]string{
		goodYAML,
		listYAML,
		listJSON,
		podList(),
		"apiVersion: v1\nkind: PodList\nitems: [null]\n",
		podList(listItem("a", "x:1"), listItem("a", "x:2")),
		podList(listItem("a", "x:1"), `{"kind":"Service"}`),
		string(podListJSON(3, 1)),
	}, hostileSeeds()...) {
		f.Add([]byte(seed))
	}
	in := Identity{NodeName: "node-a", Source: SourceHTTP, Origin: "http://x/pods", Seen: seen}
	f.Fuzz(func(t *testing.T, data []byte) {
		pods, err := LoadList(data, in)
		checkFuzzError(t, err)
		if err != nil {
			if pods != nil {
				t.Fatal("LoadList returned pods with its error")
			}
			return
		}
		if len(pods) > maxPods {
			t.Fatalf("LoadList returned %d pods, more than %d", len(pods), maxPods)
		}
		seenNames := map[string]bool{}
		for _, p := range pods {
			if errs := Validate(p); len(errs) > 0 {
				t.Fatalf("LoadList returned an invalid pod: %v", errs.ToAggregate())
			}
			if key := p.Namespace + "/" + p.Name; seenNames[key] {
				t.Fatalf("LoadList returned %s twice", key)
			} else {
				seenNames[key] = true
			}
		}
		decoded, err := DecodeList(data)
		checkFuzzError(t, err)
		for _, p := range decoded {
			checkDefault(t, p)
		}
	})
}

// FuzzValidate fills pods at random, field by field (sigs.k8s.io/randfill
// driven by the fuzzer's bytes), with quantities from tiny to absurd, and
// validates them: Validate, ValidateStatic and Default never panic, never
// take long (a quantity of 1e999999999 once took minutes), and keep their
// contracts.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{"", "pod", strings.Repeat("\x00", 64), strings.Repeat("\xff", 256), "1e999999999"} {
		f.Add([]byte(seed))
	}
	suffixes := []string{"", "m", "k", "Ki", "M", "Mi", "G", "Gi", "E", "Ei", "n", "u"}
	fillQuantity := func(q *resource.Quantity, c randfill.Continue) {
		var s string
		switch c.Intn(4) {
		case 0:
			s = fmt.Sprintf("%d%s", c.Int63()%1_000_000, suffixes[c.Intn(len(suffixes))])
		case 1:
			s = fmt.Sprintf("%de%d", 1+c.Intn(9), c.Int31()) // up to 1e2147483647
		case 2:
			s = fmt.Sprintf("-%d.%03d%s", c.Intn(1000), c.Intn(1000), suffixes[c.Intn(len(suffixes))])
		default:
			s = fmt.Sprintf("%d", c.Uint64())
		}
		if p, err := resource.ParseQuantity(s); err == nil {
			*q = p
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		pod := &v1.Pod{}
		randfill.NewFromGoFuzz(data).NilChance(0.6).NumElements(0, 3).MaxDepth(10).Funcs(fillQuantity).Fill(pod)
		for _, errs := range []field.ErrorList{Validate(pod), ValidateStatic(pod)} {
			if len(errs) > 0 {
				checkFuzzError(t, &InvalidError{Errs: errs})
			}
		}
		checkDefault(t, pod)
	})
}

// checkFuzzError fails t unless err is nil or one line of at most 64 KiB
// whose every listed problem is short.
func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if msg == "" || len(msg) > 64<<10 || strings.Contains(msg, "\n") {
		t.Fatalf("error is not one short line (%d bytes): %.500q", len(msg), msg)
	}
	var inv *InvalidError
	if errors.As(err, &inv) {
		for _, e := range inv.Errs {
			if e.Field == "" {
				t.Fatalf("a problem names no field: %v", e)
			}
		}
	}
}

// checkDefault checks that Default keeps a valid pod valid, is idempotent,
// and that ValidateStatic and ApplyStaticIdentity do not panic.
func checkDefault(t *testing.T, pod *v1.Pod) {
	t.Helper()
	valid := len(Validate(pod)) == 0
	_ = ValidateStatic(pod)
	Default(pod)
	if errs := Validate(pod); valid && len(errs) > 0 {
		t.Fatalf("Default made a valid pod invalid: %v", errs.ToAggregate())
	}
	if valid {
		once := pod.DeepCopy()
		Default(pod)
		if !equality.Semantic.DeepEqual(once, pod) {
			t.Fatalf("Default is not idempotent:\n%s\nthen\n%s", once, pod)
		}
	}
	ApplyStaticIdentity(pod, Identity{NodeName: "node-a", Source: SourceFile, Origin: "/x", Seen: seen})
}

// FuzzCheckJSON checks the pre-decode scan against encoding/json: on a
// valid JSON document, checkJSON reports too deep a nesting exactly when
// the document nests deeper than maxDepth, and never panics on anything.
func FuzzCheckJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `{"a":[1,2,{"b":"c"}]}`, goodJSON, listJSON,
		`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
		`{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
		`{"spec":{"containers":[{"resources":{"limits":{"cpu":"` + strings.Repeat("1", 65) + `"}}}]}}`,
		`{"k\u0073":"\"\\"}`, `"\`, `{"a":1}}}]]`, `[[[`, `{"a" "b"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := checkJSON(data)
		if !json.Valid(data) {
			return
		}
		depth, err2 := jsonDepth(data)
		if err2 != nil {
			t.Fatalf("encoding/json cannot tokenize valid JSON: %v", err2)
		}
		deep := err != nil && strings.Contains(err.Error(), "levels deep")
		if deep != (depth > maxDepth) {
			t.Fatalf("checkJSON = %v for a document %d deep (limit %d)", err, depth, maxDepth)
		}
	})
}

// jsonDepth is the deepest nesting of objects and arrays in data, as
// encoding/json's tokenizer sees it.
func jsonDepth(data []byte) (int, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber() // a number may be too large for a float64
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return deepest, nil
		}
		if err != nil {
			return 0, err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
