package ui

import (
	"fmt"
	"math"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"github.com/strata-llm/strata/api/protocol"
	"github.com/strata-llm/strata/engine"
)

// Live figures: the telemetry interval and how far back the plots go.
const (
	telemetryInterval = time.Second
	plotSpan          = 5 * time.Minute
)

// sample is one telemetry reading, as the status window plots it.
type sample struct {
	t   time.Time
	tps float64 // tokens generated per second since the previous reading
	hit float64 // cache hit rate in %, NaN when not reported
	ssd float64 // SSD reads in MB/s, NaN when not reported
}

// liveStats keeps the API's telemetry of the last plotSpan. Guarded by
// UI.mu.
type liveStats struct {
	have    bool
	last    protocol.Telemetry
	samples []sample
}

// add records a reading. The rate is the difference of generated_total
// between two readings over their time apart, so it counts every
// generation the API ran (any app's), prefill pauses included.
func (l *liveStats) add(t protocol.Telemetry) {
	s := sample{t: t.Time, hit: math.NaN(), ssd: math.NaN()}
	if l.have {
		if dt := t.Time.Sub(l.last.Time).Seconds(); dt > 0 && t.GeneratedTotal >= l.last.GeneratedTotal {
			s.tps = float64(t.GeneratedTotal-l.last.GeneratedTotal) / dt
		}
	}
	if t.CacheHitRate != nil {
		s.hit = *t.CacheHitRate * 100
	}
	if t.SSDBytesPerSecond != nil {
		s.ssd = *t.SSDBytesPerSecond / 1e6
	}
	l.have, l.last = true, t
	l.samples = append(l.samples, s)
	cut := 0
	for cut < len(l.samples) && t.Time.Sub(l.samples[cut].t) > plotSpan {
		cut++
	}
	l.samples = l.samples[cut:]
}

// current is the rate of the last reading (0 without two readings).
func (l *liveStats) current() float64 {
	if len(l.samples) < 2 {
		return 0
	}
	return l.samples[len(l.samples)-1].tps
}

// reports says whether any reading had the field picked by f.
func (l *liveStats) reports(f func(sample) float64) bool {
	for _, s := range l.samples {
		if !math.IsNaN(f(s)) {
			return true
		}
	}
	return false
}

