package manifest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/minikubelet/minikubelet/agent/sources"
)

// FuzzLoad feeds arbitrary bytes through every step a source takes. None may
// panic, and for a pod that passes Validate, Default must keep it valid and
// be idempotent.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		goodYAML,
		goodJSON,
		listYAML,
		listJSON,
		podList(),
		"",
		"null",
		"kind: Pod\n",
		"apiVersion: v1\nkind: PodList\nitems: [null]\n",
		strings.Replace(goodYAML, "image:", "imagee:", 1),
		podList(listItem("a", "x:1"), listItem("a", "x:2")),
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
	} {
		f.Add([]byte(seed))
	}
	in := Identity{NodeName: "node-a", Source: sources.HTTP, Origin: "http://x/pods", Seen: seen}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Load(data, in)
		_, _ = LoadList(data, in)
		_, _ = Decode(data)
		pods, err := DecodeList(data)
		if err != nil {
			return
		}
		for _, pod := range pods {
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
			_ = ValidateStatic(pod)
			ApplyStaticIdentity(pod, in)
		}
	})
}
