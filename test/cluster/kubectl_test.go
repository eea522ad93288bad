package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The images the kubectl test runs: the e2e stand-ins of
// prepare-cluster.sh (busybox has sh, tar and tr; agnhost serves HTTP).
const (
	busyboxImage = "registry.k8s.io/e2e-test-images/busybox:1.37.0-1"
	agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"
)

// kubectlTarget is the pod the logs, exec, attach and cp subtests use:
// "fixed" prints three lines and sleeps, "ticker" prints a line a second,
// "restarter" fails its first run (its second prints "incarnation 2"),
// "stdin" answers each line of its stdin.
func kubectlTarget() *v1.Pod {
	sh := func(name, script string) v1.Container {
		return v1.Container{Name: name, Image: busyboxImage, Command: []string{"sh", "-c", script}}
	}
	restarter := sh("restarter", `n=$(cat /state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n >/state/n
echo "incarnation $n"; [ "$n" -gt 1 ] || exit 1; exec sleep 3600`)
	restarter.VolumeMounts = []v1.VolumeMount{{Name: "state", MountPath: "/state"}}
	stdin := sh("stdin", `while read -r l; do echo "got $l"; done; echo eof; exec sleep 3600`)
	stdin.Stdin = true
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-target", Namespace: "default",
			Annotations: map[string]string{"kubectl.kubernetes.io/default-container": "fixed"}},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Volumes:                       []v1.Volume{{Name: "state", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{
				sh("fixed", `echo first; echo second; echo third; exec sleep 3600`),
				sh("ticker", `i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done`),
				restarter,
				stdin,
			},
		},
	}
}

// kubectlServer serves HTTP on two ports for port-forward: agnhost
// netexec on 8080 (/echo?msg= answers msg) and serve-hostname on 9376
// (answers the pod's name).
func kubectlServer() *v1.Pod {
	ready := func(port int) *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}, PeriodSeconds: 1}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-server", Namespace: "default"},
		Spec: v1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []v1.Container{
				{Name: "netexec", Image: agnhostImage, Args: []string{"netexec", "--http-port=8080", "--udp-port=-1"}, ReadinessProbe: ready(8080)},
				{Name: "hostname", Image: agnhostImage, Args: []string{"serve-hostname", "--port=9376"}, ReadinessProbe: ready(9376)},
			},
		},
	}
}

// kubectl runs the bed's kubectl with the cluster's admin kubeconfig and
// env added to the environment.
type kubectl struct {
	bin, kubeconfig string
	env             []string
}

// spdyOnly makes kubectl talk SPDY to the apiserver for exec, attach, cp
// and port-forward (it prefers WebSocket, which the apiserver translates
// to SPDY towards the kubelet; with SPDY the apiserver proxies the
// upgraded connection as it is).
var spdyOnly = []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}

