package manifest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The hostile inputs of issue 10: each is built here, handed to Load (the
// file source's path) or LoadList (the HTTP source's), and must be refused
// with a clear error, or accepted where Kubernetes accepts it, within
// bounded memory, without a panic. Time is logged, never asserted: a
// loaded CI machine would fail a wall-clock bound at random.
// BenchmarkHostileInput measures it; the allocation bound below is what
// proves, deterministically, that no input makes the decoder do
// unbounded work.
//
// Bounds are generous, for the race detector:
//   - memory: bytes allocated (runtime.MemStats.TotalAlloc, everything the
//     call allocated, freed or not) at most allocFactor times the input
//     plus hostileAllocSlack, which covers the fixed cost of a tiny input,
//     plus podCost a pod and containerCost a container; raceSlowdown times
//     that under -race, whose instrumentation allocates more;
//   - the error: one line of at most maxErrorLen bytes, however large the
//     offending value.
//
// Inputs over maxLightInput bytes are skipped under -race and -short: the
// race detector adds nothing to single-threaded decoding, and would make
// them take minutes.
const (
	allocFactor       = 50
	hostileAllocSlack = 4 << 20
	maxErrorLen       = 8 << 10
	raceSlowdown      = 10
	maxLightInput     = 256 << 10
	// A pod or a container costs a fixed amount however short its text: a
	// v1.Pod is 1.2 KiB and a v1.Container 0.4 KiB before decoding grows
	// the slices that hold them, and defaults, validation and the content
	// hash add to that. maxPods and maxContainers bound these costs.
	podCost       = 10 << 10
	containerCost = 4 << 10
)

// bigString is a string of n bytes of 'a'.
func bigString(n int) string { return strings.Repeat("a", n) }

// yamlPod is a valid pod manifest, in YAML, with lines added: meta under
// metadata, spec under spec, ctr under its one container (each line
// indented for its place). name is the pod's name.
func yamlPod(name, meta, spec, ctr string) []byte {
	return []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" + meta +
		"spec:\n" + spec + "  containers:\n  - name: app\n    image: nginx:1.27\n" + ctr)
}

// jsonPod is yamlPod in JSON: meta, spec and ctr are members (with a
// leading comma) of metadata, spec and the container.
func jsonPod(name, meta, spec, ctr string) []byte {
	return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"` + meta +
		`},"spec":{"containers":[{"name":"app","image":"nginx:1.27"` + ctr + `}]` + spec + `}}`)
}

// oneContainerJSON is a pod with one container of the given name and image.
func oneContainerJSON(name, image string) []byte {
	return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"` + name + `","image":"` + image + `"}]}}`)
}

// repeatJoin is n copies of s joined by sep.
func repeatJoin(s, sep string, n int) string {
	var b strings.Builder
	b.Grow(n * (len(s) + len(sep)))
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(s)
	}
	return b.String()
}

// containersJSON is n containers named c0, c1, ... with one port each.
func containersJSON(n int, name func(i int) string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":%q,"image":"nginx:1.27","ports":[{"containerPort":%d}]}`, name(i), 1+i%65535)
	}
	return b.String()
}

// podListJSON is a PodList of n pods p0, p1, ...; bad, when not negative,
// is the index of an item without an image.
func podListJSON(n, bad int) []byte {
	items := make([]string, n)
	for i := range items {
		image := "nginx:1.27"
		if i == bad {
			image = ""
		}
		items[i] = listItem(fmt.Sprintf("p%d", i), image)
	}
	return []byte(podList(items...))
}

// deepYAMLBlock nests n block mappings by indentation, one space a level.
func deepYAMLBlock(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nx:\n")
	for i := 1; i <= n; i++ {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("a:\n")
	}
	return []byte(b.String())
}

// billionLaughs is the classic YAML bomb: ten levels of nine aliases each
// (10^9 strings once expanded) in a few hundred bytes.
func billionLaughs() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n")
	b.WriteString("    l0: &l0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n")
	for i := 1; i < 10; i++ {
		p := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "    l%d: &l%d [%s]\n", i, i, repeatJoin(p, ",", 9))
	}
	return []byte(b.String())
}

