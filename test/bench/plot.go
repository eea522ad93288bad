package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// series is one line of a panel.
type series struct {
	name   string
	color  color.RGBA
	points [][2]float64 // x, y
}

// panel is one chart: x is the pod count.
type panel struct {
	title, xLabel, yLabel string
	series                []series
}

var (
	black  = color.RGBA{0, 0, 0, 255}
	grey   = color.RGBA{200, 200, 200, 255}
	blue   = color.RGBA{31, 119, 180, 255}
	orange = color.RGBA{255, 127, 14, 255}
	green  = color.RGBA{44, 160, 44, 255}
)

// plot draws the report's start latency (with the raw CRI calls' floor),
// CPU and RSS against pod count as three side-by-side line charts in a
// PNG.
func (r *report) plot(path string) error {
	var cpu panel
	cpu.title, cpu.xLabel, cpu.yLabel = "agent CPU at steady state", "running pods", "% of one core"
	var rss panel
	rss.title, rss.xLabel, rss.yLabel = "agent RSS at steady state", "running pods", "MiB"
	for i, mode := range []string{"relist", "evented"} {
		c := []color.RGBA{orange, blue}[i]
		sc, sr := series{name: mode, color: c}, series{name: mode, color: c}
		for _, s := range r.Steady {
			if s.Mode == mode {
				sc.points = append(sc.points, [2]float64{float64(s.Pods), s.CPUPercent})
				sr.points = append(sr.points, [2]float64{float64(s.Pods), s.RSSMiB})
			}
		}
		cpu.series, rss.series = append(cpu.series, sc), append(rss.series, sr)
	}
	lat := latencyPanel(r)

	const w, h = 420, 320
	img := image.NewRGBA(image.Rect(0, 0, 3*w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	for i, p := range []panel{lat, cpu, rss} {
		p.draw(img, image.Rect(i*w, 0, (i+1)*w, h))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// latencyPanel is the start latency against pods written at once, the
// agent's and, where the report has them, the raw CRI calls'.
func latencyPanel(r *report) panel {
	lat := panel{title: "start latency: write to all Running", xLabel: "pods written at once", yLabel: "ms"}
	s := series{name: "minikubelet", color: green}
	raw := series{name: "raw CRI", color: black}
	if r.PodStart != nil {
		s.points = append(s.points, [2]float64{1, r.PodStart.Agent.MedianMs})
		raw.points = append(raw.points, [2]float64{1, r.PodStart.Raw.MedianMs})
	}
	for _, b := range r.Batches {
		s.points = append(s.points, [2]float64{float64(b.Pods), b.Ms})
		if b.RawMs > 0 {
			raw.points = append(raw.points, [2]float64{float64(b.Pods), b.RawMs})
		}
	}
	lat.series = append(lat.series, s)
	if len(raw.points) > 0 {
		lat.series = append(lat.series, raw)
	}
	return lat

}

func (p panel) draw(img *image.RGBA, r image.Rectangle) {
	const left, right, top, bottom = 60, 15, 30, 45
	plot := image.Rect(r.Min.X+left, r.Min.Y+top, r.Max.X-right, r.Max.Y-bottom)
	maxX, maxY := 1.0, 0.0
	for _, s := range p.series {
		for _, pt := range s.points {
			maxX, maxY = math.Max(maxX, pt[0]), math.Max(maxY, pt[1])
		}
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY = niceCeil(maxY * 1.1)
	toPx := func(x, y float64) (int, int) {
		return plot.Min.X + int(x/maxX*float64(plot.Dx())), plot.Max.Y - int(y/maxY*float64(plot.Dy()))
	}
	for i := 0; i <= 4; i++ { // grid and y ticks
		y := maxY * float64(i) / 4
		_, py := toPx(0, y)
		hline(img, plot.Min.X, plot.Max.X, py, grey)
		label := fmt.Sprintf("%.3g", y)
		if maxY >= 100 {
			label = fmt.Sprintf("%.0f", y)
		}
		text(img, r.Min.X+5, py+4, label, black)
	}
	hline(img, plot.Min.X, plot.Max.X, plot.Max.Y, black)
	vline(img, plot.Min.X, plot.Min.Y, plot.Max.Y, black)
	text(img, r.Min.X+left, r.Min.Y+13, p.title, black)
	text(img, plot.Min.X+plot.Dx()/2-len(p.xLabel)*3, r.Max.Y-10, p.xLabel, black)
	text(img, plot.Min.X+5, plot.Min.Y+12, p.yLabel, black)
	for si, s := range p.series {
		text(img, plot.Max.X-90, plot.Min.Y+15+si*14, s.name, s.color)
		for i, pt := range s.points {
			x, y := toPx(pt[0], pt[1])
			dot(img, x, y, s.color)
			text(img, x-6, plot.Max.Y+14, fmt.Sprintf("%g", pt[0]), black)
			if i > 0 {
				px, py := toPx(s.points[i-1][0], s.points[i-1][1])
				line(img, px, py, x, y, s.color)
			}
		}
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return v
}

func hline(img *image.RGBA, x0, x1, y int, c color.RGBA) {
	for x := x0; x <= x1; x++ {
		img.SetRGBA(x, y, c)
	}
}

func vline(img *image.RGBA, x, y0, y1 int, c color.RGBA) {
	for y := y0; y <= y1; y++ {
		img.SetRGBA(x, y, c)
	}
}

func dot(img *image.RGBA, x, y int, c color.RGBA) {
	for dx := -3; dx <= 3; dx++ {
		for dy := -3; dy <= 3; dy++ {
			img.SetRGBA(x+dx, y+dy, c)
		}
	}
}

// line draws a 2-pixel line from (x0,y0) to (x1,y1).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		x := x0 + (x1-x0)*i/steps
		y := y0 + (y1-y0)*i/steps
		img.SetRGBA(x, y, c)
		img.SetRGBA(x, y+1, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func text(img *image.RGBA, x, y int, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
