package stats

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Strings, floats and times that exercise encoding/json's escaping and
// formats.
var (
	jsonStrings = []string{"", "plain", "pod-1_a.b", `quo"te\back`, "<b>&amp;", "tab\tnl\nret\r", "\x00\x1f\x7f", "us\x1f", "del\x7f", "bs\b ff\f",
		"é ü 日本", "line\u2028sep\u2029", "bad \xff utf8", "ns/name"}
	jsonFloats = []float64{0, 1, -1.5, 0.1, 1e-7, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 3e-10, -2.5e-300, math.MaxFloat64, 5e-324, 100}
)

// fill sets v and every field below it from r: a pointer is nil one time
// in five, a slice or map nil or empty one time in four. It fails on a
// kind it does not know, so that a field of a new kind added to statsapi
// is noticed.
func fill(t *testing.T, r *rand.Rand, v reflect.Value) {
	t.Helper()
	if v.Type() == reflect.TypeOf(metav1.Time{}) {
		if r.IntN(5) > 0 {
			loc := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800), time.FixedZone("y", -7*3600)}[r.IntN(3)]
			v.Set(reflect.ValueOf(metav1.NewTime(time.Unix(1e9+r.Int64N(1e9), r.Int64N(1e9)).In(loc))))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if r.IntN(5) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(t, r, v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(t, r, v.Field(i))
		}
	case reflect.Slice:
		switch n := r.IntN(8); n {
		case 0: // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			v.Set(reflect.MakeSlice(v.Type(), n-1, n-1))
			for i := 0; i < n-1; i++ {
				fill(t, r, v.Index(i))
			}
		}
	case reflect.Map:
		switch n := r.IntN(6); n {
		case 0:
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			v.Set(reflect.MakeMap(v.Type()))
			for i := 0; i < n; i++ {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				fill(t, r, k)
				fill(t, r, e)
				v.SetMapIndex(k, e)
			}
		}
	case reflect.String:
		v.SetString(jsonStrings[r.IntN(len(jsonStrings))])
	case reflect.Uint64:
		v.SetUint([]uint64{0, 1, 42, 1 << 53, math.MaxUint64, r.Uint64()}[r.IntN(6)])
	case reflect.Int64:
		v.SetInt([]int64{0, -1, 4194304, math.MinInt64, r.Int64()}[r.IntN(5)])
	case reflect.Float64:
		f := jsonFloats[r.IntN(len(jsonFloats))]
		if r.IntN(2) == 0 {
			f = -f
		}
		v.SetFloat(f)
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	default:
		t.Fatalf("fill: %s of kind %s: write it in summary_json.go, then teach fill", v.Type(), v.Kind())
	}
}

func encodingJSON(t *testing.T, s *statsapi.Summary) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeSummary writes what encoding/json writes, for summaries with every
// field of every type set, or nil, or empty, and values its escaping and
// number formats treat apart.
func TestSummaryJSON(t *testing.T) {
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 21))
		var s statsapi.Summary
		fill(t, r, reflect.ValueOf(&s).Elem())
		var got bytes.Buffer
		if err := writeSummary(&got, &s, newKept[[]byte](1)); err != nil {
			t.Fatal(err)
		}
		if want := encodingJSON(t, &s); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("seed %d: writeSummary wrote\n%s\nencoding/json\n%s", seed, got.Bytes(), want)
		}
	}
}

// A summary of many pods is written in parts, the same; the Provider's
// own, too.
func TestSummaryJSONLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s statsapi.Summary
	for len(s.Pods) < 300 {
		var pod statsapi.PodStats
		fill(t, r, reflect.ValueOf(&pod).Elem())
		s.Pods = append(s.Pods, pod)
	}
	var got bytes.Buffer
	w := &countingWriter{w: &got}
	if err := writeSummary(w, &s, newKept[[]byte](1)); err != nil {
		t.Fatal(err)
	}
	if want := encodingJSON(t, &s); !bytes.Equal(got.Bytes(), want) || w.writes < 2 {
		t.Errorf("a large summary in %d writes differs from encoding/json's (%d bytes against %d)", w.writes, got.Len(), len(want))
	}
	p, _, _ := testProvider(t)
	for _, only := range []bool{false, true} {
		summary := p.Summary(t.Context(), only)
		got.Reset()
		if err := writeSummary(&got, summary, newKept[[]byte](1)); err != nil {
			t.Fatal(err)
		}
		if want := encodingJSON(t, summary); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("the Provider's summary (only cpu and memory: %v): writeSummary wrote\n%s\nencoding/json\n%s", only, got.Bytes(), want)
		}
	}
}

// A float JSON cannot hold: nothing is written, as encoding/json writes
// nothing, and the error is its.
func TestSummaryJSONNaN(t *testing.T) {
	s := statsapi.Summary{Node: statsapi.NodeStats{CPU: &statsapi.CPUStats{PSI: &statsapi.PSIStats{Full: statsapi.PSIData{Avg10: math.NaN()}}}}}
	var got bytes.Buffer
	if err := writeSummary(&got, &s, newKept[[]byte](1)); err == nil || got.Len() != 0 {
		t.Errorf("with a NaN: %v, %q; want encoding/json's error and nothing written", err, got.String())
	}
}

type countingWriter struct {
	w      *bytes.Buffer
	writes int
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.writes++
	return c.w.Write(b)
}
