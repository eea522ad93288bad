package stats

import (
	"bufio"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// The metrics endpoints write the Prometheus text exposition format,
// version 0.0.4, themselves rather than through client_golang: at 100 pods
// /metrics/cadvisor has some 4,700 series, and building each as a
// prometheus.Metric (descriptors, label pairs, then gathering, sorting and
// encoding them) cost more than reading the cgroups. The output is what
// client_golang's text encoder writes for the same series (families
// sorted by name, # HELP and # TYPE once before a family's first sample,
// label pairs sorted by name, label values and help escaped as the
// format says, numbers as strconv's shortest 'g' form); the tests parse
// both with expfmt and compare them.

// textContentType is the Content-Type of the format, as promhttp sends it.
const textContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// metricType is a family's # TYPE.
type metricType string

const (
	counter metricType = "counter"
	gauge   metricType = "gauge"
)

// textWriter writes series in the text format to an io.Writer through a
// buffer of its own. Not safe for concurrent use; the first write error
// is kept (err) and ends the output.
type textWriter struct {
	w   io.Writer
	buf []byte
	err error
	// header is the family whose # HELP and # TYPE lines are written
	// before its first sample (none if it has none, as client_golang).
	header struct {
		name, help string
		typ        metricType
		pending    bool
	}
}

// textFlushAt is the buffered size at which a textWriter writes out.
const textFlushAt = 32 << 10

// newTextWriter returns a textWriter writing to w through a buffer of
// bufs; release gives it back.
func newTextWriter(w io.Writer, bufs *kept[[]byte]) *textWriter {
	return &textWriter{w: w, buf: bufs.get(newTextBuffer)[:0]}
}

func newTextBuffer() []byte { return make([]byte, 0, textFlushAt+4096) }

// release gives t's buffer back to bufs; t is not used after.
func (t *textWriter) release(bufs *kept[[]byte]) {
	bufs.put(t.buf[:0])
	t.buf = nil
}

// family starts the family name; families must come sorted by name and
// each at most once.
func (t *textWriter) family(name, help string, typ metricType) {
	t.header.name, t.header.help, t.header.typ, t.header.pending = name, help, typ, true
}

// series writes the start of a sample of the current family: its name,
// its header first if it is the family's first.
func (t *textWriter) series() {
	if t.header.pending {
		t.header.pending = false
		t.buf = append(t.buf, "# HELP "...)
		t.buf = append(t.buf, t.header.name...)
		t.buf = append(t.buf, ' ')
		t.buf = appendEscaped(t.buf, t.header.help, false)
		t.buf = append(t.buf, "\n# TYPE "...)
		t.buf = append(t.buf, t.header.name...)
		t.buf = append(t.buf, ' ')
		t.buf = append(t.buf, t.header.typ...)
		t.buf = append(t.buf, '\n')
	}
	t.buf = append(t.buf, t.header.name...)
}

// labels writes the label pairs of a sample, each already written as
// name="escaped value" (pair), in the order given, which must be sorted
// by label name; none writes nothing.
func (t *textWriter) labels(pairs ...string) {
	if len(pairs) == 0 {
		return
	}
	t.buf = append(t.buf, '{')
	for i, p := range pairs {
		if i > 0 {
			t.buf = append(t.buf, ',')
		}
		t.buf = append(t.buf, p...)
	}
	t.buf = append(t.buf, '}')
}

// value ends a sample with its value and, if ms is not negative, its
// timestamp in milliseconds since the epoch.
func (t *textWriter) value(v float64, ms int64) {
	t.buf = append(t.buf, ' ')
	t.buf = appendFloat(t.buf, v)
	if ms >= 0 {
		t.buf = append(t.buf, ' ')
		t.buf = strconv.AppendInt(t.buf, ms, 10)
	}
	t.buf = append(t.buf, '\n')
	if len(t.buf) >= textFlushAt {
		_ = t.flush() // kept in t.err
	}
}

// sample writes a whole sample of the current family.
func (t *textWriter) sample(v float64, ms int64, pairs ...string) {
	t.series()
	t.labels(pairs...)
	t.value(v, ms)
}

// flush writes out what is buffered; it returns the first error met.
func (t *textWriter) flush() error {
	if t.err == nil && len(t.buf) > 0 {
		_, t.err = t.w.Write(t.buf)
	}
	t.buf = t.buf[:0]
	return t.err
}

// appendFloat writes v as client_golang's text encoder does.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// pair is a label pair as written: name="value", the value escaped.
func pair(name, value string) string {
	b := make([]byte, 0, len(name)+len(value)+3)
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendEscaped(b, value, true)
	b = append(b, '"')
	return string(b)
}

// appendEscaped escapes s as the format says: a backslash and a line feed
// everywhere, a double quote too in label values.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '"' && quote:
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	return b
}

// gzipWriters keeps the gzip writers of compressed metrics responses
// (making one costs some 0.5 MB of state, 1.2 MB with compress/gzip's,
// and 0.1 ms), and the buffers their output goes through: the compressor
// writes a few hundred bytes at a time, which net/http's 4 KB buffer
// would send in some 40 writes to the socket for /metrics/cadvisor.
type gzipWriters struct {
	zw *kept[*gzip.Writer]
	bw *kept[*bufio.Writer]
}

// gzipBufferSize is the size of the buffer of compressed output.
const gzipBufferSize = 32 << 10

func newGzipWriters(keep int) *gzipWriters {
	return &gzipWriters{zw: newKept[*gzip.Writer](keep), bw: newKept[*bufio.Writer](keep)}
}

// get returns a writer compressing to w and a function that ends its
// output and keeps it.
func (g *gzipWriters) get(w io.Writer) (*gzip.Writer, func()) {
	bw := g.bw.get(func() *bufio.Writer { return bufio.NewWriterSize(w, gzipBufferSize) })
	bw.Reset(w)
	zw := g.zw.get(func() *gzip.Writer {
		zw, _ := gzip.NewWriterLevel(bw, gzip.BestSpeed) // a valid level
		return zw
	})
	zw.Reset(bw)
	return zw, func() {
		_ = zw.Close() // a client gone
		_ = bw.Flush()
		// Drop the references to the response.
		zw.Reset(io.Discard)
		bw.Reset(io.Discard)
		g.zw.put(zw)
		g.bw.put(bw)
	}
}

// metricsResponse starts a text-format response on w, gzip-compressed
// when the request accepts it (as promhttp does, at its fastest level:
// github.com/klauspost/compress's, twice as fast as compress/gzip's, for
// a body a few percent smaller), and returns the writer to write the body
// to and a function that ends it.
func metricsResponse(w http.ResponseWriter, r *http.Request, gz *gzipWriters) (io.Writer, func()) {
	h := w.Header()
	h.Set("Content-Type", textContentType)
	h.Add("Vary", "Accept-Encoding")
	if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
		return w, func() {}
	}
	h.Set("Content-Encoding", "gzip")
	return gz.get(w)
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip
// (listed, or as *, with a q-value above 0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}
