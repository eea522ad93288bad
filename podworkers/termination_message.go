package podworkers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minikubelet/minikubelet/internal/kubecontainer"
)

// The kubelet's limits on a termination message (kubecontainer's
// MaxContainerTerminationMessage*): the last 4096 bytes of the file, or the
// last 2048 bytes of the last 80 log lines.
const (
	maxTerminationMessageBytes = 4096
	maxTerminationLogLines     = 80
	maxTerminationLogBytes     = 2048
)

// maxLogTailWindow bounds how much of a log file's end tailCRILog reads.
const maxLogTailWindow = 4 << 20

// terminationMessageFile is the host file bind-mounted at a container's
// terminationMessagePath: <pod dir>/containers/<name>/<restart count>. The
// kubelet names it with a random number and finds it again through the
// CRI status's mounts; naming it by restart count (unique per container
// name within a pod, as the log file's name is) lets the agent find it
// from the decoded status alone.
func terminationMessageFile(podDir, name string, restartCount int) string {
	return filepath.Join(podDir, "containers", name, strconv.Itoa(restartCount))
}

// addTerminationMessageMount creates the empty file a container writes its
// termination message to, world-writable so that any user can, and adds
// its bind mount to cfg. A file left by an earlier container of the same
// name and restart count is truncated. It does nothing for a container
// without a terminationMessagePath.
func addTerminationMessageMount(cfg *runtimeapi.ContainerConfig, podDir string, c *v1.Container, restartCount int) error {
	if c.TerminationMessagePath == "" {
		return nil
	}
	path := terminationMessageFile(podDir, c.Name, restartCount)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("create termination message directory of container %q: %w", c.Name, err)
	}
	f, err := os.Create(path) //nolint:gosec // G304: the path is built from the pod's own directory
	if err != nil {
		return fmt.Errorf("create termination message file of container %q: %w", c.Name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create termination message file of container %q: %w", c.Name, err)
	}
	// Chmod, not Create's mode: the umask must not apply.
	if err := os.Chmod(path, 0o666); err != nil { //nolint:gosec // G302: the container's user, whoever it is, must be able to write it, as under the kubelet
		return fmt.Errorf("make termination message file of container %q writable: %w", c.Name, err)
	}
	cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: path})
	return nil
}

// terminationMessages remembers the termination message of each exited
// container, so that its file (or log) is read once, the first time the
// container is reported as exited, not at every sync. It is safe for
// concurrent use; calls for one pod must not overlap (a pod's worker makes
// them). The zero value is ready to use.
type terminationMessages struct {
	mu sync.Mutex
	// byPod maps a pod's UID to its exited containers' IDs and messages.
	byPod map[types.UID]map[string]string
}

// fill returns status with the termination message of every exited
// container of pod added to its Message, as the kubelet adds it when it
// converts the runtime's status: after the runtime's own message, if any,
// and ": ". status is not modified: when a message is added the result is
// a copy. Messages of containers no longer in status are forgotten.
// podDir holds the termination message files, logDir the pod's logs.
func (m *terminationMessages) fill(pod *v1.Pod, status *kubecontainer.PodStatus, podDir, logDir string) *kubecontainer.PodStatus {
	if status == nil {
		return nil
	}
	m.mu.Lock()
	known := m.byPod[pod.UID]
	m.mu.Unlock()

	found := make(map[string]string, len(known))
	added := false
	for _, cs := range status.Containers {
		if cs.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		msg, ok := known[cs.ID]
		if !ok {
			msg = readTerminationMessage(pod, cs, podDir, logDir)
		}
		found[cs.ID] = msg
		added = added || msg != ""
	}

	m.mu.Lock()
	if m.byPod == nil {
		m.byPod = map[types.UID]map[string]string{}
	}
	if len(found) > 0 {
		m.byPod[pod.UID] = found
	} else {
		delete(m.byPod, pod.UID)
	}
	m.mu.Unlock()

	if !added {
		return status
	}
	out := *status
	out.Containers = make([]*kubecontainer.ContainerStatus, len(status.Containers))
	for i, cs := range status.Containers {
		out.Containers[i] = cs
		if msg := found[cs.ID]; msg != "" {
			withMsg := *cs
			if withMsg.Message != "" {
				withMsg.Message += ": "
			}
			withMsg.Message += msg
			out.Containers[i] = &withMsg
		}
	}
	return &out
}

