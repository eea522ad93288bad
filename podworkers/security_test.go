package podworkers

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func TestEffectiveSecurityContext(t *testing.T) {
	podSC := &v1.PodSecurityContext{
		RunAsUser:      ptr.To[int64](1000),
		RunAsGroup:     ptr.To[int64](3000),
		RunAsNonRoot:   ptr.To(true),
		SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1"},
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		FSGroup:        ptr.To[int64](2000),
	}
	tests := []struct {
		name  string
		pod   *v1.PodSecurityContext
		ctr   *v1.SecurityContext
		check func(t *testing.T, sc v1.SecurityContext)
	}{
		{
			name: "neither",
			check: func(t *testing.T, sc v1.SecurityContext) {
				if !reflect.DeepEqual(sc, v1.SecurityContext{}) {
					t.Errorf("effective = %+v, want empty", sc)
				}
			},
		},
		{
			name: "pod only: the inherited fields",
			pod:  podSC,
			check: func(t *testing.T, sc v1.SecurityContext) {
				if *sc.RunAsUser != 1000 || *sc.RunAsGroup != 3000 || !*sc.RunAsNonRoot || sc.SELinuxOptions.Level != "s0:c1" || sc.SeccompProfile.Type != v1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("effective = %+v", sc)
				}
			},
		},
		{
			name: "container wins",
			pod:  podSC,
			ctr: &v1.SecurityContext{
				RunAsUser:      ptr.To[int64](1),
				RunAsGroup:     ptr.To[int64](2),
				RunAsNonRoot:   ptr.To(false),
				SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c2"},
				SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
			},
			check: func(t *testing.T, sc v1.SecurityContext) {
				if *sc.RunAsUser != 1 || *sc.RunAsGroup != 2 || *sc.RunAsNonRoot || sc.SELinuxOptions.Level != "s0:c2" || sc.SeccompProfile.Type != v1.SeccompProfileTypeUnconfined {
					t.Errorf("effective = %+v", sc)
				}
			},
		},
		{
			name: "container fields the pod does not have, pod fields kept",
			pod:  podSC,
			ctr: &v1.SecurityContext{
				Privileged:               ptr.To(true),
				ReadOnlyRootFilesystem:   ptr.To(true),
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &v1.Capabilities{Drop: []v1.Capability{"ALL"}},
				ProcMount:                ptr.To(v1.UnmaskedProcMount),
			},
			check: func(t *testing.T, sc v1.SecurityContext) {
				if !*sc.Privileged || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" || *sc.ProcMount != v1.UnmaskedProcMount {
					t.Errorf("effective = %+v", sc)
				}
				if *sc.RunAsUser != 1000 || *sc.RunAsGroup != 3000 || !*sc.RunAsNonRoot {
					t.Errorf("pod fields lost: %+v", sc)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.SecurityContext = tt.pod
				p.Spec.Containers[0].SecurityContext = tt.ctr
			})
			tt.check(t, effectiveSecurityContext(pod, &pod.Spec.Containers[0]))
		})
	}
}

