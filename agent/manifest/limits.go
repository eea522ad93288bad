package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/minikubelet/minikubelet/internal/boundedyaml"
)

// Bounds on the work one manifest may cost, on top of MaxSize. Decoding
// turns a few bytes of text into far more memory ("{}" into a 1 KiB
// v1.Pod, a YAML key into half a kilobyte of nodes), so the size of the
// text alone does not bound it. Each bound is checked on the text before
// it is decoded, and each is far above what a real manifest needs; the
// kubelet has none of them.
const (
	// maxYAMLIndicators bounds the structure of one YAML document (see
	// boundedyaml.Count): go-yaml takes about 750 bytes and several
	// microseconds a node, so 100,000 of them cost about 100 MB.
	maxYAMLIndicators = 100_000
	// maxYAMLDocuments bounds the YAML documents of a manifest that are
	// decoded (documents of blank lines and comments are not).
	maxYAMLDocuments = 100
	// maxValues bounds the JSON values of a manifest: object members and
	// array elements, at every depth.
	maxValues = 250_000
	// maxPods bounds the pods of a PodList; a node runs far fewer.
	maxPods = 10_000
	// maxContainers bounds the containers (init, regular and ephemeral) of
	// all the pods of a manifest, maxVolumes their volumes.
	maxContainers = 10_000
	maxVolumes    = 10_000
	// maxDepth bounds the nesting of objects and arrays; a pod is never
	// more than about 15 deep.
	maxDepth = 100
	// maxQuantityLen bounds the text of a resource quantity: parsing and
	// printing one is quadratic in its digits.
	maxQuantityLen = 64
)

