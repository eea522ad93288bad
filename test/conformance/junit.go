package conformance

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"time"
)

// Result is one spec's outcome in a run.
type Result struct {
	// Name is the spec's full text as -ginkgo.focus matches it, e.g.
	// "[sig-node] Pods should get a host IP [NodeConformance] [Conformance]".
	Name string `json:"name"`
	// State is ginkgo's: passed, failed, skipped, timedout, panicked,
	// interrupted, aborted or pending.
	State string `json:"state"`
	// Seconds is how long the spec ran.
	Seconds float64 `json:"seconds"`
	// Message is the failure or skip message.
	Message string `json:"message,omitempty"`
}

// Passed and Failed classify State.
func (r Result) Passed() bool { return r.State == "passed" }

// Failed is every state that is not a pass, a skip or pending.
func (r Result) Failed() bool {
	return r.State != "passed" && r.State != "skipped" && r.State != "pending"
}

// FirstLine is the message's first non-empty line.
func (r Result) FirstLine() string {
	for line := range strings.SplitSeq(r.Message, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// junit is the part of ginkgo's JUnit report read here.
type junit struct {
	Suites []struct {
		Cases []struct {
			Name    string  `xml:"name,attr"`
			Status  string  `xml:"status,attr"`
			Time    float64 `xml:"time,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// ReadJUnit reads the specs ("[It]" entries) that were selected to run
// from a ginkgo JUnit report: specs the focus left out (skipped, with the
// bare message "skipped") are not returned, specs that skipped themselves
// are. Suite setup and teardown nodes are left out unless they failed, in
// which case they are returned too (a failed BeforeSuite fails every spec).
func ReadJUnit(path string) ([]Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read JUnit report: %w", err)
	}
	var j junit
	if err := xml.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("parse JUnit report %s: %w", path, err)
	}
	var out []Result
	for _, s := range j.Suites {
		for _, c := range s.Cases {
			r := Result{Name: specName(c.Name), State: c.Status, Seconds: c.Time}
			switch {
			case c.Failure != nil:
				r.Message = c.Failure.Message
			case c.Error != nil:
				r.Message = c.Error.Message
			case c.Skipped != nil:
				r.Message = c.Skipped.Message
			}
			if !strings.HasPrefix(c.Name, "[It] ") && !r.Failed() || r.State == "skipped" && r.Message == "skipped" {
				continue
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// specName turns a JUnit test case name ("[It] TEXT [label, ...]") into
// the spec's text. Ginkgo appends the labels as one last bracket; the e2e
// framework puts every label into the text as well, as [label]. So a last
// bracket is the label group when each of its labels is also a tag of the
// text before it (and a lone label is so a second time).
func specName(name string) string {
	name = strings.TrimPrefix(name, "[It] ")
	open := strings.LastIndex(name, " [")
	if open < 0 || !strings.HasSuffix(name, "]") {
		return name
	}
	text, group := name[:open], name[open+2:len(name)-1]
	for label := range strings.SplitSeq(group, ", ") {
		if !strings.Contains(text, "["+label+"]") {
			return name
		}
	}
	return text
}

// Duration is a result's run time.
func (r Result) Duration() time.Duration {
	return time.Duration(r.Seconds * float64(time.Second))
}