// forget drops what is remembered of a pod.
func (m *terminationMessages) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byPod, uid)
}

// readTerminationMessage is the kubelet's getTerminationMessage and its
// fallback to the log: the message file's content; or, under
// FallbackToLogsOnError, for a container that failed after it could run,
// the tail of its log when the file is empty or missing. The policy and
// path are the spec's: a container no longer in the spec gets none. A
// read error becomes the message, as under the kubelet.
func readTerminationMessage(pod *v1.Pod, cs *kubecontainer.ContainerStatus, podDir, logDir string) string {
	c := kubecontainer.SpecOf(pod, cs.Name)
	if c == nil {
		return ""
	}
	fallback := c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError && cs.ExitCode != 0 && cs.Reason != "ContainerCannotRun"
	if c.TerminationMessagePath != "" {
		path := terminationMessageFile(podDir, cs.Name, cs.RestartCount)
		data, err := readTail(path, maxTerminationMessageBytes)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Sprintf("Error on reading termination log %s: %v", path, err)
		case len(data) > 0 || !fallback:
			return string(data)
		}
	}
	if !fallback {
		return ""
	}
	msg, err := tailCRILog(filepath.Join(logDir, ContainerLogPath(cs.Name, cs.RestartCount)), maxTerminationLogLines, maxTerminationLogBytes)
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return msg
}

// readTail returns the last limit bytes of the file at path.
func readTail(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the path is built from the pod's own directory
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	start := fi.Size() - limit
	if start < 0 {
		start = 0
	}
	return io.ReadAll(io.NewSectionReader(f, start, fi.Size()-start))
}

// tailCRILog returns what the kubelet's readLastStringFromContainerLogs
// returns: the content of the last maxLines lines of a CRI log file, both
// streams, of which the last maxBytes bytes. It reads the file's end in
// growing windows until it holds enough lines or bytes.
func tailCRILog(path string, maxLines, maxBytes int) (string, error) {
	f, err := os.Open(path) //nolint:gosec // G304: the path is the container's own log file
	if err != nil {
		return "", fmt.Errorf("open log file %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("stat log file %s: %w", path, err)
	}
	size := fi.Size()
	for window := int64(64 << 10); ; window *= 4 {
		start := size - window
		if start < 0 {
			start = 0
		}
		buf := make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read log file %s: %w", path, err)
		}
		lines := bytes.SplitAfter(buf, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if start > 0 && len(lines) > 0 {
			lines = lines[1:] // cut by the window: not whole
		}
		if len(lines) > maxLines {
			lines = lines[len(lines)-maxLines:]
		}
		out := criLogContent(lines)
		if start == 0 || len(lines) == maxLines || len(out) >= maxBytes || window >= maxLogTailWindow {
			if len(out) > maxBytes {
				out = out[len(out)-maxBytes:]
			}
			return string(out), nil
		}
	}
}

// criLogContent concatenates what the containers wrote in CRI log lines
// ("<RFC3339Nano time> <stream> <tag>[:<tag>...] <content>"): a full line
// (tag F) keeps its newline, a partial one (tag P) continues in the next.
// Lines that do not parse are skipped, as the kubelet's log reader skips
// them.
func criLogContent(lines [][]byte) []byte {
	var out []byte
	for _, l := range lines {
		ts, rest, ok := bytes.Cut(l, []byte(" "))
		if !ok {
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, string(ts)); err != nil {
			continue
		}
		_, rest, ok = bytes.Cut(rest, []byte(" ")) // stream
		if !ok {
			continue
		}
		tags, content, ok := bytes.Cut(rest, []byte(" "))
		if !ok {
			continue
		}
		if tag, _, _ := bytes.Cut(tags, []byte(":")); string(tag) == string(runtimeapi.LogTagPartial) {
			content = bytes.TrimSuffix(content, []byte("\n"))
		}
		out = append(out, content...)
	}
	return out
}
