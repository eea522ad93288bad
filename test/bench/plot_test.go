package main

import (
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The latency panel draws the raw CRI calls' floor beside the agent's
// figures, at the same pod counts.
func TestLatencyPanelHasTheRawFloor(t *testing.T) {
	r := &report{
		PodStart: &latencyPair{Raw: latency{MedianMs: 165}, Agent: latency{MedianMs: 208}},
		Batches:  []batch{{Pods: 30, Ms: 4292, RawMs: 2797}, {Pods: 110, Ms: 17620, RawMs: 16183}},
	}
	lat := latencyPanel(r)
	if len(lat.series) != 2 {
		t.Fatalf("%d series, want the agent's and the raw calls'", len(lat.series))
	}
	want := map[string][][2]float64{
		"minikubelet": {{1, 208}, {30, 4292}, {110, 17620}},
		"raw CRI":     {{1, 165}, {30, 2797}, {110, 16183}},
	}
	for _, s := range lat.series {
		if !reflect.DeepEqual(s.points, want[s.name]) {
			t.Errorf("series %q: %v, want %v", s.name, s.points, want[s.name])
		}
	}
	// A report from before the raw batches has the agent's line alone.
	old := &report{Batches: []batch{{Pods: 30, Ms: 4292}}}
	if got := latencyPanel(old).series; len(got) != 1 || got[0].name != "minikubelet" {
		t.Errorf("without raw figures: %+v, want the agent's series alone", got)
	}
}

// -replot draws a PNG of the three panels from a report's JSON.
func TestReplot(t *testing.T) {
	dir := t.TempDir()
	r := &report{PodStart: &latencyPair{Raw: latency{MedianMs: 165}, Agent: latency{MedianMs: 208}}}
	js := filepath.Join(dir, "r.json")
	if err := r.write(js); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "p.png")
	if err := replotReport(js, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 3*420 || b.Dy() != 320 {
		t.Errorf("plot of %v, want 1260x320", b)
	}
	if err := replotReport(filepath.Join(dir, "none.json"), out); err == nil {
		t.Error("replot of a missing report: no error")
	}
}
