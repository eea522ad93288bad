package podworkers

import (
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/downward"
	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// configError is a container spec the agent cannot turn into a CRI config;
// it is reported as the waiting reason CreateContainerConfigError.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

// podEnv is what a container's env may refer to: the downward API
// (fieldRef and resourceFieldRef, with the pod's sandbox IPs), and the
// configMaps and secrets of its valueFrom and envFrom.
type podEnv struct {
	Downward downward.Resolver
	PodIPs   []string
	Objects  envObjects
	// Services are the Service env vars (FOO_SERVICE_HOST, ...): a
	// container's own vars refer to them and win over them.
	Services map[string]string
}

// containerOpts is what containerConfig needs besides the pod and the
// container.
type containerOpts struct {
	RestartCount int
	// ImageRef is the image to create the container from; ImageUser the
	// user it runs as, from the runtime's ImageStatus (zero: unknown).
	ImageRef  string
	ImageUser imageUser
	Env       podEnv
	// SeccompRoot holds Localhost seccomp profiles (<root-dir>/seccomp).
	SeccompRoot string
	// OOMScoreAdj is the container's oom_score_adj (0: the runtime's).
	OOMScoreAdj int64
}

// containerConfig converts one container of pod into its CRI config:
// identity, command and env, resources (resources.go) and security context
// (security.go). A spec it cannot honour, or a runAsNonRoot it must
// refuse, yields a configError. Mounts are added by the caller.
func containerConfig(pod *v1.Pod, c *v1.Container, opts containerOpts) (*runtimeapi.ContainerConfig, error) {
	envs, err := makeEnv(pod, c, opts.Env)
	if err != nil {
		return nil, err
	}
	sc, err := linuxSecurityContext(pod, c, opts.ImageUser, opts.SeccompRoot)
	if err != nil {
		return nil, err
	}
	vars := make(map[string]string, len(envs))
	for _, e := range envs {
		vars[e.Key] = string(e.Value)
	}
	restartCount := opts.RestartCount
	annotations := map[string]string{
		kubecontainer.AnnotationContainerHash:            kubecontainer.HashContainer(c),
		kubecontainer.AnnotationRestartCount:             strconv.Itoa(restartCount),
		kubecontainer.AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		kubecontainer.AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
		kubecontainer.AnnotationPodTerminationGrace:      strconv.FormatInt(podGracePeriod(pod), 10),
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: opts.ImageRef, UserSpecifiedImage: c.Image},
		Command:     expandAll(c.Command, vars),
		Args:        expandAll(c.Args, vars),
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Labels:      kubecontainer.ContainerLabels(pod, c.Name),
		Annotations: annotations,
		LogPath:     ContainerLogPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       linuxResources(c, opts.OOMScoreAdj),
			SecurityContext: sc,
		},
		StopSignal: stopSignal(c),
	}, nil
}

// stopSignal is lifecycle.stopSignal as the CRI enum; unset leaves the
// runtime to use the image's STOPSIGNAL, else SIGTERM. Runtimes older than
// the field (containerd 1.6) ignore it.
func stopSignal(c *v1.Container) runtimeapi.Signal {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return runtimeapi.Signal_RUNTIME_DEFAULT
	}
	return runtimeapi.Signal(runtimeapi.Signal_value[string(*c.Lifecycle.StopSignal)])
}

// ContainerLogPath is a container's log file relative to its pod's log
// directory: <container>/<restartCount>.log.
func ContainerLogPath(name string, restartCount int) string {
	return filepath.Join(name, strconv.Itoa(restartCount)+".log")
}

// makeEnv resolves a container's env in order; each value may refer to the
// ones before it with $(NAME).
func makeEnv(pod *v1.Pod, c *v1.Container, penv podEnv) ([]*runtimeapi.KeyValue, error) {
	from, err := envFromVars(c, penv.Objects)
	if err != nil {
		return nil, &configError{msg: fmt.Sprintf("container %q: %v", c.Name, err)}
	}
	out := make([]*runtimeapi.KeyValue, 0, len(from)+len(c.Env)+len(penv.Services))
	vars := map[string]string{}
	// refs is what $(NAME) may refer to: the container's vars so far,
	// else the Service vars.
	refs := maps.Clone(penv.Services)
	if refs == nil {
		refs = map[string]string{}
	}
	envs := make([]v1.EnvVar, 0, len(from)+len(c.Env))
	for _, kv := range from {
		envs = append(envs, v1.EnvVar{Name: kv[0], Value: kv[1]})
	}
	envs = append(envs, c.Env...)
	for j, e := range envs {
		i := j - len(from)
		value := e.Value
		if i >= 0 {
			value = expand(e.Value, refs) // envFrom values are not expanded
		}
		switch {
		case e.ValueFrom != nil && (e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil):
			v, ok, err := keyRefValue(e.ValueFrom, penv.Objects)
			if err != nil {
				return nil, &configError{msg: fmt.Sprintf("container %q: env[%d] (%s): %v", c.Name, i, e.Name, err)}
			}
			if !ok {
				continue // optional and missing
			}
			value = v
		case e.ValueFrom != nil:
			v, err := penv.Downward.Env(pod, c, e.ValueFrom, penv.PodIPs)
			if err != nil {
				return nil, &configError{msg: fmt.Sprintf("container %q: env[%d] (%s): %v", c.Name, i, e.Name, err)}
			}
			value = v
		}
		if _, seen := vars[e.Name]; seen {
			// A name given twice: the last value wins, at the first
			// place, as the kubelet does.
			for _, kv := range out {
				if kv.Key == e.Name {
					kv.Value = []byte(value)
				}
			}
		} else {
			out = append(out, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(value)})
		}
		vars[e.Name] = value
		refs[e.Name] = value
	}
	return appendServiceEnv(out, penv.Services, vars), nil
}

func expandAll(in []string, vars map[string]string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vars)
	}
	return out
}

// expand replaces $(NAME) with the value of NAME as Kubernetes does: $$ is a
// literal $, and a reference to an unknown name is left as written.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