func TestLinuxSecurityContext(t *testing.T) {
	root := imageUser{UID: ptr.To[int64](0)}
	tests := []struct {
		name  string
		pod   *v1.PodSecurityContext
		ctr   *v1.SecurityContext
		user  imageUser
		check func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext)
	}{
		{
			name: "defaults",
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Privileged || sc.ReadonlyRootfs || sc.NoNewPrivs || sc.Capabilities != nil || sc.Seccomp != nil || sc.Apparmor != nil || sc.RunAsGroup != nil || sc.SupplementalGroups != nil {
					t.Errorf("security context = %v, want nothing set", sc)
				}
				if sc.GetRunAsUser().GetValue() != 0 || sc.RunAsUser == nil {
					t.Errorf("runAsUser = %v, want the image's 0", sc.RunAsUser)
				}
				if !reflect.DeepEqual(sc.MaskedPaths, defaultMaskedPaths()) || !reflect.DeepEqual(sc.ReadonlyPaths, defaultReadonlyPaths()) {
					t.Errorf("masked %v, read-only %v: want the Default procMount's", sc.MaskedPaths, sc.ReadonlyPaths)
				}
				if sc.GetNamespaceOptions().GetNetwork() != runtimeapi.NamespaceMode_POD {
					t.Errorf("namespace options = %v", sc.NamespaceOptions)
				}
			},
		},
		{
			name: "run as user and group from the pod, groups with fsGroup first",
			pod: &v1.PodSecurityContext{
				RunAsUser:          ptr.To[int64](1000),
				RunAsGroup:         ptr.To[int64](3000),
				FSGroup:            ptr.To[int64](2000),
				SupplementalGroups: []int64{4000, 5000},
			},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetRunAsUser().GetValue() != 1000 || sc.GetRunAsGroup().GetValue() != 3000 || sc.RunAsUsername != "" {
					t.Errorf("user %v group %v name %q", sc.RunAsUser, sc.RunAsGroup, sc.RunAsUsername)
				}
				if want := []int64{2000, 4000, 5000}; !reflect.DeepEqual(sc.SupplementalGroups, want) {
					t.Errorf("supplemental groups = %v, want %v", sc.SupplementalGroups, want)
				}
			},
		},
		{
			name: "container user wins over pod and image",
			pod:  &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)},
			ctr:  &v1.SecurityContext{RunAsUser: ptr.To[int64](7)},
			user: imageUser{UID: ptr.To[int64](99)},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetRunAsUser().GetValue() != 7 {
					t.Errorf("runAsUser = %v, want 7", sc.RunAsUser)
				}
			},
		},
		{
			name: "image's named user passed by name",
			user: imageUser{Name: "www"},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.RunAsUser != nil || sc.RunAsUsername != "www" {
					t.Errorf("user %v name %q, want name www", sc.RunAsUser, sc.RunAsUsername)
				}
			},
		},
		{
			name: "unknown image user: left to the runtime",
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.RunAsUser != nil || sc.RunAsUsername != "" {
					t.Errorf("user %v name %q, want none", sc.RunAsUser, sc.RunAsUsername)
				}
			},
		},
		{
			name: "privileged, read-only root, capabilities",
			ctr: &v1.SecurityContext{
				Privileged:             ptr.To(true),
				ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &v1.Capabilities{
					Add:  []v1.Capability{"NET_BIND_SERVICE", "CAP_SYS_TIME", "cap_chown"},
					Drop: []v1.Capability{"ALL", "CAP_NET_RAW"},
				},
			},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if !sc.Privileged || !sc.ReadonlyRootfs {
					t.Errorf("privileged %v readonly %v", sc.Privileged, sc.ReadonlyRootfs)
				}
				want := &runtimeapi.Capability{AddCapabilities: []string{"NET_BIND_SERVICE", "SYS_TIME", "chown"}, DropCapabilities: []string{"ALL", "NET_RAW"}}
				if sc.Capabilities.String() != want.String() {
					t.Errorf("capabilities = %v, want %v (no CAP_ prefix: containerd adds it)", sc.Capabilities, want)
				}
			},
		},
		{
			name: "allowPrivilegeEscalation false sets no_new_privs",
			ctr:  &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if !sc.NoNewPrivs {
					t.Error("NoNewPrivs = false, want true")
				}
			},
		},
		{
			name: "allowPrivilegeEscalation true leaves it off",
			ctr:  &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.NoNewPrivs {
					t.Error("NoNewPrivs = true, want false")
				}
			},
		},
		{
			name: "unmasked procMount",
			ctr:  &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 || sc.ReadonlyPaths == nil || len(sc.ReadonlyPaths) != 0 {
					t.Errorf("masked %v, read-only %v: want empty", sc.MaskedPaths, sc.ReadonlyPaths)
				}
			},
		},
		{
			name: "SELinux options",
			pod:  &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "l"}},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				want := &runtimeapi.SELinuxOption{User: "u", Role: "r", Type: "t", Level: "l"}
				if sc.SelinuxOptions.String() != want.String() {
					t.Errorf("selinux = %v, want %v", sc.SelinuxOptions, want)
				}
			},
		},
		{
			name: "seccomp RuntimeDefault from the pod",
			pod:  &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
					t.Errorf("seccomp = %v", sc.Seccomp)
				}
			},
		},
		{
			name: "seccomp Unconfined",
			ctr:  &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined}},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.Seccomp == nil || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
					t.Errorf("seccomp = %v", sc.Seccomp)
				}
			},
		},
		{
			name: "seccomp Localhost under the profile root",
			ctr:  &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("team/audit.json")}},
			user: root,
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_Localhost || sc.Seccomp.LocalhostRef != "/var/lib/minikubelet/seccomp/team/audit.json" {
					t.Errorf("seccomp = %v", sc.Seccomp)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.SecurityContext = tt.pod
				p.Spec.Containers[0].SecurityContext = tt.ctr
			})
			sc, err := linuxSecurityContext(pod, &pod.Spec.Containers[0], tt.user, "/var/lib/minikubelet/seccomp")
			if err != nil {
				t.Fatalf("linuxSecurityContext: %v", err)
			}
			tt.check(t, sc)
		})
	}
}