// scalarAliasBomb anchors one string of size bytes and refers to it n
// times: go-yaml counts each alias as one node, so its alias limits never
// trigger, but the JSON it converts to repeats the string n times.
func scalarAliasBomb(size, n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: nginx:1.27\n    env:\n")
	b.WriteString("    - {name: V0, value: &v " + bigString(size) + "}\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "    - {name: V%d, value: *v}\n", i)
	}
	return []byte(b.String())
}

// listAliasBomb anchors a list of n short strings as the args of one
// container and gives them to m more, within go-yaml's alias ratio (at
// most 99% of the decoded nodes from aliases).
func listAliasBomb(n, m int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n")
	b.WriteString("  - {name: c0, image: x, args: &a [" + repeatJoin("x", ",", n) + "]}\n")
	for i := 1; i <= m; i++ {
		fmt.Fprintf(&b, "  - {name: c%d, image: x, args: *a}\n", i)
	}
	return []byte(b.String())
}

type hostileCase struct {
	name string
	data func() []byte
	// list loads data as the HTTP source does (LoadList), not as the file
	// source does (Load).
	list bool
	// wantErr is a substring of the error; empty when data is accepted.
	wantErr string
	// allocBase, when not zero, is what the memory bound is a multiple
	// of instead of the input's size: the size of the JSON the input's
	// aliases expand to.
	allocBase int
	// pods and containers are how many the input holds: each costs a
	// fixed amount besides its text (podCost, containerCost).
	pods, containers int
}

