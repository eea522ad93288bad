package manifest

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func volume(name string, src v1.VolumeSource) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: src}
}

func TestValidateStatic(t *testing.T) {
	secretRef := &v1.LocalObjectReference{Name: "s"}
	tests := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string
	}{
		{name: "nothing referenced", mutate: func(*v1.Pod) {}},
		{name: "node-local volumes and downward API", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{
				volume("host", v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/etc/app"}}),
				volume("scratch", v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}),
				volume("info", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{}}}}}),
				volume("nfs", v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/x"}}),
				volume("rbd", v1.VolumeSource{RBD: &v1.RBDVolumeSource{}}),
			}
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env,
				v1.EnvVar{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
		}},
		{
			name:   "service account",
			mutate: func(p *v1.Pod) { p.Spec.ServiceAccountName = "default" },
			want:   []string{"spec.serviceAccountName: Forbidden: static pods may not reference serviceaccounts"},
		},
		{
			name:   "deprecated service account",
			mutate: func(p *v1.Pod) { p.Spec.DeprecatedServiceAccount = "builder" },
			want:   []string{"spec.serviceAccount: Forbidden: static pods may not reference serviceaccounts"},
		},
		{
			name:   "image pull secrets",
			mutate: func(p *v1.Pod) { p.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "regcred"}} },
			want:   []string{"spec.imagePullSecrets[0]: Forbidden: static pods may not reference secrets"},
		},
		{
			name:   "resource claims",
			mutate: func(p *v1.Pod) { p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu"}} },
			want:   []string{"spec.resourceClaims: Forbidden: static pods may not reference resourceclaims"},
		},
		{
			name: "ephemeral containers",
			mutate: func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			},
			want: []string{"spec.ephemeralContainers: Forbidden: cannot be set on create"},
		},
		{
			name: "volumes referencing API objects",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					volume("a", v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}),
					volume("b", v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}),
					volume("c", v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "pvc"}}),
					volume("d", v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}),
					volume("e", v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "x"}}),
					volume("f", v1.VolumeSource{Glusterfs: &v1.GlusterfsVolumeSource{}}),
					volume("g", v1.VolumeSource{AzureFile: &v1.AzureFileVolumeSource{}}),
					volume("h", v1.VolumeSource{RBD: &v1.RBDVolumeSource{SecretRef: secretRef}}),
					volume("i", v1.VolumeSource{CephFS: &v1.CephFSVolumeSource{SecretRef: secretRef}}),
					volume("j", v1.VolumeSource{ISCSI: &v1.ISCSIVolumeSource{SecretRef: secretRef}}),
				}
			},
			want: []string{
				"spec.volumes[0].secret: Forbidden: static pods may not reference secrets: a static pod runs without the API server; put the files on the node and mount them with a hostPath volume",
				"spec.volumes[1].configMap: Forbidden: static pods may not reference configmaps",
				"spec.volumes[2].persistentVolumeClaim: Forbidden: static pods may not reference persistentvolumeclaims",
				"spec.volumes[3].ephemeral: Forbidden: static pods may not reference persistentvolumeclaims",
				"spec.volumes[4].csi: Forbidden: static pods may not reference csidrivers",
				"spec.volumes[5].glusterfs: Forbidden: static pods may not reference endpoints",
				"spec.volumes[6].azureFile: Forbidden: static pods may not reference secrets",
				"spec.volumes[7].rbd.secretRef: Forbidden: static pods may not reference secrets",
				"spec.volumes[8].cephfs.secretRef: Forbidden: static pods may not reference secrets",
				"spec.volumes[9].iscsi.secretRef: Forbidden: static pods may not reference secrets",
			},
		},
		{
			name: "projected sources referencing API objects",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{volume("p", v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{DownwardAPI: &v1.DownwardAPIProjection{}},
					{Secret: &v1.SecretProjection{}},
					{ConfigMap: &v1.ConfigMapProjection{}},
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
					{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "ca"}},
					{PodCertificate: &v1.PodCertificateProjection{}},
					{},
				}}})}
			},
			want: []string{
				"spec.volumes[0].projected.sources[1].secret: Forbidden: static pods may not reference secrets",
				"spec.volumes[0].projected.sources[2].configMap: Forbidden: static pods may not reference configmaps",
				"spec.volumes[0].projected.sources[3].serviceAccountToken: Forbidden: static pods may not reference serviceaccounts",
				"spec.volumes[0].projected.sources[4].clusterTrustBundle: Forbidden: static pods may not reference clustertrustbundles",
				"spec.volumes[0].projected.sources[5].podCertificate: Forbidden: static pods may not reference podcertificates",
				"spec.volumes[0].projected.sources[6]: Required value: must specify one projection source",
			},
		},
		{
			name: "env referencing API objects",
			mutate: func(p *v1.Pod) {
				p.Spec.InitContainers[0].Env = []v1.EnvVar{
					{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}},
					{Name: "C", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{Key: "k"}}},
				}
				p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{
					{SecretRef: &v1.SecretEnvSource{}},
					{ConfigMapRef: &v1.ConfigMapEnvSource{}},
				}
			},
			want: []string{
				"spec.initContainers[0].env[0].valueFrom.secretKeyRef: Forbidden: static pods may not reference secrets",
				"spec.initContainers[0].env[1].valueFrom.configMapKeyRef: Forbidden: static pods may not reference configmaps",
				"spec.containers[0].envFrom[0].secretRef: Forbidden: static pods may not reference secrets",
				"spec.containers[0].envFrom[1].configMapRef: Forbidden: static pods may not reference configmaps",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := validPod()
			tt.mutate(pod)
			before := pod.DeepCopy()
			var got []string
			for _, e := range ValidateStatic(pod) {
				got = append(got, e.Error())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ValidateStatic = %q, want %d errors like %q", got, len(tt.want), tt.want)
			}
			for i := range tt.want {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, got[i], tt.want[i])
				}
			}
			if !equalPods(before, pod) {
				t.Errorf("ValidateStatic modified the pod")
			}
		})
	}
}

func TestLoadRejectsStaticReferences(t *testing.T) {
	data := goodYAML + "  serviceAccountName: default\n  volumes:\n  - name: s\n    secret:\n      secretName: s\n"
	_, err := Load([]byte(data), fileIdentity("n", "/m/web.yaml"))
	want := "invalid pod: spec.serviceAccountName: Forbidden: static pods may not reference serviceaccounts"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "; spec.volumes[0].secret: Forbidden") {
		t.Fatalf("Load error = %v, want it to contain %q and name spec.volumes[0].secret", err, want)
	}
}
