package webui

import (
	"fmt"
	"strconv"

	"github.com/workqueue/work"
)

// chart is a bar chart of per-minute processed and failed counts, drawn as inline SVG by the
// overview's template. Coordinates are in the SVG's viewBox units.
type chart struct {
	Width, Height int
	Left, Top     int // the plot area's top-left corner
	PlotW, PlotH  int
	Bottom        int // Top + PlotH
	Bars          []chartBar
	Ticks         []chartTick
	Max           int64
	MaxLabel      string
	MidY          int
	MidLabel      string
	Processed     int64
	Failed        int64
}

// chartBar is one minute: the processed part at the bottom, the failed part on top.
type chartBar struct {
	X, W              string
	PY, PH            string
	FY, FH            string
	Processed, Failed int64
	Label             string
}

type chartTick struct {
	X     string
	Label string
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// newChart lays out the bars of pts.
func newChart(pts []work.StatPoint) *chart {
	c := &chart{Width: 1000, Height: 190, Left: 44, Top: 10, PlotW: 944, PlotH: 150}
	c.Bottom = c.Top + c.PlotH
	for _, p := range pts {
		if t := p.Processed + p.Failed; t > c.Max {
			c.Max = t
		}
		c.Processed += p.Processed
		c.Failed += p.Failed
	}
	scaleMax := c.Max
	if scaleMax < 4 {
		scaleMax = 4
	}
	c.MaxLabel = strconv.FormatInt(scaleMax, 10)
	c.MidLabel = strconv.FormatInt(scaleMax/2, 10)
	c.MidY = c.Top + c.PlotH - int(float64(scaleMax/2)/float64(scaleMax)*float64(c.PlotH))
	if len(pts) == 0 {
		return c
	}
	slot := float64(c.PlotW) / float64(len(pts))
	w := slot * 0.8
	for i, p := range pts {
		x := float64(c.Left) + float64(i)*slot + (slot-w)/2
		ph := float64(p.Processed) / float64(scaleMax) * float64(c.PlotH)
		fh := float64(p.Failed) / float64(scaleMax) * float64(c.PlotH)
		py := float64(c.Bottom) - ph
		c.Bars = append(c.Bars, chartBar{
			X: f1(x), W: f1(w),
			PY: f1(py), PH: f1(ph),
			FY: f1(py - fh), FH: f1(fh),
			Processed: p.Processed, Failed: p.Failed,
			Label: fmt.Sprintf("%s UTC: %d processed, %d failed", p.Time.Format("15:04"), p.Processed, p.Failed),
		})
		if i%10 == 0 || i == len(pts)-1 {
			c.Ticks = append(c.Ticks, chartTick{X: f1(x + w/2), Label: p.Time.Format("15:04")})
		}
	}
	return c
}
