package cluster

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// objectsSyncFrequency is the agent's --sync-frequency in the cluster
// tests: an update of a configMap reaches a mounted volume at the pod's
// next sync, within it and its jitter (up to half of it).
const objectsSyncFrequency = 10 * time.Second

// forbiddenInLog finds an apiserver refusal in the agent's log.
var forbiddenInLog = regexp.MustCompile(`(?i)forbidden|\b403\b`)

// testNodeObjects runs, with the node's own credentials (system:node:<name>
// under the Node authorizer and NodeRestriction, no other grant), a pod
// that uses every kind of object a pod may refer to: a configMap volume, a
// secret volume, the projected service-account volume (a token and the
// kube-root-ca.crt configMap), env from a configMap key and envFrom a
// secret, and an imagePullSecret. It then updates the configMap and waits
// for the mounted file to change, and checks that the agent's log holds no
// refusal from the apiserver.
func testNodeObjects(ctx context.Context, t *testing.T, c *Cluster, client kubernetes.Interface) {
	const (
		ns     = "default"
		cmName = "objects-config"
		secret = "objects-secret"
		pull   = "objects-pull"
		pod    = "objects"
	)
	cms := client.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName}, Data: map[string]string{"key": "v1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*v1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: secret}, StringData: map[string]string{"SECRET_VAL": "s3cret"}},
		{ObjectMeta: metav1.ObjectMeta{Name: pull}, Type: v1.SecretTypeDockerConfigJson,
			StringData: map[string]string{v1.DockerConfigJsonKey: `{"auths":{"registry.invalid":{"auth":"dTpw"}}}`}},
	} {
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sa := "/var/run/secrets/kubernetes.io/serviceaccount"
	script := fmt.Sprintf(`check() { [ "$2" = "$3" ] || { echo "$1 is '$2', want '$3'"; exit 1; }; }
check 'env CM_VAL' "$CM_VAL" v1
check 'env SECRET_VAL' "$SECRET_VAL" s3cret
check /cm/key "$(cat /cm/key)" v1
check /secret/SECRET_VAL "$(cat /secret/SECRET_VAL)" s3cret
check 'token in %[1]s' "$(head -c 3 %[1]s/token)" eyJ
grep -q 'BEGIN CERTIFICATE' %[1]s/ca.crt || { echo "no CA in %[1]s/ca.crt"; exit 1; }
check namespace "$(cat %[1]s/namespace)" %[2]s
touch /tmp/checked
until [ "$(cat /cm/key)" = v2 ]; do sleep 0.2; done
echo updated`, sa, ns)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Spec: v1.PodSpec{
			RestartPolicy:    v1.RestartPolicyNever,
			ImagePullSecrets: []v1.LocalObjectReference{{Name: pull}},
			Volumes: []v1.Volume{
				{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cmName}}}},
				{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: secret}}},
			},
			Containers: []v1.Container{{
				Name:            "check",
				Image:           "registry.k8s.io/e2e-test-images/agnhost:2.63.0",
				ImagePullPolicy: v1.PullIfNotPresent,
				Command:         []string{"sh", "-c", script},
				Env: []v1.EnvVar{{Name: "CM_VAL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: cmName}, Key: "key"}}}},
				EnvFrom:      []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: secret}}}},
				VolumeMounts: []v1.VolumeMount{{Name: "cm", MountPath: "/cm"}, {Name: "secret", MountPath: "/secret"}},
				// Ready once the script checked what it got: the
				// configMap is updated only then.
				ReadinessProbe: &v1.Probe{
					ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/tmp/checked"}}},
					PeriodSeconds: 1,
				},
				TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	created, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The ServiceAccount admission plugin adds the projected volume.
	if !hasProjectedToken(created) {
		t.Fatalf("the pod has no projected service-account token volume: %+v", created.Spec.Volumes)
	}
	failed := func(p *v1.Pod) bool {
		if p.Status.Phase != v1.PodFailed {
			return false
		}
		t.Fatalf("pod failed: %s", terminationMessage(p))
		return true
	}
	waitPod(ctx, t, client, c, pod, func(p *v1.Pod) bool { return !failed(p) && podReady(p) })

	cm, err := cms.Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["key"] = "v2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := time.Now()
	waitPod(ctx, t, client, c, pod, func(p *v1.Pod) bool { return !failed(p) && p.Status.Phase == v1.PodSucceeded })
	// The pod sees the file change at its next sync after the watch saw
	// the update: within the sync period and its jitter, plus the time
	// the status takes to be reported.
	took := time.Since(updated)
	t.Logf("the configMap update reached the mounted file and the pod finished %.1fs after it (--sync-frequency %v)", took.Seconds(), objectsSyncFrequency)
	if limit := 2*objectsSyncFrequency + 10*time.Second; took > limit {
		t.Errorf("the update took %v to reach the pod, more than %v", took, limit)
	}

	checkNoRefusals(t, c)
}

// checkNoRefusals checks that the agent's log holds no refusal from the
// apiserver.
func checkNoRefusals(t *testing.T, c *Cluster) {
	t.Helper()
	log, err := os.ReadFile(c.AgentLog())
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, line := range strings.Split(string(log), "\n") {
		if forbiddenInLog.MatchString(line) {
			refused = append(refused, line)
		}
	}
	if len(refused) > 0 {
		t.Errorf("the agent's log has %d refusals from the apiserver, the first:\n%s", len(refused), strings.Join(refused[:min(len(refused), 5)], "\n"))
	}
}

func hasProjectedToken(p *v1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

func terminationMessage(p *v1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated != nil {
			return s.State.Terminated.Message
		}
	}
	return p.Status.Message
}