// watchTelemetry follows stats.subscribe on the UI's API connection,
// reconnecting after it drops, until Close.
func (u *UI) watchTelemetry() {
	defer u.wg.Done()
	for {
		c, err := u.conn.get(u.ctx)
		var stop func() error
		if err == nil {
			stop, err = c.Subscribe(u.ctx, telemetryInterval, func(t protocol.Telemetry) {
				u.do(func() {
					u.live.add(t)
					u.refreshLocked()
				})
			})
		}
		if err == nil {
			select {
			case <-c.Done():
			case <-u.ctx.Done():
			}
			stop()
		} else if u.ctx.Err() == nil {
			u.log.Debug("live status unavailable", "err", err)
		}
		select {
		case <-u.ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// detailLineLocked is the menu's second line: memory in use, the queue,
// and the cache and SSD figures once the engine reports them.
func (u *UI) detailLineLocked() string {
	if u.status.Model == nil {
		return "No model loaded"
	}
	line := "Memory in use: " + formatBytes(u.status.MemoryBytes)
	if !u.live.have {
		return line
	}
	t := u.live.last
	if t.QueueLength > 0 {
		line += fmt.Sprintf(" · %d waiting", t.QueueLength)
	}
	if t.CacheHitRate != nil {
		line += fmt.Sprintf(" · cache hits %.0f%%", *t.CacheHitRate*100)
	}
	if t.SSDBytesPerSecond != nil {
		line += fmt.Sprintf(" · SSD %.0f MB/s", *t.SSDBytesPerSecond/1e6)
	}
	return line
}

// plot draws one series over the last plotSpan: a line per pair of
// readings close enough in time, a grid, the scale and the latest value.
type plot struct {
	widget.BaseWidget
	title string
	unit  string
	fixed float64 // top of the scale (0: from the data)
	col   fyne.ThemeColorName
	now   time.Time
	pts   []plotPoint
}

type plotPoint struct {
	t time.Time
	v float64
}

func newPlot(title, unit string, fixed float64, col fyne.ThemeColorName) *plot {
	p := &plot{title: title, unit: unit, fixed: fixed, col: col}
	p.ExtendBaseWidget(p)
	return p
}

// set replaces the points (NaN values are gaps) and refreshes.
func (p *plot) set(now time.Time, pts []plotPoint) {
	p.now, p.pts = now, pts
	p.Refresh()
}

func (p *plot) CreateRenderer() fyne.WidgetRenderer {
	r := &plotRenderer{p: p,
		bg:    canvas.NewRectangle(theme.Color(theme.ColorNameInputBackground)),
		title: canvas.NewText("", theme.Color(theme.ColorNameForeground)),
		top:   canvas.NewText("", theme.Color(theme.ColorNamePlaceHolder)),
		zero:  canvas.NewText("0", theme.Color(theme.ColorNamePlaceHolder)),
		left:  canvas.NewText(fmt.Sprintf("%d min ago", int(plotSpan.Minutes())), theme.Color(theme.ColorNamePlaceHolder)),
		right: canvas.NewText("now", theme.Color(theme.ColorNamePlaceHolder)),
	}
	r.bg.CornerRadius = theme.InputRadiusSize()
	r.title.TextStyle.Bold = true
	for _, t := range []*canvas.Text{r.top, r.zero, r.left, r.right} {
		t.TextSize = theme.CaptionTextSize()
	}
	for i := range r.grid {
		r.grid[i] = canvas.NewLine(theme.Color(theme.ColorNameSeparator))
		r.grid[i].StrokeWidth = 1
	}
	return r
}

func (p *plot) MinSize() fyne.Size {
	p.ExtendBaseWidget(p)
	return fyne.NewSize(320, 170)
}

type plotRenderer struct {
	p                             *plot
	bg                            *canvas.Rectangle
	title, top, zero, left, right *canvas.Text
	grid                          [3]*canvas.Line
	lines                         []*canvas.Line
	size                          fyne.Size
}

func (r *plotRenderer) Destroy() {}

func (r *plotRenderer) MinSize() fyne.Size { return r.p.MinSize() }

func (r *plotRenderer) Layout(s fyne.Size) { r.size = s; r.Refresh() }

func (r *plotRenderer) Objects() []fyne.CanvasObject {
	objs := []fyne.CanvasObject{r.bg, r.title, r.top, r.zero, r.left, r.right}
	for _, g := range r.grid {
		objs = append(objs, g)
	}
	for _, l := range r.lines {
		objs = append(objs, l)
	}
	return objs
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*e {
			return m * e
		}
	}
	return 10 * e
}

func (r *plotRenderer) Refresh() {
	p, s := r.p, r.size
	pad := theme.Padding()
	latest := math.NaN()
	peak := 0.0
	for _, pt := range p.pts {
		if !math.IsNaN(pt.v) {
			latest = pt.v
			peak = math.Max(peak, pt.v)
		}
	}
	r.title.Text = p.title
	if !math.IsNaN(latest) {
		r.title.Text += fmt.Sprintf(": %s %s", plotNumber(latest), p.unit)
	}
	r.title.Color = theme.Color(theme.ColorNameForeground)
	top := p.fixed
	if top == 0 {
		top = niceCeil(peak)
	}
	r.top.Text = plotNumber(top) + " " + p.unit

	th := r.title.MinSize().Height
	ch := r.zero.MinSize().Height
	r.title.Move(fyne.NewPos(pad, 0))
	r.title.Resize(r.title.MinSize())
	area := fyne.NewPos(pad, th+pad)
	aw, ah := s.Width-2*pad, s.Height-th-ch-2*pad
	if aw < 1 || ah < 1 {
		return
	}
	r.bg.Move(area)
	r.bg.Resize(fyne.NewSize(aw, ah))
	r.bg.FillColor = theme.Color(theme.ColorNameInputBackground)
	ts := r.top.MinSize()
	r.top.Move(fyne.NewPos(area.X+aw-ts.Width-pad/2, area.Y+pad/2))
	r.zero.Move(fyne.NewPos(area.X+pad/2, area.Y+ah-ch-pad/2))
	r.left.Move(fyne.NewPos(area.X, area.Y+ah))
	r.right.Move(fyne.NewPos(area.X+aw-r.right.MinSize().Width, area.Y+ah))
	for i, g := range r.grid {
		y := area.Y + ah*float32(i+1)/4
		g.Position1, g.Position2 = fyne.NewPos(area.X, y), fyne.NewPos(area.X+aw, y)
		g.StrokeColor = theme.Color(theme.ColorNameSeparator)
		g.Refresh()
	}

	x := func(t time.Time) float32 {
		f := 1 - float32(p.now.Sub(t).Seconds()/plotSpan.Seconds())
		return area.X + aw*max(0, min(1, f))
	}
	y := func(v float64) float32 {
		f := float32(v / top)
		return area.Y + ah*(1-max(0, min(1, f)))
	}
	n := 0
	col := theme.Color(p.col)
	for i := 1; i < len(p.pts); i++ {
		a, b := p.pts[i-1], p.pts[i]
		if math.IsNaN(a.v) || math.IsNaN(b.v) || b.t.Sub(a.t) > 3*telemetryInterval || p.now.Sub(a.t) > plotSpan {
			continue
		}
		if n == len(r.lines) {
			r.lines = append(r.lines, canvas.NewLine(col))
		}
		l := r.lines[n]
		l.StrokeColor, l.StrokeWidth = col, 2
		l.Position1, l.Position2 = fyne.NewPos(x(a.t), y(a.v)), fyne.NewPos(x(b.t), y(b.v))
		l.Refresh()
		n++
	}
	r.lines = r.lines[:n]
	for _, t := range []*canvas.Text{r.title, r.top, r.zero, r.left, r.right} {
		t.Refresh()
	}
	r.bg.Refresh()
}

func plotNumber(v float64) string {
	if v >= 10 || v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// statusView is the Status window's content: the figures in words, then
// a plot of tokens/s and, once the engine reports them, of the cache hit
// rate and the SSD reads.
type statusView struct {
	u                 *UI
	state, speed, mem *widget.Label
	queue, note       *widget.Label
	load              *widget.ProgressBar // the load's progress, shown while loading
	backend           *widget.Label       // what runs the model, and why
	tps, hit, ssd     *plot
	box               *fyne.Container
	content           fyne.CanvasObject
}

func newStatusView(u *UI) *statusView {
	v := &statusView{u: u}
	v.state = widget.NewLabelWithStyle("", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	v.state.Wrapping = fyne.TextWrapWord
	v.speed, v.mem, v.queue, v.note = widget.NewLabel(""), widget.NewLabel(""), widget.NewLabel(""), widget.NewLabel("")
	v.note.Wrapping = fyne.TextWrapWord
	v.note.Importance = widget.LowImportance
	v.backend = widget.NewLabel("")
	v.backend.Wrapping = fyne.TextWrapWord
	v.tps = newPlot("Tokens per second", "tokens/s", 0, theme.ColorNamePrimary)
	v.hit = newPlot("Cache hits (last reply)", "%", 100, theme.ColorNameSuccess)
	v.ssd = newPlot("SSD reads (last reply)", "MB/s", 0, theme.ColorNameWarning)
	v.hit.Hide()
	v.ssd.Hide()
	v.load = widget.NewProgressBar()
	v.load.Hide()
	v.box = container.NewVBox(
		v.state, v.load, widget.NewForm(
			widget.NewFormItem("Speed", v.speed),
			widget.NewFormItem("Memory", v.mem),
			widget.NewFormItem("Queue", v.queue),
			widget.NewFormItem("Runs on", v.backend),
		),
		v.tps, v.hit, v.ssd, v.note,
	)
	v.content = container.NewPadded(v.box)
	return v
}

// refreshLocked shows the engine's status and the live figures.
func (v *statusView) refreshLocked() {
	u := v.u
	v.state.SetText(u.statusLineLocked())
	if p := u.status.Progress; p != nil && u.status.State == engine.StateLoading {
		v.load.SetValue(p.Fraction)
		v.load.Show()
	} else {
		v.load.Hide()
	}
	l := &u.live
	speed := "—"
	if cur := l.current(); cur > 0 && u.status.State == engine.StateGenerating {
		speed = fmt.Sprintf("%.1f tokens/s now", cur)
	}
	if st := u.status.LastStats; st != nil && st.TokensPerSecond > 0 {
		if speed == "—" {
			speed = ""
		} else {
			speed += " · "
		}
		speed += fmt.Sprintf("last reply %.1f tokens/s (%d tokens)", st.TokensPerSecond, st.GeneratedTokens)
	}
	v.speed.SetText(speed)
	v.mem.SetText(u.detailMemoryLocked())
	queue := "—"
	if l.have {
		apps := "apps"
		if l.last.Connections == 1 {
			apps = "app"
		}
		queue = fmt.Sprintf("%d running · %d waiting · %d %s connected", l.last.Running, l.last.QueueLength, l.last.Connections, apps)
	}
	v.queue.SetText(queue)
	runs := backendLabel(u.status.Backend)
	if r := u.status.BackendReason; r != "" {
		runs += ": " + r
	}
	v.backend.SetText(runs)
	v.backend.Importance = widget.MediumImportance
	if u.status.BackendFallback {
		v.backend.Importance = widget.WarningImportance
	}

	var now time.Time
	if n := len(l.samples); n > 0 {
		now = l.samples[n-1].t
	}
	series := func(f func(sample) float64) []plotPoint {
		pts := make([]plotPoint, len(l.samples))
		for i, s := range l.samples {
			pts[i] = plotPoint{s.t, f(s)}
		}
		return pts
	}
	// The first reading has no rate yet.
	tps := series(func(s sample) float64 { return s.tps })
	if len(tps) > 0 {
		tps[0].v = math.NaN()
	}
	v.tps.set(now, tps)
	for _, s := range []struct {
		p *plot
		f func(sample) float64
	}{{v.hit, func(s sample) float64 { return s.hit }}, {v.ssd, func(s sample) float64 { return s.ssd }}} {
		if show := l.reports(s.f); show != s.p.Visible() {
			if show {
				s.p.Show()
			} else {
				s.p.Hide()
			}
			v.box.Refresh()
		}
		if s.p.Visible() {
			s.p.set(now, series(s.f))
		}
	}
	switch {
	case u.d.APIInfo == nil:
		v.note.SetText("Live figures come from the local API, which is not running.")
	case !l.have:
		v.note.SetText("Waiting for the engine's figures…")
	case !l.reports(func(s sample) float64 { return s.hit }):
		v.note.SetText("Cache hits and SSD reads appear here when the engine streams a model's experts from the SSD.")
	default:
		v.note.SetText("")
	}
}

func (u *UI) detailMemoryLocked() string {
	if u.status.Model == nil {
		return "no model loaded"
	}
	return formatBytes(u.status.MemoryBytes) + " in use"
}

// ShowStatus opens the Status window (or brings it to the front).
func (u *UI) ShowStatus() fyne.Window {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.show(&u.statusWin, "Strata Status", fyne.NewSize(520, 480), func(w fyne.Window) {
		u.statusView = newStatusView(u)
		w.SetContent(u.statusView.content)
		u.statusView.refreshLocked()
	})
}
