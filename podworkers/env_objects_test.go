package podworkers

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// fakeObjects serves configMaps and secrets of namespace "ns".
type fakeObjects struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

func (f fakeObjects) GetConfigMap(_ context.Context, _, name string) (*v1.ConfigMap, error) {
	if cm, ok := f.configMaps[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("configmaps"), name)
}

func (f fakeObjects) GetSecret(_ context.Context, _, name string) (*v1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(v1.Resource("secrets"), name)
}

func TestEnvFromObjects(t *testing.T) {
	objects := fakeObjects{
		configMaps: map[string]*v1.ConfigMap{"cm": {Data: map[string]string{"B": "2", "A": "1", "bad-name": "x", "1-data-1": "y", "a=b": "z", "tab\tname": "w"}}},
		secrets:    map[string]*v1.Secret{"sec": {Data: map[string][]byte{"password": []byte("pw")}}},
	}
	cmRef := func(name, key string, optional bool) *v1.EnvVarSource {
		return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: ptr.To(optional)}}
	}
	tests := []struct {
		name    string
		c       v1.Container
		objects objectSource
		want    string
		wantErr string
	}{
		{
			name: "envFrom configMap sorted and prefixed, env overrides, names with = or control characters skipped",
			c: v1.Container{
				Name:    "c",
				EnvFrom: []v1.EnvFromSource{{Prefix: "P_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
				Env:     []v1.EnvVar{{Name: "P_A", Value: "override"}},
			},
			objects: objects,
			want:    "P_1-data-1=y,P_A=override,P_B=2,P_bad-name=x",
		},
		{
			name:    "envFrom without a prefix: names that start with a digit are set",
			c:       v1.Container{Name: "c", EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}},
			objects: objects,
			want:    "1-data-1=y,A=1,B=2,bad-name=x",
		},
		{
			name:    "secretKeyRef and configMapKeyRef",
			c:       v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "password"}}}, {Name: "X", ValueFrom: cmRef("cm", "A", false)}, {Name: "Y", Value: "$(X)-y"}}},
			objects: objects,
			want:    "PW=pw,X=1,Y=1-y",
		},
		{
			name:    "optional missing key left out",
			c:       v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("cm", "nope", true)}, {Name: "Z", ValueFrom: cmRef("missing", "k", true)}}},
			objects: objects,
			want:    "",
		},
		{
			name:    "required missing configMap",
			c:       v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("missing", "k", false)}}},
			objects: objects,
			wantErr: `configMap "missing" not found`,
		},
		{
			name:    "standalone: needs an apiserver",
			c:       v1.Container{Name: "c", Env: []v1.EnvVar{{Name: "X", ValueFrom: cmRef("cm", "A", false)}}},
			wantErr: "needs an apiserver source",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Containers: []v1.Container{tt.c}}}
			penv := podEnv{Objects: readEnvObjects(context.Background(), tt.objects, pod)}
			got, err := makeEnv(pod, &pod.Spec.Containers[0], penv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kv []string
			for _, e := range got {
				kv = append(kv, e.Key+"="+string(e.Value))
			}
			if s := strings.Join(kv, ","); s != tt.want {
				t.Errorf("env = %s, want %s", s, tt.want)
			}
		})
	}
}

func TestPodCredentials(t *testing.T) {
	auth := base64.StdEncoding.EncodeToString([]byte("user:pass"))
	objects := fakeObjects{secrets: map[string]*v1.Secret{
		"regcred": {Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example:5000":{"auth":"` + auth + `"}}}`)}},
		"other":   {Data: map[string][]byte{"x": nil}},
	}}
	tests := []struct {
		name    string
		secrets []string
		repo    string
		want    []string
	}{
		{name: "matching registry", secrets: []string{"other", "missing", "regcred"}, repo: "registry.example:5000/team/app", want: []string{"user"}},
		{name: "other registry", secrets: []string{"regcred"}, repo: "elsewhere.example/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Syncer{cfg: SyncerConfig{Objects: objects}}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
			for _, name := range tt.secrets {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: name})
			}
			var got []string
			for _, c := range s.podCredentials(context.Background(), pod, tt.repo) {
				got = append(got, c.Username)
				if c.Password != "pass" {
					t.Errorf("password = %q", c.Password)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("credentials = %v, want %v", got, tt.want)
			}
		})
	}
}