func TestSeccompLocalhostWithoutProfile(t *testing.T) {
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
	})
	_, err := linuxSecurityContext(pod, &pod.Spec.Containers[0], imageUser{}, "/seccomp")
	var ce *configError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "localhostProfile") {
		t.Errorf("err = %v, want a configError naming localhostProfile", err)
	}
}

func TestRunAsNonRoot(t *testing.T) {
	const podRef = `"web_ns(uid-web)"`
	tests := []struct {
		name    string
		pod     *v1.PodSecurityContext
		ctr     *v1.SecurityContext
		user    imageUser
		wantErr string // "" = allowed
	}{
		{name: "not asked, root image", user: imageUser{UID: ptr.To[int64](0)}},
		{name: "false, root image", ctr: &v1.SecurityContext{RunAsNonRoot: ptr.To(false)}, user: imageUser{UID: ptr.To[int64](0)}},
		{
			name:    "root image",
			ctr:     &v1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			user:    imageUser{UID: ptr.To[int64](0)},
			wantErr: "container has runAsNonRoot and image will run as root (pod: " + podRef + ", container: app)",
		},
		{
			name:    "asked by the pod, root image",
			pod:     &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			user:    imageUser{UID: ptr.To[int64](0)},
			wantErr: "container has runAsNonRoot and image will run as root (pod: " + podRef + ", container: app)",
		},
		{
			name:    "explicit runAsUser 0",
			ctr:     &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			user:    imageUser{UID: ptr.To[int64](1000)},
			wantErr: "container's runAsUser breaks non-root policy (pod: " + podRef + ", container: app)",
		},
		{
			name:    "pod runAsUser 0",
			pod:     &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			user:    imageUser{UID: ptr.To[int64](1000)},
			wantErr: "container's runAsUser breaks non-root policy (pod: " + podRef + ", container: app)",
		},
		{
			name: "container runAsUser overrides the pod's 0",
			pod:  &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)},
			ctr:  &v1.SecurityContext{RunAsUser: ptr.To[int64](1000)},
			user: imageUser{UID: ptr.To[int64](0)},
		},
		{
			name: "runAsUser on a root image",
			ctr:  &v1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)},
			user: imageUser{UID: ptr.To[int64](0)},
		},
		{
			name: "non-root image",
			ctr:  &v1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			user: imageUser{UID: ptr.To[int64](65534)},
		},
		{
			name:    "named image user cannot be verified",
			ctr:     &v1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			user:    imageUser{Name: "nobody"},
			wantErr: "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify user is non-root (pod: " + podRef + ", container: app)",
		},
		{
			name:    "invalid image uid",
			ctr:     &v1.SecurityContext{RunAsNonRoot: ptr.To(true)},
			user:    imageUser{UID: ptr.To[int64](1 << 32)},
			wantErr: "container has runAsNonRoot and image has an invalid user id (4294967296)",
		},
		{
			name:    "pod asks, container does not unset it",
			pod:     &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			ctr:     &v1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)},
			user:    imageUser{UID: ptr.To[int64](0)},
			wantErr: "image will run as root",
		},
		{
			name: "container unsets the pod's",
			pod:  &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			ctr:  &v1.SecurityContext{RunAsNonRoot: ptr.To(false)},
			user: imageUser{UID: ptr.To[int64](0)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.SecurityContext = tt.pod
				p.Spec.Containers[0].SecurityContext = tt.ctr
			})
			_, err := containerConfig(pod, &pod.Spec.Containers[0], containerOpts{ImageRef: "img", ImageUser: tt.user})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want the container allowed", err)
				}
				return
			}
			var ce *configError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a configError", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %q, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestImageUserOf(t *testing.T) {
	tests := []struct {
		name string
		img  *runtimeapi.Image
		want imageUser
	}{
		{"no image: root", nil, imageUser{UID: ptr.To[int64](0)}},
		{"no user: root", &runtimeapi.Image{Id: "x"}, imageUser{UID: ptr.To[int64](0)}},
		{"uid", &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 1000}}, imageUser{UID: ptr.To[int64](1000)}},
		{"uid wins over name", &runtimeapi.Image{Uid: &runtimeapi.Int64Value{Value: 5}, Username: "x"}, imageUser{UID: ptr.To[int64](5)}},
		{"name", &runtimeapi.Image{Username: "www"}, imageUser{Name: "www"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := imageUserOf(tt.img); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("imageUserOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A sandbox holding a privileged container is itself created privileged
// (containerd refuses the container otherwise), and fsGroup joins the
// sandbox's supplemental groups.
func TestSandboxConfigPrivilegedAndFSGroup(t *testing.T) {
	s := NewSyncer(SyncerConfig{PodLogsDir: "/var/log/pods"})
	tests := []struct {
		name       string
		opt        func(*v1.Pod)
		privileged bool
	}{
		{"none", func(*v1.Pod) {}, false},
		{"privileged false", func(p *v1.Pod) {
			p.Spec.Containers[1].SecurityContext = &v1.SecurityContext{Privileged: ptr.To(false)}
		}, false},
		{"regular container", func(p *v1.Pod) {
			p.Spec.Containers[1].SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
		}, true},
		{"init container", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", SecurityContext: &v1.SecurityContext{Privileged: ptr.To(true)}}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := newPod("web", []string{"app", "side"}, tt.opt)
			if got := s.sandboxConfig(pod, 0).GetLinux().GetSecurityContext().GetPrivileged(); got != tt.privileged {
				t.Errorf("sandbox privileged = %v, want %v", got, tt.privileged)
			}
		})
	}
	pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
		p.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{5}}
	})
	if got := s.sandboxConfig(pod, 0).GetLinux().GetSecurityContext().GetSupplementalGroups(); !reflect.DeepEqual(got, []int64{2000, 5}) {
		t.Errorf("sandbox supplemental groups = %v, want [2000 5]", got)
	}
}