// checkUTF8 reports where data stops being UTF-8. The YAML library refuses
// such text without saying where; the JSON decoder replaces each bad byte
// with U+FFFD, silently changing names and values.
func checkUTF8(data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	off := 0
	for off < len(data) {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	line, col := lineColumn(data, off)
	return fmt.Errorf("manifest is not valid UTF-8: line %d, column %d has the byte 0x%02x: save the file as UTF-8", line, col, data[off])
}

// eachYAML calls f with each YAML document of data, as
// k8s.io/apimachinery's YAMLReader splits them but without copying them: a
// line starting with "---" ends a document that has content; such a line
// met before any content belongs to the document it starts. Text after
// "---" other than a comment is an error, as with YAMLReader. eachYAML
// stops at the first error f returns.
func eachYAML(data []byte, f func(n int, doc []byte) error) error {
	start, n := 0, 1 // the current document starts at start and is the nth
	for pos := 0; pos < len(data); {
		end := len(data)
		if nl := bytes.IndexByte(data[pos:], '\n'); nl >= 0 {
			end = pos + nl + 1
		}
		if rest, ok := bytes.CutPrefix(data[pos:end], []byte("---")); ok {
			rest = bytes.TrimSpace(rest)
			if len(rest) > 0 && rest[0] != '#' {
				return fmt.Errorf("read YAML document %d: invalid Yaml document separator: %s", n, elide(string(rest), maxShown))
			}
			if pos > start {
				if err := f(n, data[start:pos]); err != nil {
					return err
				}
				start, n = pos, n+1
			}
		}
		pos = end
	}
	if start < len(data) {
		return f(n, data[start:])
	}
	return nil
}

// blankYAML reports whether doc holds only blank lines, comments and
// document markers, which decode to nothing.
func blankYAML(doc []byte) bool {
	for len(doc) > 0 {
		line := doc
		if nl := bytes.IndexByte(doc, '\n'); nl >= 0 {
			line, doc = doc[:nl], doc[nl+1:]
		} else {
			doc = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) && !bytes.Equal(line, []byte("...")) {
			return false
		}
	}
	return true
}

// yamlLimits are the bounds on converting one YAML document: its
// structure, its nesting, and its size with its aliases expanded: MaxSize
// bytes as for any manifest, and maxValues nodes as checkJSON counts them.
var yamlLimits = boundedyaml.Limits{MaxIndicators: maxYAMLIndicators, MaxExpanded: MaxSize, MaxNodes: maxValues, MaxDepth: maxDepth}

// checkJSON checks js, a JSON document, against the bounds above before it
// is decoded. It never reports a syntax error: it stops at the first one,
// and leaves it to the decoder, which checks the syntax of the whole
// document before it allocates anything.
func checkJSON(js []byte) error {
	s := jsonScan{js: js}
	return s.run()
}

// arrayKind is what the elements of an array are, for the bounds that
// count them.
type arrayKind int

const (
	otherArray arrayKind = iota
	podArray
	containerArray
	volumeArray
)

// scanFrame is one open object or array of a jsonScan.
type scanFrame struct {
	array bool
	// key is the name of the member this object or array is the value
	// of; empty for the root and for array elements.
	key string
	// n counts the members or elements so far.
	n int
	// member is the name of an object's current member.
	member string
	// wantKey is true in an object where the next string is a name.
	wantKey bool
	kind    arrayKind
}

// jsonScan walks a JSON document with a stack of its open objects and
// arrays, counting what the bounds count; it allocates only the stack.
type jsonScan struct {
	js                        []byte
	i                         int
	stack                     []scanFrame
	values                    int
	pods, containers, volumes int
}

func (s *jsonScan) top() *scanFrame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

func (s *jsonScan) run() error {
	for s.i < len(s.js) {
		c := s.js[s.i]
		switch c {
		case ' ', '\t', '\n', '\r':
			s.i++
		case '{', '[':
			if err := s.open(c == '['); err != nil {
				return err
			}
			s.i++
		case '}', ']':
			if len(s.stack) == 0 {
				return nil
			}
			s.stack = s.stack[:len(s.stack)-1]
			s.i++
			if len(s.stack) == 0 {
				return nil // the decoder reports anything after the root
			}
		case ',':
			if f := s.top(); f != nil && !f.array {
				f.wantKey = true
			}
			s.i++
		case ':':
			s.i++
		case '"':
			raw, ok := s.readString()
			if !ok {
				return nil
			}
			if f := s.top(); f != nil && !f.array && f.wantKey {
				f.member, f.wantKey = memberName(raw), false
				f.n++
				if s.values++; s.values > maxValues {
					return errTooManyValues
				}
				continue
			}
			if err := s.scalar(len(raw)); err != nil {
				return err
			}
		default:
			start := s.i
			for s.i < len(s.js) && !isDelimiter(s.js[s.i]) {
				s.i++
			}
			if s.i == start {
				return nil
			}
			if err := s.scalar(s.i - start); err != nil {
				return err
			}
		}
	}
	return nil
}

// isDelimiter reports whether c ends a number or a literal.
func isDelimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', ']', '}', '[', '{', '"':
		return true
	}
	return false
}

// readString reads the string at s.i and returns its text between the
// quotes, still escaped.
func (s *jsonScan) readString() ([]byte, bool) {
	start := s.i + 1
	for i := start; i < len(s.js); i++ {
		switch s.js[i] {
		case '\\':
			i++
		case '"':
			s.i = i + 1
			return s.js[start:i], true
		}
	}
	return nil, false
}

// memberName unescapes a member name, which the decoder matches to a
// field after unescaping it.
func memberName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var name string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &name); err != nil {
		return string(raw)
	}
	return name
}

var errTooManyValues = fmt.Errorf("manifest holds more than %d values (keys and list entries): split it into smaller manifests", maxValues)

// element counts a value that begins in the current array, if it is one.
func (s *jsonScan) element() error {
	f := s.top()
	if f == nil || !f.array {
		return nil
	}
	f.n++
	if s.values++; s.values > maxValues {
		return errTooManyValues
	}
	switch f.kind {
	case podArray:
		if s.pods++; s.pods > maxPods {
			return fmt.Errorf("items: the PodList holds more than %d pods: a node runs far fewer; serve fewer pods", maxPods)
		}
	case containerArray:
		if s.containers++; s.containers > maxContainers {
			return fmt.Errorf("%s: the manifest holds more than %d containers (init, regular and ephemeral, of all its pods): split it into smaller manifests", s.path(false), maxContainers)
		}
	case volumeArray:
		if s.volumes++; s.volumes > maxVolumes {
			return fmt.Errorf("%s: the manifest holds more than %d volumes (of all its pods): split it into smaller manifests", s.path(false), maxVolumes)
		}
	}
	return nil
}