func hostileCases() []hostileCase {
	return []hostileCase{
		// Huge fields: Kubernetes' limits apply (names 253 bytes, labels
		// 63, annotations 256 KiB in all); fields Kubernetes does not
		// limit take what fits in MaxSize.
		{name: "9 MiB pod name", data: func() []byte { return yamlPod(bigString(9<<20), "", "", "") },
			wantErr: "metadata.name: Invalid value: \"aaaa"},
		{name: "9 MiB container name", data: func() []byte { return oneContainerJSON(bigString(9<<20), "nginx:1.27") },
			wantErr: "spec.containers[0].name: Invalid value: \"aaaa"},
		{name: "9 MiB init container name", data: func() []byte {
			return jsonPod("web", "", `,"initContainers":[{"name":"`+bigString(9<<20)+`","image":"x"}]`, "")
		}, wantErr: "spec.initContainers[0].name: Invalid value"},
		{name: "9 MiB env value (no limit in Kubernetes)", data: func() []byte {
			return yamlPod("web", "", "", "    env:\n    - name: BIG\n      value: "+bigString(9<<20)+"\n")
		}},
		{name: "9 MiB annotation value", data: func() []byte { return yamlPod("web", "  annotations:\n    a: "+bigString(9<<20)+"\n", "", "") },
			wantErr: "metadata.annotations: Too long: may not be more than 262144 bytes"},
		{name: "9 MiB annotation key", data: func() []byte { return jsonPod("web", `,"annotations":{"`+bigString(9<<20)+`":"x"}`, "", "") },
			wantErr: "metadata.annotations: Invalid value: \"aaaa"},
		{name: "9 MiB label value", data: func() []byte { return yamlPod("web", "  labels:\n    a: "+bigString(9<<20)+"\n", "", "") },
			wantErr: "metadata.labels: Invalid value: \"aaaa"},
		{name: "9 MiB unknown field", data: func() []byte { return jsonPod("web", `,"`+bigString(9<<20)+`":"x"`, "", "") },
			wantErr: `unknown field "metadata.aaaa`},
		{name: "9 MiB YAML key", data: func() []byte { return yamlPod("web", "  "+bigString(9<<20)+": x\n", "", "") },
			wantErr: "could not find expected ':'"},
		{name: "9 MiB image (no limit in Kubernetes)", data: func() []byte { return oneContainerJSON("app", bigString(9<<20)) }},
		{name: "just over MaxSize", data: func() []byte { return append(yamlPod("web", "", "", ""), "#"+bigString(MaxSize)+"\n"...) },
			wantErr: "manifest is larger than 10485760 bytes"},
		{name: "exactly MaxSize", data: func() []byte {
			d := append(yamlPod("web", "", "", ""), '#')
			return append(d, bigString(MaxSize-len(d))...)
		}},

		// Deep nesting: the JSON decoder stops at 10,000 levels, the YAML
		// one too; a pod is never more than about 15 deep.
		{name: "JSON arrays 10,000 deep", data: func() []byte {
			return jsonPod("web", `,"x":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000), "", "")
		}, wantErr: "nest"},
		{name: "JSON objects 10,000 deep", data: func() []byte {
			return jsonPod("web", `,"x":`+strings.Repeat(`{"a":`, 10000)+"1"+strings.Repeat("}", 10000), "", "")
		}, wantErr: "nest"},
		{name: "JSON arrays 1,000,000 deep", data: func() []byte {
			return jsonPod("web", `,"x":`+strings.Repeat("[", 1e6)+strings.Repeat("]", 1e6), "", "")
		}, wantErr: "nest"},
		{name: "YAML flow 10,000 deep", data: func() []byte {
			return yamlPod("web", "  x: "+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+"\n", "", "")
		}, wantErr: "nest"},
		{name: "YAML flow 1,000,000 deep", data: func() []byte {
			return yamlPod("web", "  x: "+strings.Repeat("[", 1e6)+strings.Repeat("]", 1e6)+"\n", "", "")
		}, wantErr: "nest"},
		{name: "YAML block sequences 10,000 deep", data: func() []byte {
			return yamlPod("web", "  x:\n  "+strings.Repeat("- ", 10000)+"x\n", "", "")
		}, wantErr: "nest"},
		{name: "YAML block mappings 4,000 deep", data: func() []byte { return deepYAMLBlock(4000) }, wantErr: "nest"},

		// Many containers: no limit, as in the kubelet; the cost is linear
		// (TestManyContainersLinear).
		{name: "10,000 containers", containers: 1e4, data: func() []byte {
			return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[` +
				containersJSON(10000, func(i int) string { return fmt.Sprintf("c%d", i) }) + `]}}`)
		}},
		{name: "10,000 containers of one name", containers: 1e4, data: func() []byte {
			return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[` +
				containersJSON(10000, func(int) string { return "c" }) + `]}}`)
		}, wantErr: `spec.containers[1].name: Duplicate value: "c"`},

		// Invalid UTF-8.
		{name: "invalid UTF-8 in a name (YAML)", data: func() []byte { return yamlPod("web\xff", "", "", "") },
			wantErr: "not valid UTF-8"},
		{name: "invalid UTF-8 in a name (JSON)", data: func() []byte { return jsonPod("web\xff", "", "", "") },
			wantErr: "not valid UTF-8"},
		{name: "invalid UTF-8 in an env value (JSON)", data: func() []byte {
			return jsonPod("web", "", "", ",\"env\":[{\"name\":\"A\",\"value\":\"\xc3\x28\"}]")
		}, wantErr: "not valid UTF-8: line 1, column 144 has the byte 0xc3"},
		{name: "invalid UTF-8 in a key (JSON)", data: func() []byte { return jsonPod("web", ",\"lab\xe2\x82els\":{}", "", "") },
			wantErr: "not valid UTF-8"},
		{name: "invalid UTF-8 on a later line (YAML)", data: func() []byte {
			return yamlPod("web", "", "", "    env:\n    - {name: A, value: \"caf\xe9\"}\n")
		}, wantErr: "not valid UTF-8: line 10, column 28 has the byte 0xe9"},
		{name: "invalid UTF-8 in a label key (YAML)", data: func() []byte { return yamlPod("web", "  labels:\n    \xed\xa0\x80: x\n", "", "") },
			wantErr: "not valid UTF-8"},

		// Path traversal.
		{name: "hostPath with ..", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    hostPath: {path: /var/lib/../../etc}\n", "")
		}, wantErr: `spec.volumes[0].hostPath.path: Invalid value: "/var/lib/../../etc": must not contain '..'`},
		{name: "hostPath relative", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    hostPath: {path: etc/kubernetes}\n", "")
		}, wantErr: `spec.volumes[0].hostPath.path: Invalid value: "etc/kubernetes": must be an absolute path`},
		{name: "hostPath ending in ..", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    hostPath: {path: /var/..}\n", "")
		}, wantErr: "must not contain '..'"},
		{name: "subPath ../../etc", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    emptyDir: {}\n", "    volumeMounts:\n    - {name: v, mountPath: /v, subPath: ../../etc}\n")
		}, wantErr: `spec.containers[0].volumeMounts[0].subPath: Invalid value: "../../etc": must not contain '..'`},
		{name: "subPath absolute", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    emptyDir: {}\n", "    volumeMounts:\n    - {name: v, mountPath: /v, subPath: /etc}\n")
		}, wantErr: `spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path`},
		{name: "subPathExpr with ..", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    emptyDir: {}\n", "    volumeMounts:\n    - {name: v, mountPath: /v, subPathExpr: $(A)/../x}\n")
		}, wantErr: `subPathExpr: Invalid value: "$(A)/../x": must not contain '..'`},
		{name: "subPathExpr expanding to .. (refused when mounted)", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    emptyDir: {}\n",
				"    env:\n    - {name: UP, value: ..}\n    volumeMounts:\n    - {name: v, mountPath: /v, subPathExpr: $(UP)}\n")
		}},

		// YAML bombs.
		{name: "billion laughs", data: billionLaughs, wantErr: "document contains excessive aliasing"},
		{name: "one 9 MiB string aliased 100 times", data: func() []byte { return scalarAliasBomb(9<<20, 100) },
			wantErr: "aliases"},
		{name: "one 100 KiB string aliased 1,000 times", data: func() []byte { return scalarAliasBomb(100<<10, 1000) },
			wantErr: "aliases"},
		{name: "a list of 1,000 aliased 100 times (within go-yaml's ratio)", containers: 101, data: func() []byte { return listAliasBomb(1000, 100) },
			allocBase: 100 * 1000 * 4},
		{name: "a list of 3,000 aliased 100 times (within go-yaml's ratio)", data: func() []byte { return listAliasBomb(3000, 100) },
			wantErr: "aliases (*name) expand it to more than 250000 keys and list entries", allocBase: 100 * 3000 * 4},
		{name: "an anchor aliased a few times", data: func() []byte {
			return yamlPod("web", "", "", "    env:\n    - {name: A, value: &v \"1\"}\n    - {name: B, value: *v}\n")
		}},

		// Duplicate keys.
		{name: "duplicate key (YAML)", data: func() []byte { return yamlPod("web", "  name: again\n", "", "") },
			wantErr: `key "name" already set in map: remove the duplicate key`},
		{name: "duplicate key (JSON)", data: func() []byte { return jsonPod("web", `,"name":"again"`, "", "") },
			wantErr: `duplicate field "metadata.name": set it only once`},
		{name: "100,000 duplicate keys (JSON)", data: func() []byte { return jsonPod("web", strings.Repeat(`,"name":"again"`, 1e5), "", "") },
			wantErr: `duplicate field "metadata.name"`},

		// Huge numbers.
		{name: "containerPort 1e30", data: func() []byte { return jsonPod("web", "", "", `,"ports":[{"containerPort":1e30}]`) },
			wantErr: "containerPort"},
		{name: "containerPort of 100 digits", data: func() []byte {
			return jsonPod("web", "", "", `,"ports":[{"containerPort":1`+strings.Repeat("0", 100)+`}]`)
		}, wantErr: "containerPort"},
		{name: "terminationGracePeriodSeconds 1e30", data: func() []byte { return jsonPod("web", "", `,"terminationGracePeriodSeconds":1e30`, "") },
			wantErr: "terminationGracePeriodSeconds"},
		{name: "cpu limit 1e9999", data: func() []byte {
			return yamlPod("web", "", "", "    resources:\n      limits: {cpu: \"1e9999\"}\n")
		}, wantErr: "spec.containers[0].resources.limits[cpu]: Invalid value: \"1e9999\""},
		{name: "memory request 1e999999999 beside a limit", data: func() []byte {
			return yamlPod("web", "", "", "    resources:\n      limits: {memory: 1Gi}\n      requests: {memory: \"1e999999999\"}\n")
		}, wantErr: "spec.containers[0].resources.requests[memory]: Invalid value: \"1e999999999\""},
		{name: "memory limit of 1,000,000 digits", data: func() []byte {
			return yamlPod("web", "", "", "    resources:\n      limits: {memory: \"1"+strings.Repeat("0", 1e6)+"\"}\n")
		}, wantErr: "spec.containers[0].resources.limits[memory]"},
		{name: "emptyDir sizeLimit of 1,000,000 digits", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    emptyDir: {sizeLimit: \"0."+strings.Repeat("0", 1e6)+"1\"}\n", "")
		}, wantErr: "spec.volumes[0].emptyDir.sizeLimit: the quantity is 1000003 characters long"},
		{name: "JSON number of 1,000,000 digits as a divisor", data: func() []byte {
			return jsonPod("web", "", "", `,"env":[{"name":"D","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":1`+strings.Repeat("0", 1e6)+`}}}]`)
		}, wantErr: "spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: the quantity is 1000001 characters long"},
		{name: "cpu divisor 1k", data: func() []byte {
			return yamlPod("web", "", "", "    env:\n    - name: D\n      valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1k}}\n")
		}, wantErr: `spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: "1k": only divisor's values 1m and 1 are supported`},
		{name: "downward API volume path ../x", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    downwardAPI: {items: [{path: ../x, fieldRef: {fieldPath: metadata.name}}]}\n", "")
		}, wantErr: `spec.volumes[0].downwardAPI.items[0].path: Invalid value: "../x": must not contain '..'`},
		{name: "downward API divisor 1e999999999", data: func() []byte {
			return yamlPod("web", "", "", "    env:\n    - name: M\n      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: \"1e999999999\"}}\n")
		}, wantErr: "divisor"},
		{name: "a long number in an env value is no quantity", data: func() []byte {
			return yamlPod("web", "", "", "    env:\n    - name: NUM\n      value: \"1"+strings.Repeat("0", 1e6)+"\"\n")
		}},

		// NUL bytes.
		{name: "NUL byte (YAML)", data: func() []byte { return yamlPod("web\x00", "", "", "") },
			wantErr: "control characters are not allowed"},
		{name: "NUL byte (JSON)", data: func() []byte { return jsonPod("web\x00", "", "", "") },
			wantErr: `manifest is not valid JSON: line 1, column 56: invalid character '\x00' in string literal`},
		{name: "JSON cut short", data: func() []byte { return []byte("\n\n  " + string(jsonPod("web", "", "", ""))[:40]) },
			wantErr: "manifest is not valid JSON: line 3, column 43: unexpected end of JSON input"},
		{name: "escaped NUL in an env value (JSON)", data: func() []byte {
			return jsonPod("web", "", "", `,"env":[{"name":"A","value":"x\u0000y"}]`)
		}, wantErr: `spec.containers[0].env[0].value: Invalid value: "x\x00y": must not contain a NUL character`},
		{name: "escaped NUL in a hostPath (YAML)", data: func() []byte {
			return yamlPod("web", "", "  volumes:\n  - name: v\n    hostPath: {path: \"/etc\\0\"}\n", "")
		}, wantErr: `spec.volumes[0].hostPath.path: Invalid value: "/etc\x00": must not contain a NUL character`},

		// Not an object.
		{name: "JSON array", data: func() []byte { return []byte(`[{"apiVersion":"v1","kind":"Pod"}]`) },
			wantErr: "manifest is not an object: it must hold one Pod"},
		{name: "JSON string", data: func() []byte { return []byte(`"apiVersion: v1"`) }, wantErr: "manifest is not an object"},
		{name: "JSON number", data: func() []byte { return []byte(`1e999`) }, wantErr: "manifest is not an object"},
		{name: "JSON null", data: func() []byte { return []byte(`null`) }, wantErr: "manifest is empty"},
		{name: "YAML scalar", data: func() []byte { return []byte("just text\n") }, wantErr: "manifest is not an object"},
		{name: "a PodList in a file", data: func() []byte { return podListJSON(2, -1) }, wantErr: `kind is "PodList": set "kind: Pod"`},

		// Many documents.
		{name: "2,000,000 empty YAML documents", data: func() []byte { return []byte(strings.Repeat("---\n", 2e6)) },
			wantErr: "manifest is empty"},
		{name: "1,000,000 null YAML documents", data: func() []byte { return []byte(strings.Repeat("~\n---\n", 1e6)) },
			wantErr: "manifest holds more than 100 YAML documents: it must hold one Pod"},
		{name: "a pod after 99 null YAML documents", data: func() []byte { return append([]byte(strings.Repeat("~\n---\n", 99)), goodYAML...) }},

		// The HTTP source's PodList.
		{name: "PodList of 10,000 pods", list: true, pods: 1e4, containers: 1e4, data: func() []byte { return podListJSON(10000, -1) }},
		{name: "PodList of 10,000 pods, the last bad", list: true, pods: 1e4, containers: 1e4, data: func() []byte { return podListJSON(10000, 9999) },
			wantErr: "items[9999].spec.containers[0].image: Required value"},
		{name: "PodList of 10,000 pods of one name", list: true, pods: 1e4, containers: 1e4, data: func() []byte {
			items := make([]string, 10000)
			for i := range items {
				items[i] = listItem("same", "x:1")
			}
			return []byte(podList(items...))
		}, wantErr: `items[1].metadata.name: Duplicate value: "same"`},
		{name: "PodList of 10,000 empty items", list: true, pods: 1e4, data: func() []byte {
			return []byte(`{"apiVersion":"v1","kind":"PodList","items":[` + repeatJoin("{}", ",", 1e4) + `]}`)
		}, wantErr: "items[0].metadata.name: Required value"},
		{name: "PodList of 10,001 pods", list: true, data: func() []byte { return podListJSON(10001, -1) },
			wantErr: "items: the PodList holds more than 10000 pods"},
		{name: "PodList of 3,000,000 empty items", list: true, data: func() []byte {
			return []byte(`{"apiVersion":"v1","kind":"PodList","items":[` + repeatJoin("{}", ",", 3e6) + `]}`)
		}, wantErr: "items: the PodList holds more than 10000 pods"},
		{name: "PodList of 2,000 pods of 5 containers", list: true, pods: 2000, containers: 1e4, data: func() []byte {
			items := make([]string, 2000)
			for i := range items {
				items[i] = fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"containers":[%s]}}`, i,
					containersJSON(5, func(j int) string { return fmt.Sprintf("c%d", j) }))
			}
			return []byte(podList(items...))
		}},
		{name: "PodList of 2,001 pods of 5 containers", list: true, data: func() []byte {
			items := make([]string, 2001)
			for i := range items {
				items[i] = fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"containers":[%s]}}`, i,
					containersJSON(5, func(j int) string { return fmt.Sprintf("c%d", j) }))
			}
			return []byte(podList(items...))
		}, wantErr: "items[2000].spec.containers: the manifest holds more than 10000 containers"},
		{name: "PodList whose items is a number", list: true, data: func() []byte { return []byte(`{"apiVersion":"v1","kind":"PodList","items":1e999}`) },
			wantErr: "decode PodList"},
	}
}