// cmd is a kubectl command bound to ctx.
func (k kubectl) cmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), k.env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run runs kubectl with stdin and returns its stdout; a non-zero exit is
// an error carrying stderr.
func (k kubectl) run(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := k.cmd(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w; stderr: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// must is run that fails the test on an error.
func (k kubectl) must(ctx context.Context, t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := k.run(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lines starts a long-running kubectl and returns its stdout lines as
// they come and a function that stops it (and returns its stderr). stdin,
// if not nil, receives the write end of its stdin.
func (k kubectl) lines(ctx context.Context, t *testing.T, stdin *io.WriteCloser, args ...string) (<-chan string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	cmd := k.cmd(ctx, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdin != nil {
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		*stdin = w
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		s := bufio.NewScanner(out)
		for s.Scan() {
			select {
			case ch <- s.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	var once sync.Once
	stop := func() string {
		once.Do(func() {
			cancel()
			<-done
			_ = cmd.Wait()
		})
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	return ch, stop
}

// next returns the next line of ch, failing the test after timeout or
// when kubectl ended.
func next(t *testing.T, ch <-chan string, stop func() string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("kubectl ended early; stderr: %s", stop())
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no line from kubectl in %v; stderr: %s", timeout, stop())
	}
	return ""
}

// kubectl against pods on minikubelet, through the apiserver and the
// node's kubelet port (client certificate, serving certificate and
// authorization as a production cluster has them): logs with their
// options, exec, attach, port-forward and cp (kubectl's WebSocket, which
// the apiserver translates, and SPDY end to end for exec and
// port-forward); kubectl top pod and node through metrics-server; and the
// kubelet port refusing an unauthorized user (403) and anonymous requests
// (401).
func TestKubectlThroughKubeletPort(t *testing.T) {
	c := startForTest(t, withMetricsServer)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	k := kubectl{bin: c.Kubectl(), kubeconfig: c.Kubeconfig()}
	// The busy pod runs from the start, so that metrics-server has its
	// figures by the time the Top subtest asks.
	target, server, busy := kubectlTarget(), kubectlServer(), kubectlBusy()
	for _, p := range []*v1.Pod{target, server, busy} {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(ctx, t, client, c, target.Name, func(p *v1.Pod) bool {
		return running(p, "fixed") && running(p, "ticker") && running(p, "stdin")
	})
	waitPod(ctx, t, client, c, server.Name, podReady)
	t.Logf("pods running on %s", c.NodeName())

	t.Run("KubeletPortAuth", func(t *testing.T) { testKubeletPortAuth(ctx, t, c, target.Name) })
	t.Run("Logs", func(t *testing.T) { testLogs(ctx, t, k, target.Name) })
	t.Run("LogsSince", func(t *testing.T) { testLogsSince(ctx, t, k, target.Name) })
	t.Run("LogsPrevious", func(t *testing.T) {
		waitPod(ctx, t, client, c, target.Name, func(p *v1.Pod) bool {
			s := status(p, "restarter")
			return s != nil && s.RestartCount >= 1 && s.State.Running != nil
		})
		if got := k.must(ctx, t, "", "logs", target.Name, "-c", "restarter", "--previous"); got != "incarnation 1\n" {
			t.Errorf("logs --previous: %q, want the first run's %q", got, "incarnation 1\n")
		}
		if got := k.must(ctx, t, "", "logs", target.Name, "-c", "restarter"); got != "incarnation 2\n" {
			t.Errorf("logs after a restart: %q, want the running container's %q", got, "incarnation 2\n")
		}
	})
	t.Run("Exec", func(t *testing.T) { testExec(ctx, t, k, target.Name) })
	t.Run("Attach", func(t *testing.T) {
		var stdin io.WriteCloser
		ch, stop := k.lines(ctx, t, &stdin, "attach", "-i", target.Name, "-c", "stdin")
		for _, msg := range []string{"hello attach", "second line"} {
			if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
				t.Fatal(err)
			}
			// kubectl may print its own notice first.
			for l := next(t, ch, stop, 30*time.Second); l != "got "+msg; l = next(t, ch, stop, 30*time.Second) {
				t.Logf("attach: %q", l)
			}
		}
		stop()
	})
	t.Run("PortForward", func(t *testing.T) { testPortForward(ctx, t, k, server.Name) })
	t.Run("Cp", func(t *testing.T) { testCp(ctx, t, k, target.Name) })
	spdy := k
	spdy.env = spdyOnly
	t.Run("ExecSPDY", func(t *testing.T) { testExec(ctx, t, spdy, target.Name) })
	t.Run("PortForwardSPDY", func(t *testing.T) { testPortForward(ctx, t, spdy, server.Name) })
	t.Run("Top", func(t *testing.T) {
		waitPod(ctx, t, client, c, busy.Name, func(p *v1.Pod) bool { return running(p, "busy") })
		testTop(ctx, t, c, client, k, busy.Name)
	})
}

// waitPod waits until ok says yes to the pod.
func waitPod(ctx context.Context, t *testing.T, client kubernetes.Interface, c *Cluster, name string, ok func(*v1.Pod) bool) {
	t.Helper()
	var last *v1.Pod
	err := poll(ctx, "wait for pod "+name, 500*time.Millisecond, func(ctx context.Context) error {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = p
		if !ok(p) {
			return errNotYet
		}
		return nil
	}, c.agent)
	if err != nil {
		if last != nil {
			t.Logf("pod %s status: %+v", name, last.Status)
		}
		t.Fatal(err)
	}
}

func status(p *v1.Pod, container string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == container {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func running(p *v1.Pod, container string) bool {
	s := status(p, container)
	return s != nil && s.State.Running != nil
}

func podReady(p *v1.Pod) bool {
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}

// testKubeletPortAuth calls the node's kubelet port directly: the
// apiserver's kubelet client certificate (system:masters) reads a
// container's log, a certificate of the cluster CA for a user without
// RBAC rules gets 403, no credentials 401.
func testKubeletPortAuth(ctx context.Context, t *testing.T, c *Cluster, pod string) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CA().CertPEM) {
		t.Fatal("cluster CA does not parse")
	}
	nobodyCert, nobodyKey, err := c.CA().issue(t.TempDir(), "nobody", certSpec{cn: "mk-test-nobody", orgs: []string{"mk-test-nobodies"}, client: true})
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + hostAddr(c.HostIP(), c.ports.kubelet) + "/containerLogs/default/" + pod + "/fixed"
	for _, tc := range []struct {
		name           string
		cert, key      string
		token          string
		wantCode       int
		wantBodyPrefix string
	}{
		{"apiserver's kubelet client", c.files.kubeletClientCert, c.files.kubeletClientKey, "", http.StatusOK, "first\nsecond\nthird\n"},
		{"user without nodes/proxy", nobodyCert, nobodyKey, "", http.StatusForbidden, "Forbidden"},
		{"unknown bearer token", "", "", "not-a-token", http.StatusUnauthorized, "Unauthorized"},
		{"anonymous", "", "", "", http.StatusUnauthorized, "Unauthorized"},
	} {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if tc.cert != "" {
			pair, err := tls.LoadX509KeyPair(tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 30 * time.Second}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		hc.CloseIdleConnections()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if resp.StatusCode != tc.wantCode || !strings.HasPrefix(string(body), tc.wantBodyPrefix) {
			t.Errorf("%s: GET %s: %d %q, want %d %q...", tc.name, url, resp.StatusCode, body, tc.wantCode, tc.wantBodyPrefix)
		}
	}
}

var tickRE = regexp.MustCompile(`^tick (\d+)$`)

// testLogs: the whole log, --tail, the container a pod's log comes from
// (-c), and -f delivering lines written after it started.
func testLogs(ctx context.Context, t *testing.T, k kubectl, pod string) {
	if got := k.must(ctx, t, "", "logs", pod, "-c", "fixed"); got != "first\nsecond\nthird\n" {
		t.Errorf("logs -c fixed: %q", got)
	}
	// Without -c, the pod's default container (its annotation).
	if got := k.must(ctx, t, "", "logs", pod); got != "first\nsecond\nthird\n" {
		t.Errorf("logs of the default container: %q", got)
	}
	if got := k.must(ctx, t, "", "logs", pod, "-c", "fixed", "--tail=1"); got != "third\n" {
		t.Errorf("logs --tail=1: %q, want %q", got, "third\n")
	}
	if got := k.must(ctx, t, "", "logs", pod, "-c", "fixed", "--tail=2"); got != "second\nthird\n" {
		t.Errorf("logs --tail=2: %q", got)
	}
	ticks := strings.Split(strings.TrimSpace(k.must(ctx, t, "", "logs", pod, "-c", "ticker")), "\n")
	m := tickRE.FindStringSubmatch(ticks[len(ticks)-1])
	if m == nil || ticks[0] != "tick 0" {
		t.Fatalf("logs -c ticker: %q, want tick 0 to tick N", ticks)
	}
	last, _ := strconv.Atoi(m[1])

	// -f prints the log so far, then what the container writes next:
	// ticks past the last one the plain call saw.
	ch, stop := k.lines(ctx, t, nil, "logs", "-f", pod, "-c", "ticker", "--tail=1")
	want := -1
	for {
		l := next(t, ch, stop, 30*time.Second)
		m := tickRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("logs -f: line %q", l)
		}
		n, _ := strconv.Atoi(m[1])
		if want >= 0 && n != want {
			t.Fatalf("logs -f: %q after tick %d", l, want-1)
		}
		want = n + 1
		if n >= last+2 {
			break
		}
	}
	stop()
}

// testLogsSince: --since keeps the lines written in the last seconds
// (checked against --timestamps), and drops a container's old lines.
func testLogsSince(ctx context.Context, t *testing.T, k kubectl, pod string) {
	// The ticker has been running for more than 5 s once it printed tick 5.
	err := poll(ctx, "wait for tick 5", 500*time.Millisecond, func(ctx context.Context) error {
		out, err := k.run(ctx, "", "logs", pod, "-c", "ticker")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "tick 5\n") {
			return errNotYet
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const since = 3 * time.Second
	t0 := time.Now()
	out := k.must(ctx, t, "", "logs", pod, "-c", "ticker", "--timestamps", "--since="+since.String())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if out == "" || len(lines) > 5 {
		t.Errorf("logs --since=%v of a line a second: %d lines %q", since, len(lines), out)
	}
	for _, l := range lines {
		ts, _, ok := strings.Cut(l, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if !ok || err != nil {
			t.Errorf("logs --timestamps: line %q", l)
			continue
		}
		// The kubelet's clock is this host's; a second of slack for the
		// rounding to whole seconds.
		if at.Before(t0.Add(-since - time.Second)) {
			t.Errorf("logs --since=%v at %v: line %q is older", since, t0.Format(time.RFC3339Nano), l)
		}
	}
	if got := k.must(ctx, t, "", "logs", pod, "-c", "fixed", "--since=2s"); got != "" {
		t.Errorf("logs --since=2s of a container that printed its lines at start: %q, want nothing", got)
	}
}

// testExec: stdin through to the command and closed at its end, the exit
// code, and a TTY (kubectl under script(1), which gives it a terminal).
func testExec(ctx context.Context, t *testing.T, k kubectl, pod string) {
	if got := k.must(ctx, t, "hello exec\nline two\n", "exec", "-i", pod, "-c", "fixed", "--", "sh", "-c", "tr a-z A-Z; echo done"); got != "HELLO EXEC\nLINE TWO\ndone\n" {
		t.Errorf("exec -i: %q", got)
	}
	if got := k.must(ctx, t, "", "exec", pod, "-c", "fixed", "--", "cat", "/proc/1/cmdline"); got != "sleep\x003600\x00" {
		t.Errorf("exec cat /proc/1/cmdline: %q, want the container's sleep", got)
	}
	_, err := k.run(ctx, "", "exec", pod, "-c", "fixed", "--", "sh", "-c", "echo oops >&2; exit 3")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exec of a command that exits 3: %v, want kubectl to exit 3", err)
	} else if !strings.Contains(err.Error(), "oops") {
		t.Errorf("exec: the command's stderr is not kubectl's: %v", err)
	}
	_, err = k.run(ctx, "", "exec", pod, "-c", "fixed", "--", "/no/such/command")
	if err == nil {
		t.Error("exec of a missing command succeeded")
	}

	// script runs kubectl on a pseudo-terminal: -t gets the container a
	// terminal too, and kubectl exits with the command's code (script -e).
	line := fmt.Sprintf(`"$KUBECTL" --kubeconfig "$KUBECONFIG" exec -it %s -c fixed -- sh -c 'tty; exit 4'`, pod)
	cmd := exec.CommandContext(ctx, "script", "-q", "-e", "-c", line, "/dev/null")
	cmd.Env = append(append(os.Environ(), k.env...), "KUBECTL="+k.bin, "KUBECONFIG="+k.kubeconfig)
	cmd.WaitDelay = 5 * time.Second
	// A stdin that stays open (on its end script would end the session),
	// and a file, so that Wait does not wait for a goroutine copying it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	cmd.Stdin = r
	out, err := cmd.CombinedOutput()
	_ = r.Close()
	if !errors.As(err, &exit) || exit.ExitCode() != 4 {
		t.Errorf("exec -it under script: %v, want exit 4; output %q", err, out)
	}
	if !strings.Contains(string(out), "/dev/pts/") {
		t.Errorf("exec -it: tty printed %q, want a /dev/pts/ terminal", out)
	}
}

// testPortForward: two kubectl port-forward at once, one of them for two
// ports, each carrying HTTP conversations (several requests on a kept
// connection) to the pod's two servers.
func testPortForward(ctx context.Context, t *testing.T, k kubectl, pod string) {
	forwardRE := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$`)
	forward := func(ports ...string) map[string]string {
		ch, stop := k.lines(ctx, t, nil, append([]string{"port-forward", "--address=127.0.0.1", "pod/" + pod}, ports...)...)
		local := map[string]string{}
		for len(local) < len(ports) {
			l := next(t, ch, stop, 30*time.Second)
			if m := forwardRE.FindStringSubmatch(l); m != nil {
				local[m[2]] = "127.0.0.1:" + m[1]
			}
		}
		// kubectl says "Handling connection" for each: drop those.
		go func() {
			for l := range ch {
				_ = l
			}
		}()
		return local
	}
	one, two := forward(":8080", ":9376"), forward(":8080")
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	converse := func(addr, port string) {
		defer wg.Done()
		hc := &http.Client{Timeout: 30 * time.Second}
		defer hc.CloseIdleConnections()
		for i := range 5 {
			want := pod
			path := "/"
			if port == "8080" {
				want = fmt.Sprintf("%s-%d-%s", addr, i, rand.Text())
				path = "/echo?msg=" + want
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
			if err != nil {
				errs <- err
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				errs <- fmt.Errorf("through %s to %s: %w", addr, port, err)
				return
			}
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				errs <- fmt.Errorf("through %s to %s: GET %s: read: %w", addr, port, path, err)
				return
			}
			if resp.StatusCode != http.StatusOK || string(body) != want {
				errs <- fmt.Errorf("through %s to %s: GET %s: %d %q, want %q", addr, port, path, resp.StatusCode, body, want)
				return
			}
		}
	}
	for _, f := range []map[string]string{one, two} {
		for port, addr := range f {
			wg.Add(1)
			go converse(addr, port)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// testCp: kubectl cp of a directory into the container and back (tar
// through exec), byte for byte.
func testCp(ctx context.Context, t *testing.T, k kubectl, pod string) {
	src := t.TempDir()
	blob := make([]byte, 300<<10)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"blob": blob, "sub/note.txt": []byte("a note\n")}
	for name, data := range files {
		path := filepath.Join(src, "up", name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k.must(ctx, t, "", "cp", filepath.Join(src, "up"), "default/"+pod+":/tmp/up", "-c", "fixed")
	if got := k.must(ctx, t, "", "exec", pod, "-c", "fixed", "--", "cat", "/tmp/up/sub/note.txt"); got != "a note\n" {
		t.Errorf("after cp into the pod: note.txt has %q", got)
	}
	dst := filepath.Join(t.TempDir(), "down")
	k.must(ctx, t, "", "cp", "default/"+pod+":/tmp/up", dst, "-c", "fixed")
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Errorf("after cp out of the pod: %v", err)
			continue
		}
		if !bytes.Equal(got, data) {
			t.Errorf("cp into the pod and back: %s has %d bytes that differ from the %d sent", name, len(got), len(data))
		}
	}
}