// Through the syncer, with the image's user from the runtime: runAsNonRoot
// refuses a root image or a named user with the kubelet's
// CreateContainerConfigError and creates nothing; a numeric non-root user
// is passed on as the container's runAsUser.
func TestSyncRunAsNonRootUsesImageUser(t *testing.T) {
	tests := []struct {
		name       string
		img        *runtimeapi.Image // nil: pulled, no user (root)
		wantReason string
		wantMsg    string
		wantUser   *int64
		wantName   string
	}{
		{name: "pulled root image", wantReason: "CreateContainerConfigError", wantMsg: "image will run as root"},
		{name: "present root image", img: &runtimeapi.Image{Id: "img-app"}, wantReason: "CreateContainerConfigError", wantMsg: "image will run as root"},
		{name: "named user", img: &runtimeapi.Image{Id: "img-app", Username: "www"}, wantReason: "CreateContainerConfigError", wantMsg: "non-numeric user (www)"},
		{name: "numeric user", img: &runtimeapi.Image{Id: "img-app", Uid: &runtimeapi.Int64Value{Value: 1000}}, wantUser: ptr.To[int64](1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSyncer(t)
			if tt.img != nil {
				f.img.Lock()
				f.img.Images[tt.img.Id] = tt.img
				f.img.Unlock()
			}
			pod := newPod("web", []string{"app"}, func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			})
			f.observe(t, pod)
			_, err := f.sync(t, pod)
			f.rt.mu.Lock()
			created := f.rt.created
			f.rt.mu.Unlock()
			if tt.wantReason != "" {
				w := f.status.last(t).waiting["app"]
				if err == nil || w.Reason != tt.wantReason || !strings.Contains(w.Message, tt.wantMsg) {
					t.Errorf("err %v, waiting %+v; want %s: ...%s...", err, w, tt.wantReason, tt.wantMsg)
				}
				if len(created) != 0 {
					t.Errorf("%d containers created, want none", len(created))
				}
				return
			}
			if err != nil || len(created) != 1 {
				t.Fatalf("err %v, %d containers created; want one", err, len(created))
			}
			if got := created[0].GetLinux().GetSecurityContext().GetRunAsUser(); got.GetValue() != *tt.wantUser {
				t.Errorf("runAsUser = %v, want %d", got, *tt.wantUser)
			}
		})
	}
}