// BenchmarkHostileInput times each hostile input's refusal (or
// acceptance): go test -run '^$' -bench HostileInput ./agent/manifest/.
func BenchmarkHostileInput(b *testing.B) {
	in := Identity{NodeName: "node-a", Source: SourceFile, Origin: "/etc/kubernetes/manifests/x.yaml", Seen: seen}
	for _, tt := range hostileCases() {
		data := tt.data()
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if tt.list {
					_, _ = LoadList(data, in)
				} else {
					_, _ = Load(data, in)
				}
			}
		})
	}
}

func TestHostileInput(t *testing.T) {
	in := Identity{NodeName: "node-a", Source: SourceFile, Origin: "/etc/kubernetes/manifests/x.yaml", Seen: seen}
	for _, tt := range hostileCases() {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data()
			if len(data) > maxLightInput && (raceDetector || testing.Short()) {
				t.Skipf("input of %d bytes: run without -race and -short", len(data))
			}
			load := func() error {
				if tt.list {
					_, err := LoadList(data, in)
					return err
				}
				_, err := Load(data, in)
				return err
			}
			var err error
			c := measure(func() { err = load() })
			t.Logf("input %d bytes: %v, %d bytes allocated (%.1fx the input)", len(data), c.elapsed.Round(time.Millisecond), c.alloc, float64(c.alloc)/float64(len(data)))
			checkHostileOutcome(t, err, tt.wantErr)
			base := max(len(data), tt.allocBase)
			fixed := hostileAllocSlack + tt.pods*podCost + tt.containers*containerCost
			limit := uint64(allocFactor*base + fixed)
			if raceDetector {
				limit *= raceSlowdown
			}
			if c.alloc > limit {
				t.Errorf("allocated %d bytes, want at most %d (%dx %d + %d)", c.alloc, limit, allocFactor, base, fixed)
			}
		})
	}
}