// open pushes an object or array.
func (s *jsonScan) open(array bool) error {
	if err := s.element(); err != nil {
		return err
	}
	f := scanFrame{array: array, wantKey: !array}
	if parent := s.top(); parent != nil && !parent.array {
		f.key = parent.member
	}
	if array {
		f.kind = s.kindOf(f.key)
	}
	s.stack = append(s.stack, f)
	if len(s.stack) > maxDepth {
		return fmt.Errorf("%s: the manifest nests objects and lists more than %d levels deep, and a pod never does: look for a runaway bracket or indentation", s.path(false), maxDepth)
	}
	return nil
}

// kindOf tells what an array that is the member key of the current object
// holds.
func (s *jsonScan) kindOf(key string) arrayKind {
	parent := s.top()
	switch {
	case parent == nil:
		return otherArray
	case len(s.stack) == 1 && key == "items":
		return podArray
	case parent.key != "spec":
		return otherArray
	case key == "containers", key == "initContainers", key == "ephemeralContainers":
		return containerArray
	case key == "volumes":
		return volumeArray
	}
	return otherArray
}

// quantityMaps are the members whose values are maps of resource
// quantities; quantityMembers those whose value is one.
var (
	quantityMaps    = []string{"limits", "requests", "overhead", "allocatedResources"}
	quantityMembers = []string{"sizeLimit", "divisor"}
)

// scalar checks a string, number or literal of n bytes of text (between
// the quotes of a string).
func (s *jsonScan) scalar(n int) error {
	if err := s.element(); err != nil {
		return err
	}
	f := s.top()
	if f == nil || f.array || n <= maxQuantityLen {
		return nil
	}
	if !slices.Contains(quantityMaps, f.key) && !slices.Contains(quantityMembers, f.member) {
		return nil
	}
	return fmt.Errorf("%s: the quantity is %d characters long, and a quantity has at most %d (such as 500m, 1.5Gi or 2e9)", s.path(true), n, maxQuantityLen)
}

// path returns the field path of the current position, as validation
// errors write it; withMember adds the current object's member (as a map
// key within a quantity map).
func (s *jsonScan) path(withMember bool) string {
	var b strings.Builder
	for i := 1; i < len(s.stack); i++ {
		if parent := s.stack[i-1]; parent.array {
			b.WriteString("[" + strconv.Itoa(parent.n-1) + "]")
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(elide(s.stack[i].key, maxShown))
		}
	}
	if f := s.top(); withMember && f != nil && !f.array {
		if slices.Contains(quantityMaps, f.key) {
			b.WriteString("[" + elide(f.member, maxShown) + "]")
		} else {
			b.WriteString("." + elide(f.member, maxShown))
		}
	}
	if b.Len() == 0 {
		return "<root>"
	}
	return elide(b.String(), 4*maxShown)
}

// maxShown is how much of a value or name an error quotes; maxListed how
// many problems it lists.
const (
	maxShown  = 128
	maxListed = 20
)

// elide shortens s, when it is longer than n bytes, to its first n bytes
// (cut at a character boundary) and a note of its length.
func elide(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}

// joinErrors joins msgs, the first of total messages, with "; ", each
// elided to a few times maxShown bytes, and says how many were left out.
func joinErrors(msgs []string, total int) string {
	out := make([]string, 0, len(msgs)+1)
	for _, m := range msgs {
		out = append(out, elide(m, 8*maxShown))
	}
	if n := total - len(msgs); n > 0 {
		out = append(out, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(out, "; ")
}
