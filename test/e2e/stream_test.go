package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"github.com/minikubelet/minikubelet/internal/polltest"
	"github.com/minikubelet/minikubelet/test/ctrdtest"
)

// streamPod is a pod on the CNI network for the streaming tests: main
// echoes every TCP connection on port 7000 back (one process per
// connection), talk answers each line of its stdin on stdout and stderr,
// term is a shell on the container's own terminal.
func streamPod(name string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
spec:
  terminationGracePeriodSeconds: 0
  containers:
  - name: main
    image: %[2]s
    command: ["nc", "-ll", "-p", "7000", "-e", "cat"]
  - name: talk
    image: %[2]s
    stdin: true
    command: ["sh", "-c", "while read l; do echo got-$l; echo err-$l >&2; done; sleep 3600"]
  - name: term
    image: %[2]s
    stdin: true
    tty: true
    command: ["sh"]
`, name, env.busybox)
}

// startStreamPod starts an agent against rt, with more flags, and
// streamPod("streams") running in it.
func startStreamPod(t testing.TB, rt *ctrdtest.Containerd, args ...string) (*agent, *v1.Pod) {
	t.Helper()
	a := startAgent(t, rt, args...)
	a.writeManifest("streams.yaml", streamPod("streams"))
	return a, a.waitRunning("streams", 90*time.Second)
}

// streamURL is the URL of a streaming endpoint of the agent for pod.
func (a *agent) streamURL(verb string, pod *v1.Pod, container string, query url.Values) *url.URL {
	path := "/" + verb + "/" + pod.Namespace + "/" + pod.Name
	if container != "" {
		path += "/" + container
	}
	return &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", a.streamPort()), Path: path, RawQuery: query.Encode()}
}

func (a *agent) restConfig() *rest.Config {
	return &rest.Config{Host: fmt.Sprintf("http://127.0.0.1:%d", a.streamPort())}
}

// execQuery is the query of /exec or /attach the apiserver sends.
func execQuery(stdin, tty bool, command ...string) url.Values {
	q := url.Values{"output": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	for _, c := range command {
		q.Add("command", c)
	}
	return q
}

// fixedSize is a terminal whose size is said once: Next answers it, then
// nil, which ends the client's resizes.
type fixedSize struct {
	once sync.Once
	size remotecommand.TerminalSize
}

func (f *fixedSize) Next() *remotecommand.TerminalSize {
	var s *remotecommand.TerminalSize
	f.once.Do(func() { s = &f.size })
	return s
}

// TestStreamExecCLI runs `minikubelet exec` against the agent: stdout and
// stderr arrive apart, the remote exit code is the command line's, -i
// passes stdin through to its end, and a container the pod does not have
// gets one clear line.
func TestStreamExecCLI(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a, _ := startStreamPod(t, rt)

		out, stderr, err := a.execCLI("", "streams", "-c", "main", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 7")
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 7 {
			t.Errorf("exec exiting 7: err %v, want exit code 7 (stderr %q)", err, stderr)
		}
		if out != "to-out\n" || !strings.HasPrefix(stderr, "to-err\n") || !strings.Contains(stderr, "command terminated with exit code 7") {
			t.Errorf("exec exiting 7: stdout %q, stderr %q; want to-out on stdout, to-err then the exit code on stderr", out, stderr)
		}

		// No -c: the first container, and the choice is said.
		out, stderr, err = a.execCLI("", "streams", "--", "hostname")
		if err != nil || strings.TrimSpace(out) != a.podName("streams") || !strings.Contains(stderr, `"main"`) {
			t.Errorf("exec hostname: %v: stdout %q, stderr %q", err, out, stderr)
		}

		// -i: stdin reaches the command, and its end ends the command.
		payload := strings.Repeat("line of stdin\n", 5000)
		out, stderr, err = a.execCLI(payload, "streams", "-c", "main", "-i", "--", "sh", "-c", "wc -c; echo done >&2")
		if err != nil || strings.TrimSpace(out) != fmt.Sprint(len(payload)) || stderr != "done\n" {
			t.Errorf("exec -i of %d bytes: %v: stdout %q, stderr %q", len(payload), err, out, stderr)
		}

		_, stderr, err = a.execCLI("", "streams", "-c", "nope", "--", "true")
		if err == nil || !strings.Contains(stderr, `container "nope" is not valid for pod`) {
			t.Errorf("exec in a container the pod does not have: %v, stderr %q", err, stderr)
		}

		// -it on a terminal: the remote terminal has the local one's size.
		out, err = a.execCLIOnTerminal(27, 91, "streams", "-c", "main", "-it", "--", "sh", "-c", sttyWhenSized)
		if err != nil || !strings.Contains(out, "27 91\r\n") {
			t.Errorf("exec -it on a 27x91 terminal: %v, terminal shows %q", err, out)
		}
	})
}

// execCLIOnTerminal runs `minikubelet exec <args>` as execCLI does, on a
// new pseudo-terminal of rows x cols, and returns what the terminal
// showed.
func (a *agent) execCLIOnTerminal(rows, cols uint16, args ...string) (string, error) {
	a.t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	defer ptm.Close()
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		a.t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		a.t.Fatalf("pseudo-terminal number: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		a.t.Fatal(err)
	}
	defer pts.Close()
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		a.t.Fatalf("terminal size: %v", err)
	}
	i := slices.Index(args, "--")
	args = slices.Concat([]string{"exec"}, args[:i], []string{"--server", "unix://" + a.socket}, args[i:])
	cmd := exec.Command(env.binary, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	var shown syncBuffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&shown, ptm) // ends when ptm is closed, or no one has pts open
	}()
	err = runWithin(cmd, 30*time.Second)
	_ = pts.Close()
	_ = ptm.SetReadDeadline(time.Now().Add(5 * time.Second))
	<-copied
	return shown.String(), err
}

// runWithin runs cmd and kills it if it takes longer than d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running after %v: killed", d)
	}
}

// execCLI runs `minikubelet exec <args> --server <the agent>`, the
// server flag before the "--" that starts the command, with stdin.
func (a *agent) execCLI(stdin string, args ...string) (string, string, error) {
	a.t.Helper()
	i := slices.Index(args, "--")
	if i < 0 {
		i = len(args)
	}
	args = slices.Concat([]string{"exec"}, args[:i], []string{"--server", "unix://" + a.socket}, args[i:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestStreamAttachCLI attaches `minikubelet attach -i` to a container
// that reads its stdin: a line sent reaches it, and its answers come back
// on stdout and stderr apart.
func TestStreamAttachCLI(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a, _ := startStreamPod(t, rt)

		cmd := exec.Command(env.binary, "attach", "streams", "-c", "talk", "-i", "--server", "unix://"+a.socket)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var sout, serr syncBuffer
		cmd.Stdout, cmd.Stderr = &sout, &serr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			_ = cmd.Process.Kill()
			<-exited
		}()
		// The attach is in place once a line sent comes back; lines sent
		// before that may reach the container before anyone listens.
		polltest.Until(t, 30*time.Second, "attach answers", func() (bool, string) {
			if _, err := io.WriteString(stdin, "hello\n"); err != nil {
				return false, err.Error()
			}
			return strings.Contains(sout.String(), "got-hello\n") && strings.Contains(serr.String(), "err-hello\n"),
				fmt.Sprintf("stdout %q, stderr %q", sout.String(), serr.String())
		})
		if strings.Contains(sout.String(), "err-") || strings.Contains(serr.String(), "got-") {
			t.Errorf("stdout and stderr mixed: stdout %q, stderr %q", sout.String(), serr.String())
		}
		// The command line ends on SIGTERM, as a user's ^C ends it.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			exited <- nil // for the deferred wait
		case <-time.After(10 * time.Second):
			t.Errorf("attach still running 10s after SIGTERM")
		}
	})
}

// sttyWhenSized prints the terminal's size once it has one: the runtime
// starts the command and applies the client's first resize concurrently,
// so a command that reads its size at once may see 0 0 (as with kubelet),
// and busybox's stty sometimes fails at first ("standard input: No child
// processes") on either runtime. It asks until the answer is a size.
const sttyWhenSized = `i=0; s=; until case "$s" in [1-9]*\ [1-9]*) true;; *) false;; esac || [ $i -ge 100 ]; do s=$(stty size 2>/dev/null); i=$((i+1)); sleep 0.1; done; echo "$s"`

// TestStreamTTY runs exec and attach with a terminal through the agent
// over SPDY, as kubectl exec -it does: the terminal has the size the
// client said, and a shell on the container's own terminal answers.
func TestStreamTTY(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a, pod := startStreamPod(t, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()

		ex, err := remotecommand.NewSPDYExecutor(a.restConfig(), http.MethodPost, a.streamURL("exec", pod, "main", execQuery(true, true, "sh", "-c", sttyWhenSized)))
		if err != nil {
			t.Fatal(err)
		}
		// stdin stays open, as a user's who has not typed: the end of a
		// terminal's input hangs its session up.
		idle, idleW := io.Pipe()
		defer idleW.Close()
		var out bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{
			Stdin: idle, Stdout: &out, Tty: true,
			TerminalSizeQueue: &fixedSize{size: remotecommand.TerminalSize{Width: 101, Height: 33}},
		})
		if err != nil || strings.TrimSpace(out.String()) != "33 101" {
			t.Errorf("exec -t stty size: %v, output %q; want \"33 101\"", err, out.String())
		}

		// attach -it to the shell on the container's terminal.
		actx, acancel := context.WithCancel(ctx)
		defer acancel()
		ex, err = remotecommand.NewSPDYExecutor(a.restConfig(), http.MethodPost, a.streamURL("attach", pod, "term", execQuery(true, true)))
		if err != nil {
			t.Fatal(err)
		}
		inR, inW := io.Pipe()
		var aout syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- ex.StreamWithContext(actx, remotecommand.StreamOptions{
				Stdin: inR, Stdout: &aout, Tty: true,
				TerminalSizeQueue: &fixedSize{size: remotecommand.TerminalSize{Width: 120, Height: 40}},
			})
		}()
		polltest.Until(t, 30*time.Second, "the attached shell answers", func() (bool, string) {
			if _, err := io.WriteString(inW, "echo $((6*7)); stty size\n"); err != nil {
				return false, err.Error()
			}
			return strings.Contains(aout.String(), "42\r\n40 120"), fmt.Sprintf("output %q", aout.String())
		})
		acancel()
		_ = inW.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("attach did not end 10s after its context")
		}
	})
}

// TestStreamWebSocketExec runs exec through the agent over WebSocket
// (v5.channel.k8s.io, kubectl's protocol since 1.30, which the agent
// translates to the runtime's SPDY): stdin reaches the command and its
// close ends it, stdout and stderr arrive apart and the exit code comes
// back.
func TestStreamWebSocketExec(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a, pod := startStreamPod(t, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()

		u := a.streamURL("exec", pod, "main", execQuery(true, false, "sh", "-c", "cat; echo bye >&2; exit 3"))
		ex, err := remotecommand.NewWebSocketExecutor(a.restConfig(), http.MethodGet, u.String())
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("over websocket\n"), Stdout: &out, Stderr: &errOut})
		var code utilexec.CodeExitError
		if !errors.As(err, &code) || code.ExitStatus() != 3 {
			t.Errorf("websocket exec: %v; want exit code 3", err)
		}
		if out.String() != "over websocket\n" || errOut.String() != "bye\n" {
			t.Errorf("websocket exec: stdout %q, stderr %q", out.String(), errOut.String())
		}
	})
}

// TestStreamPortForward forwards a local port to the pod's echo server
// through the agent, over SPDY (kubectl port-forward before 1.31) and
// over SPDY tunnelled in a WebSocket (since), with several connections at
// once: every byte sent comes back, in order, on its own connection.
func TestStreamPortForward(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a, pod := startStreamPod(t, rt)
		for _, proto := range []string{"spdy", "websocket"} {
			t.Run(proto, func(t *testing.T) {
				local, stop := forward(t, a.streamURL("portForward", pod, "", nil), proto, 7000)
				defer stop()
				const conns, size = 6, 1 << 20
				var wg sync.WaitGroup
				errs := make(chan error, conns)
				for i := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := echoThrough(local, size); err != nil {
							errs <- fmt.Errorf("connection %d: %w", i, err)
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
		}
	})
}

// forward starts a port-forward of a local port to port of the pod at u
// (the agent's /portForward, or the runtime's streaming URL), over proto
// ("spdy" or "websocket"), and returns the local address and how to stop
// it.
func forward(t testing.TB, u *url.URL, proto string, port int) (string, func()) {
	t.Helper()
	d, err := portForwardDialer(u, proto)
	if err != nil {
		t.Fatal(err)
	}
	stopCh, ready := make(chan struct{}), make(chan struct{})
	var errOut syncBuffer
	fw, err := portforward.NewForStreaming(d, []string{fmt.Sprintf("0:%d", port)}, stopCh, ready, io.Discard, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward over %s: %v (%s)", proto, err, errOut.String())
	case <-time.After(30 * time.Second):
		close(stopCh)
		t.Fatalf("port-forward over %s not ready after 30s (%s)", proto, errOut.String())
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stopCh)
		t.Fatalf("port-forward ports: %v %v", ports, err)
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), func() {
		close(stopCh)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("port-forward over %s did not stop", proto)
		}
		if s := errOut.String(); s != "" {
			t.Logf("port-forward over %s said: %s", proto, s)
		}
	}
}

// portForwardDialer is how kubectl dials a port-forward: SPDY, or SPDY
// tunnelled in a WebSocket.
func portForwardDialer(u *url.URL, proto string) (streamhttp.Dialer, error) {
	cfg := &rest.Config{Host: u.Scheme + "://" + u.Host}
	if proto == "websocket" {
		return portforward.NewSPDYOverWebsocketDialerForStreaming(u, cfg)
	}
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	return spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, u), nil
}

// echoThrough sends size random bytes to the echo server at addr and
// checks that they all come back. It does not wait for the end of the
// connection: the runtimes end a forwarded connection a second or so
// after its client, which would swamp the figures of the benchmark.
func echoThrough(addr string, size int) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	sent := make([]byte, size)
	_, _ = rand.Read(sent)
	werr := make(chan error, 1)
	go func() {
		_, err := conn.Write(sent)
		werr <- err
	}()
	got := make([]byte, size)
	n, err := io.ReadFull(conn, got)
	if err := <-werr; err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if err != nil {
		return fmt.Errorf("after %d of %d bytes back: %w", n, size, err)
	}
	if !bytes.Equal(got, sent) {
		return fmt.Errorf("the %d bytes back are not the bytes sent", size)
	}
	return nil
}

// TestStreamRun calls /run, which runs a command with CRI ExecSync and
// answers its output; a command that fails answers 500 with its exit code.
func TestStreamRun(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt *ctrdtest.Containerd) {
		a, pod := startStreamPod(t, rt)
		post := func(cmd string) (string, int) {
			t.Helper()
			u := a.streamURL("run", pod, "main", url.Values{"cmd": {cmd}})
			resp, err := a.client.Post(u.String(), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b), resp.StatusCode
		}
		if body, code := post("echo hello from run"); code != http.StatusOK || body != "hello from run\n" {
			t.Errorf("/run echo: %d %q", code, body)
		}
		if body, code := post("false"); code != http.StatusInternalServerError || !strings.Contains(body, "exited with code 1") {
			t.Errorf("/run false: %d %q; want 500 naming the exit code", code, body)
		}
		// A pod the node does not have.
		u := a.streamURL("run", &v1.Pod{ObjectMeta: pod.ObjectMeta}, "main", url.Values{"cmd": {"true"}})
		u.Path = strings.Replace(u.Path, pod.Name, "nope", 1)
		resp, err := a.client.Post(u.String(), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("/run in a pod not on the node: %d, want 404", resp.StatusCode)
		}
	})
}
