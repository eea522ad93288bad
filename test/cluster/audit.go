package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The node's audit log (Options.AuditNode): kube-apiserver logs, at the
// Metadata level, every request of user system:node:<name> and nothing
// else, each when it is received (stage RequestReceived) and when its
// answer is complete (ResponseComplete; a watch's when it ends), one JSON
// line per event, in blocking mode: a line is written before the request
// is served. Counting the RequestReceived lines between two marks counts
// exactly the requests the node made in between.

// auditLogName and auditPolicyName are the log's and the policy's files
// in the cluster's directory (the log is copied with the others to
// Options.LogDir).
const (
	auditLogName    = "node-audit.log"
	auditPolicyName = "node-audit-policy.yaml"
)

// auditArgs writes the audit policy and returns kube-apiserver's flags for
// it, or nothing without Options.AuditNode.
func (c *Cluster) auditArgs() ([]string, error) {
	if !c.opts.AuditNode {
		return nil, nil
	}
	policy := fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted]
rules:
- level: Metadata
  users: [%q]
- level: None
`, "system:node:"+c.nodeName)
	path := filepath.Join(c.dir, auditPolicyName)
	if err := writeFile(path, []byte(policy)); err != nil {
		return nil, err
	}
	return []string{
		"--audit-policy-file", path,
		"--audit-log-path", c.AuditLog(),
		"--audit-log-format", "json",
		"--audit-log-mode", "blocking",
		"--audit-log-maxsize", "0",
	}, nil
}

// AuditLog is the path of the node's audit log (Options.AuditNode).
func (c *Cluster) AuditLog() string { return filepath.Join(c.dir, auditLogName) }

// AuditMark is the node's audit log's length up to its last complete
// line: a position to count requests from or to (NodeRequests). It needs
// Options.AuditNode.
func (c *Cluster) AuditMark() (int64, error) {
	if !c.opts.AuditNode {
		return 0, errors.New("cluster: AuditMark needs Options.AuditNode")
	}
	f, err := os.Open(c.AuditLog())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // nothing logged yet
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	// Back to just after the last newline.
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}

// Request is the kind of a request: its verb (get, list, watch, create,
// update, patch, delete, ...) and resource, with its subresource after a
// slash (pods/status); a request for no resource (discovery, /healthz) has
// its path as the resource.
type Request struct {
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
}

func (r Request) String() string { return r.Verb + " " + r.Resource }

// Requests are the node's requests between two marks of the audit log.
type Requests struct {
	// Count is the requests received, by kind.
	Count map[Request]int
	// Failed is the requests answered with a status of 400 or more, by
	// kind and status (a watch's answer counts when the watch ends).
	Failed map[Request]map[int]int
}

// Total is the number of requests received.
func (r Requests) Total() int {
	n := 0
	for _, v := range r.Count {
		n += v
	}
	return n
}

// Kinds are the kinds of request counted, most frequent first.
func (r Requests) Kinds() []Request {
	kinds := make([]Request, 0, len(r.Count))
	for k := range r.Count {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if r.Count[kinds[i]] != r.Count[kinds[j]] {
			return r.Count[kinds[i]] > r.Count[kinds[j]]
		}
		return kinds[i].String() < kinds[j].String()
	})
	return kinds
}

// NodeRequests counts the node's requests in its audit log between the
// marks from and to (AuditMark).
func (c *Cluster) NodeRequests(from, to int64) (Requests, error) {
	f, err := os.Open(c.AuditLog())
	if err != nil {
		return Requests{}, err
	}
	defer f.Close()
	r, err := countRequests(io.NewSectionReader(f, from, to-from))
	if err != nil {
		return Requests{}, fmt.Errorf("%s: %w", c.AuditLog(), err)
	}
	return r, nil
}

// auditEvent is what countRequests reads of an audit event
// (k8s.io/apiserver/pkg/apis/audit/v1.Event).
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// countRequests counts the audit events of r, one JSON object a line.
func countRequests(r io.Reader) (Requests, error) {
	out := Requests{Count: map[Request]int{}, Failed: map[Request]map[int]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return Requests{}, fmt.Errorf("line %d: %w", line, err)
		}
		path, _, _ := strings.Cut(ev.RequestURI, "?")
		kind := Request{Verb: ev.Verb, Resource: path}
		if ev.ObjectRef != nil && ev.ObjectRef.Resource != "" {
			kind.Resource = ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				kind.Resource += "/" + ev.ObjectRef.Subresource
			}
		}
		switch ev.Stage {
		case "RequestReceived":
			out.Count[kind]++
		case "ResponseComplete", "Panic":
			code := 0
			if ev.ResponseStatus != nil {
				code = ev.ResponseStatus.Code
			}
			if code >= 400 || ev.Stage == "Panic" {
				if out.Failed[kind] == nil {
					out.Failed[kind] = map[int]int{}
				}
				out.Failed[kind][code]++
			}
		}
	}
	return out, sc.Err()
}

// FormatFailed says which requests failed, as "patch pods/status: 409 x2".
func (r Requests) FormatFailed() []string {
	var out []string
	for kind, codes := range r.Failed {
		for code, n := range codes {
			out = append(out, kind.String()+": "+strconv.Itoa(code)+" x"+strconv.Itoa(n))
		}
	}
	sort.Strings(out)
	return out
}
