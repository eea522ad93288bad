package boundedyaml

import (
	"bytes"
	"fmt"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// Limits bound the work of converting one document. A zero field sets no
// bound.
type Limits struct {
	// MaxIndicators is the most characters that start a node (see Count)
	// the document may hold; each stands for at most three nodes.
	MaxIndicators int
	// MaxExpanded is the most bytes the document's JSON may have, its
	// aliases expanded.
	MaxExpanded int
	// MaxNodes is the most nodes (map entries, list entries and the
	// root) the document may have, its aliases expanded. Without aliases
	// MaxIndicators bounds them already; it is checked only with aliases.
	MaxNodes int
	// MaxDepth is the deepest nesting the document may show on one line
	// (see Depth). go-yaml stops at 10,000 levels, but takes close to a
	// kilobyte a level to get there.
	MaxDepth int
}

// LimitError is a document over one of its Limits.
type LimitError struct {
	// Msg says which limit was passed and what to do.
	Msg string
}

func (e *LimitError) Error() string { return e.Msg }

// ToJSON converts doc, one YAML document, to JSON as
// sigs.k8s.io/yaml.YAMLToJSONStrict does (a key set twice in a mapping is an
// error), after checking it against l. A document over a limit yields a
// *LimitError; a document that is not YAML the library's error.
func ToJSON(doc []byte, l Limits) ([]byte, error) {
	if l.MaxDepth > 0 {
		if d := Depth(doc); d > l.MaxDepth {
			return nil, &LimitError{Msg: fmt.Sprintf(
				"the YAML nests more than %d levels deep (brackets, or list entries on one line): look for a runaway bracket", l.MaxDepth)}
		}
	}
	if l.MaxIndicators > 0 {
		if n := Count(doc); n > l.MaxIndicators {
			return nil, &LimitError{Msg: fmt.Sprintf(
				"the YAML has %d keys, list entries and brackets, more than the %d this agent decodes in one document: split it, or write it as JSON",
				n, l.MaxIndicators)}
		}
	}
	if (l.MaxExpanded > 0 || l.MaxNodes > 0) && mayAlias(doc) {
		var obj any
		if err := goyaml.UnmarshalStrict(doc, &obj); err != nil {
			return nil, err
		}
		size, nodes := expanded(obj, l)
		switch {
		case l.MaxExpanded > 0 && size > l.MaxExpanded:
			return nil, &LimitError{Msg: fmt.Sprintf(
				"the YAML's aliases (*name) expand it to more than %d bytes: write the repeated values out, or refer to them fewer times",
				l.MaxExpanded)}
		case l.MaxNodes > 0 && nodes > l.MaxNodes:
			return nil, &LimitError{Msg: fmt.Sprintf(
				"the YAML's aliases (*name) expand it to more than %d keys and list entries: refer to them fewer times",
				l.MaxNodes)}
		}
	}
	return yaml.YAMLToJSONStrict(doc)
}

// Count returns the number of characters in doc that may start a YAML
// node: every ':', ',', '[' and '{', and every '-' and '?' followed by a
// blank or the end (a block entry or an explicit key). Quoted text and
// comments are counted too: Count looks at bytes, not tokens, so it never
// counts fewer than the document has. A node needs one of them, except
// the root, and one of them starts at most three nodes ('{' a mapping, its
// first key and value).
func Count(doc []byte) int {
	n := bytes.Count(doc, []byte{':'}) + bytes.Count(doc, []byte{','}) +
		bytes.Count(doc, []byte{'['}) + bytes.Count(doc, []byte{'{'})
	for _, c := range []byte{'-', '?'} {
		for i := 0; ; i++ {
			j := bytes.IndexByte(doc[i:], c)
			if j < 0 {
				break
			}
			i += j
			if i+1 == len(doc) || isBlank(doc[i+1]) {
				n++
			}
		}
	}
	return n
}

// Depth returns the deepest nesting doc shows on one line: of flow
// collections ('[' and '{' not yet closed), or of block entries ("- - -")
// at the start of a line. Like Count it looks at bytes, so brackets in
// quoted text count. Nesting by indentation is not counted: each level
// takes a line and one more space than the last, so a document of a few
// megabytes cannot nest that way much more than a few thousand levels.
func Depth(doc []byte) int {
	deepest, flow, chain := 0, 0, 0
	lineStart := true // only blanks and block entries so far on this line
	for i, c := range doc {
		switch c {
		case '\n':
			lineStart, chain = true, 0
			continue
		case ' ', '\t', '\r':
			continue
		case '-':
			if lineStart && (i+1 == len(doc) || isBlank(doc[i+1])) {
				chain++
				deepest = max(deepest, chain)
				continue
			}
		case '[', '{':
			flow++
			deepest = max(deepest, flow)
		case ']', '}':
			flow = max(flow-1, 0)
		}
		lineStart = false
	}
	return deepest
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// mayAlias reports whether doc may hold an alias: it needs an anchor (&)
// and an alias (*).
func mayAlias(doc []byte) bool {
	return bytes.IndexByte(doc, '&') >= 0 && bytes.IndexByte(doc, '*') >= 0
}

// expanded returns about how many bytes of JSON v makes (a value as
// go-yaml decodes it into an interface{}), and how many nodes it has (map
// entries, list entries and the root); it stops counting as soon as
// either passes its limit in l. It walks each aliased value as many times
// as it is referred to, but go-yaml has already built each of those
// copies (it bounds their count), except for strings, which it shares and
// which cost nothing to measure.
func expanded(v any, l Limits) (size, nodes int) {
	over := func() bool {
		return (l.MaxExpanded > 0 && size > l.MaxExpanded) || (l.MaxNodes > 0 && nodes > l.MaxNodes)
	}
	var walk func(v any) bool // false once over a limit
	walk = func(v any) bool {
		nodes++
		switch x := v.(type) {
		case string:
			size += len(x) + 2
		case map[any]any:
			size += 2
			for k, e := range x {
				size += 2 // ':' and ','
				nodes--   // an entry is one node, its key and value two
				if !walk(k) || !walk(e) {
					return false
				}
			}
		case []any:
			size += 2
			for _, e := range x {
				size++ // ','
				if !walk(e) {
					return false
				}
			}
		default: // numbers, booleans, null
			size += 8
		}
		return !over()
	}
	walk(v)
	return size, nodes
}