// checkHostileOutcome checks that err is nil when wantErr is empty, and
// otherwise a short, one-line error containing wantErr.
func checkHostileOutcome(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("refused, want accepted: %.2000s", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted, want an error containing %q", wantErr)
	}
	msg := err.Error()
	t.Logf("error: %.300s", msg)
	if !strings.Contains(msg, wantErr) {
		t.Errorf("error = %.2000q, want it to contain %q", msg, wantErr)
	}
	if len(msg) > maxErrorLen {
		t.Errorf("error is %d bytes long, want at most %d", len(msg), maxErrorLen)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %.2000q", msg)
	}
	var inv *InvalidError
	if errors.As(err, &inv) && len(inv.Errs) == 0 {
		t.Errorf("InvalidError without errors")
	}
}

// cost is what one call took.
type cost struct {
	elapsed time.Duration
	alloc   uint64 // bytes allocated, freed or not
}

// measure runs f once and returns its time and allocations. Tests that
// measure must not run in parallel.
func measure(f func()) cost {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return cost{elapsed: elapsed, alloc: after.TotalAlloc - before.TotalAlloc}
}

// TestManyContainersLinear shows that the cost of a pod grows linearly with
// its containers, and that of a PodList with its pods: ten times as many
// allocate at most fifteen times as much. Allocations are counted rather
// than time, which a shared machine makes noisy.
func TestManyContainersLinear(t *testing.T) {
	if raceDetector || testing.Short() {
		t.Skip("thousands of pods: run without -race and -short")
	}
	in := Identity{NodeName: "node-a", Source: SourceHTTP, Origin: "http://x/pods", Seen: seen}
	pod := func(n int) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[` +
			containersJSON(n, func(i int) string { return fmt.Sprintf("c%d", i) }) + `]}}`)
	}
	tests := []struct {
		name string
		data func(n int) []byte
	}{
		{name: "containers of one pod", data: pod},
		{name: "pods of a PodList", data: func(n int) []byte { return podListJSON(n, -1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var costs [2]cost
			for i, n := range []int{1000, 10000} {
				data := tt.data(n)
				var err error
				costs[i] = measure(func() { _, err = LoadList(data, in) })
				if err != nil {
					t.Fatalf("%d: %v", n, err)
				}
				t.Logf("%d: %v, %d bytes allocated (%d a piece)", n, costs[i].elapsed.Round(time.Millisecond), costs[i].alloc, costs[i].alloc/uint64(n))
			}
			if ratio := float64(costs[1].alloc) / float64(costs[0].alloc); ratio > 15 {
				t.Errorf("ten times as many allocate %.1f times as much, want at most 15", ratio)
			}
		})
	}
}
