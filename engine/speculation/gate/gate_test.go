package gate

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var src = Source{Name: "t", Priors: []float64{0.5}}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// measured returns a gate whose forwards of n rows took times[n-1] ms:
// TimeWindow samples of each n. For n > 1 each sample is a run of two
// n-row forwards (the first a change of depth, or the warm-up) and two
// plain steps of T(1), the first charged to the verify with no excess,
// the second a T(1) sample near it (PairWindow).
func measured(cfg Config, times ...float64) *Gate {
	g := New(cfg)
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	for n, x := range times {
		switch {
		case x <= 0:
		case n == 0:
			for range TimeWindow + Warmup {
				g.Forward(1, ms(x))
			}
		default:
			for range TimeWindow {
				g.Forward(n+1, ms(x))
				g.Forward(n+1, ms(x))
				g.Forward(1, ms(times[0]))
				g.Forward(1, ms(times[0]))
			}
		}
	}
	g.pair(true) // the last ones too
	return g
}

func TestMeanThenEMA(t *testing.T) {
	var m mean
	for _, x := range []float64{1, 2, 3} {
		m.add(x, 4)
	}
	if !near(m.v, 2) {
		t.Fatalf("running mean %v, want 2", m.v)
	}
	m.add(6, 4) // 4th sample: still a mean: (1+2+3+6)/4
	if !near(m.v, 3) {
		t.Fatalf("mean of 4: %v", m.v)
	}
	m.add(7, 4) // now EMA: 3 + (7-3)/4
	if !near(m.v, 4) {
		t.Fatalf("EMA step: %v, want 4", m.v)
	}
}

func TestPriorsWorthTwoVerifies(t *testing.T) {
	g := New(Config{MaxDraft: 4})
	if a := g.Acceptance(MTP, 4); !near(a[0], 0.8) || !near(a[1], 0.6) || !near(a[2], 0.5) || !near(a[3], 0.5) {
		t.Fatalf("MTP priors %v", a)
	}
	// Two rejections at position 1: (2·0.8 + 0 + 0)/4 = 0.4.
	g.Verified(MTP, nil, 1, 0)
	g.Verified(MTP, nil, 1, 0)
	if a := g.Acceptance(MTP, 1); !near(a[0], 0.4) {
		t.Fatalf("after two rejections: %v, want 0.4", a)
	}
	// Only decided positions count: a reject at position 1 says nothing of 2.
	if a := g.Acceptance(MTP, 2); !near(a[1], 0.6) {
		t.Fatalf("position 2 changed: %v", a)
	}
	// Accepting 2 of 3 drafts: positions 1, 2 accepted, 3 rejected.
	// Lookup lists one prior (0.5, for position 1); a deeper position's
	// prior is the estimate of the one before: (1 + 2·0.5)/3 = 2/3, then
	// (1 + 2·2/3)/3 = 7/9, then (0 + 2·7/9)/3 = 14/27; position 4, never
	// decided, is position 3's 14/27.
	g.Verified(Lookup, nil, 3, 2)
	a := g.Acceptance(Lookup, 4)
	if !near(a[0], 2.0/3) || !near(a[1], 7.0/9) || !near(a[2], 14.0/27) || !near(a[3], 14.0/27) {
		t.Fatalf("lookup after one 2-of-3 verify: %v", a)
	}
}

// TestDeepPositionsStartFromShallowerOnes: a position the gate seldom
// drafts to starts from what the positions before it measured, so depth
// follows measured acceptance instead of a first guess.
func TestDeepPositionsStartFromShallowerOnes(t *testing.T) {
	g := New(Config{MaxDraft: 6})
	for range 40 {
		g.Forward(1, 10*time.Millisecond)
	}
	for n := 2; n <= 7; n++ {
		for range 12 {
			g.Forward(n, time.Duration(10+3*(n-1))*time.Millisecond) // 0.3 T(1) a row
			g.Forward(1, 10*time.Millisecond)
		}
	}
	// Many 4-deep verifies accepting all four (the fifth position never
	// decided), one 5-deep one accepting all five.
	for range 30 {
		g.Verified(Lookup, nil, 4, 4)
	}
	g.Verified(Lookup, nil, 5, 5)
	a := g.Acceptance(Lookup, 6)
	if a[4] < 0.9 || a[5] < 0.9 {
		t.Fatalf("acceptance %v: positions 5 and 6 should start from position 4's", a)
	}
	if p := g.Pick(Lookup, 6, nil); p.K != 6 && !p.Probe {
		t.Fatalf("picked %d of 6 drafts accepted every time (value %.2f)", p.K, p.Value)
	}
}

func TestCostModel(t *testing.T) {
	tests := []struct {
		name  string
		times []float64 // ms for n = 1, 2, ...
		n     int
		ratio float64
		rho   float64
	}{
		{"nothing measured: rho 0.5", nil, 3, 2, RhoStart},
		{"only T(1): rho 0.5", []float64{10}, 4, 2.5, RhoStart},
		{"measured n", []float64{10, 12}, 2, 1.2, 0.2},
		{"unmeasured n from fitted rho", []float64{10, 12}, 5, 1.8, 0.2},
		{"rho clamped at 0", []float64{10, 9}, 4, 1, 0},
		{"rho clamped at 4, unmeasured n continued from the largest measured", []float64{10, 100}, 3, 14, RhoMax},
		{"rho fitted over several n", []float64{10, 11, 14}, 5, 1.4 + 2*(0.1+0.2)/2, (0.1 + 0.2) / 2},
		{"never cheaper with more rows: a dip is pooled with what is before it", []float64{10, 14, 12}, 3, 1.3, (0.4 + 0.1) / 2},
		{"pooled, then rising again", []float64{10, 14, 12, 16}, 2, 1.3, (0.4 + 0.1 + 0.2) / 3},
		{"after a pool", []float64{10, 14, 12, 16}, 4, 1.6, (0.4 + 0.1 + 0.2) / 3},
		{"never below T(1)", []float64{10, 8, 12}, 2, 1, 0},
		{"a flattening curve continues from its end", []float64{10, 20, 22}, 4, 2.2 + 0.8, (1 + 0.6) / 2},
		{"between measured n, a straight line", []float64{10, 20, 0, 0, 0, 40}, 4, 2 + 2*(4-2)/4.0, (1 + 3.0/5) / 2},
		{"above the largest measured, from it", []float64{10, 20, 0, 0, 0, 40}, 8, 4 + 2*(1+3.0/5)/2, (1 + 3.0/5) / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := measured(Config{}, tt.times...)
			if r := g.Rho(); !near(r, tt.rho) {
				t.Errorf("rho %v, want %v", r, tt.rho)
			}
			if r := g.Ratio(tt.n); !near(r, tt.ratio) {
				t.Errorf("T(%d)/T(1) %v, want %v", tt.n, r, tt.ratio)
			}
		})
	}
	// Draft cost d adds (k−1)·d/T(1).
	g := measured(Config{}, 10, 12, 14)
	g.Drafted(MTP, 2, 4*time.Millisecond) // 2 ms per token
	if c := g.Cost(MTP, 2); !near(c, 1.4+0.2) {
		t.Errorf("cost(2) with d = 2 ms: %v, want 1.6", c)
	}
	if c := g.Cost(Lookup, 2); !near(c, 1.4) {
		t.Errorf("lookup has no drafting cost measured: %v", c)
	}
}

func TestPick(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		times  []float64 // T(n) ms
		a      []float64 // drafter probabilities (calibration 1 at the prior)
		want   int
		wantV  float64
		plain  bool
		noProb bool
	}{
		// cheap rows (rho 0.05): even 0.5 drafts pay; E(3)/cost(3) = 1.875/1.15 beats E(5)/cost(5) = 1.96875/1.25.
		{"cheap rows take doubtful drafts", Config{MaxDraft: 5}, []float64{10, 10.5, 11, 11.5, 12, 12.5}, []float64{0.5, 0.5, 0.5, 0.5, 0.5}, 3, 1.875 / 1.15, false, false},
		// streaming (rho 0.6): a 0.5 draft costs 1.6 for 1.5 tokens: plain.
		{"costly rows decline a doubtful draft", Config{MaxDraft: 5}, []float64{10, 16, 22, 28}, []float64{0.5, 0.5, 0.5}, 0, 1, false, false},
		// the same costly rows take a confident one: E(2)=1+.95+.9025=2.8525, cost 2.2.
		{"costly rows take a confident draft", Config{MaxDraft: 5}, []float64{10, 16, 22, 28}, []float64{0.95, 0.95, 0.3}, 2, 2.8525 / 2.2, false, false},
		{"max draft caps k", Config{MaxDraft: 2}, []float64{10, 10.5, 11, 11.5}, []float64{0.9, 0.9, 0.9}, 2, 0, false, false},
		{"min probability stops the draft", Config{MaxDraft: 5, MinProb: 0.6}, []float64{10, 10.5, 11, 11.5}, []float64{0.9, 0.7, 0.5, 0.9}, 2, 0, false, false},
		{"fixed depth ignores cost", Config{MaxDraft: 3, Fixed: true}, []float64{10, 40, 70, 100}, []float64{0.1, 0.1, 0.1, 0.1}, 3, 0, false, false},
		{"no drafts available", Config{MaxDraft: 3}, []float64{10}, nil, 0, 1, false, false},
		// ties go to the smaller k: a zero-probability 2nd draft adds nothing at zero cost (rho 0).
		{"ties to the smaller k", Config{MaxDraft: 3}, []float64{10, 10, 10, 10}, []float64{0.9, 0, 0}, 1, 1.9, false, false},
		// without probabilities, the measured acceptance (prior 0.5) is used.
		{"no drafter probabilities", Config{MaxDraft: 3}, []float64{10, 10.5, 11, 11.5}, []float64{0.9, 0.9, 0.9}, 3, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := measured(tt.cfg, tt.times...)
			probs := tt.a
			if tt.noProb {
				probs = nil
			}
			p := g.Pick(src, len(tt.a), probs)
			if p.K != tt.want || p.Plain != tt.plain || p.Probe {
				t.Fatalf("pick %+v, want k %d", p, tt.want)
			}
			if tt.wantV != 0 && !near(p.Value, tt.wantV) {
				t.Fatalf("value %v, want %v", p.Value, tt.wantV)
			}
		})
	}
}

// TestCalibration: a drafter that says 0.9 but is right half the time is
// priced at 0.5 after enough verifies, and its confident drafts (0.99) are
// still preferred over its doubtful ones (0.3).
func TestCalibration(t *testing.T) {
	g := measured(Config{MaxDraft: 1}, 10, 16) // rho 0.6: a draft needs a > 0.6
	for i := range 200 {
		g.Verified(src, []float64{0.9}, 1, i%2)
	}
	c := g.Snapshot().Calibrated["t"][0]
	if math.Abs(c-0.5/0.9) > 0.05 {
		t.Fatalf("calibration %v, want ≈ %v", c, 0.5/0.9)
	}
	if p := g.Pick(src, 1, []float64{0.9}); p.K != 0 {
		t.Fatalf("over-confident 0.9 taken: %+v", p)
	}
	// A drafter whose 0.99 drafts are right and whose 0.3 drafts are not:
	// the confident one is taken, the doubtful one declined.
	h := measured(Config{MaxDraft: 1}, 10, 16)
	for i := range 200 {
		p, acc := 0.3, 0
		if i%10 < 9 {
			p, acc = 0.99, 1
		}
		h.Verified(src, []float64{p}, 1, acc)
	}
	if p := h.Pick(src, 1, []float64{0.99}); p.K != 1 {
		t.Fatalf("confident draft declined: %+v (snapshot %+v)", p, h.Snapshot())
	}
	if p := h.Pick(src, 1, []float64{0.3}); p.K != 0 {
		t.Fatalf("doubtful draft taken: %+v", p)
	}
}

func TestProbeSchedule(t *testing.T) {
	// Costly rows: the best is plain; a probe drafts 1 for ProbeRun (2)
	// picks in a row, every 4 picks while 2-row forwards have < 3 samples,
	// then as often as costs ProbeLoss of the time: by the estimate
	// (value 1.3/1.5: a run loses 2·1.5·(1 − 0.867) = 0.4 plain steps, so
	// every 40 picks) or, where the runs measured lost more, by that
	// (ProbeEveryMax). A run's first forward is no sample, and a sample
	// counts once it is paired with the plain steps after it (PairWindow
	// rows later), so the young schedule runs one run past the third
	// sample.
	for _, c := range []struct {
		name     string
		reported bool // the verifies' tokens reported (Verified)
		want     []int
		samples  int
	}{
		// Rejected drafts: 2 tokens for a run's 2 verifies, 1 for the
		// plain step after it: (15 + 15 + 10)/10 − 3 = 1 plain step lost
		// (the estimate, at the acceptance measured, 0.84): 100 picks on.
		{"measured", true, []int{4, 5, 8, 9, 12, 13, 16, 17, 116, 117}, 5},
		// Nothing reported: a run gives 1 token (the plain step's), 3
		// plain steps lost: ProbeEveryMax picks on, past the 130th.
		{"unreported", false, []int{4, 5, 8, 9, 12, 13, 16, 17}, 4},
	} {
		g := New(Config{MaxDraft: 3})
		for range 8 {
			g.Forward(1, 10*time.Millisecond)
		}
		probs := []float64{0.3, 0.3, 0.3}
		var probes []int
		for i := 1; i <= 130; i++ {
			p := g.Pick(src, 3, probs)
			if p.K > 0 {
				if !p.Probe || p.K != 1 {
					t.Fatalf("%s: pick %d: %+v", c.name, i, p)
				}
				probes = append(probes, i)
				g.Forward(2, 15*time.Millisecond) // measured: too costly (value 1.3/1.5), not hopeless
				if c.reported {
					g.Verified(src, probs, 1, 0)
				}
			} else {
				g.Forward(1, 10*time.Millisecond)
			}
		}
		if n := g.Samples(2); n != c.samples { // 5, 9, 13, 17, 117 (4 is also the warm-up)
			t.Errorf("%s: %d samples of T(2), want %d", c.name, n, c.samples)
		}
		if !slices.Equal(probes, c.want) {
			t.Errorf("%s: probes at picks %v, want %v", c.name, probes, c.want)
		}
	}
}

// TestProbeSpacing: a probe run's expected loss, priced by the gate's
// estimates, is at most ProbeLoss of the decode time: picks apart
// ProbeRun·cost(deeper)·(1 − v/v_best) / (ProbeLoss·cost(best)), at
// least ProbeEvery, at most ProbeEveryHopeless.
func TestProbeSpacing(t *testing.T) {
	tests := []struct {
		name  string
		times []float64 // T(n) ms
		a     []float64
		want  int
	}{
		{"plain best, probe value 0.867", []float64{10, 15}, []float64{0.3}, 40},
		{"plain best, probe nearly even", []float64{10, 15}, []float64{0.48}, ProbeEvery},
		{"plain best, probe value 0.967", []float64{10, 15}, []float64{0.45}, ProbeEvery},
		{"hopeless probe", []float64{10, 25}, []float64{0.1}, ProbeEveryHopeless},
		// best 1 (1.9/1.5), deeper 2 (2.17/2): 2·2·(1 − 1.085/1.267)/(0.01·1.5) = 38.3
		{"depth 1 best, depth 2 probed", []float64{10, 15, 20}, []float64{0.9, 0.3}, 39},
		// best 1 here, deeper 2 worth more (1.355 against 1.267): every 16
		{"deeper probe worth more", []float64{10, 15, 20}, []float64{0.9, 0.9}, ProbeEvery},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := measured(Config{MaxDraft: 3}, tt.times...)
			best, bestV := 0, 1.0
			for k := 1; k < len(tt.a); k++ {
				if v := g.value(src, tt.a, k); v > bestV {
					best, bestV = k, v
				}
			}
			deeper := best + 1
			if got := g.probeEvery(src, best, bestV, deeper, g.value(src, tt.a, deeper)); got != tt.want {
				t.Fatalf("probes every %d picks, want %d (best %d value %.3f, probe value %.3f)", got, tt.want, best, bestV, g.value(src, tt.a, deeper))
			}
		})
	}
}

func TestForcedPlainStep(t *testing.T) {
	g := measured(Config{MaxDraft: 2}, 10, 10.5, 11)
	probs := []float64{0.9, 0.9}
	n := 0
	for ; n < 200; n++ {
		p := g.Pick(src, 2, probs)
		if p.K == 0 {
			if !p.Plain {
				t.Fatalf("pick %d: plain but not forced: %+v", n, p)
			}
			break
		}
		g.Forward(p.K+1, 11*time.Millisecond)
	}
	if n != ForcePlainAfter {
		t.Fatalf("forced plain after %d drafted steps, want %d", n, ForcePlainAfter)
	}
	// The first plain step follows a verify: it is charged to the verify,
	// so T(1) is still unmeasured and the next step is plain too.
	samples := g.Samples(1)
	g.Forward(1, 10*time.Millisecond)
	if p := g.Pick(src, 2, probs); p.K != 0 || !p.Plain || g.Samples(1) != samples {
		t.Fatalf("after the plain step that follows a verify: %+v, %d T(1) samples (had %d)", p, g.Samples(1), samples)
	}
	g.Forward(1, 10*time.Millisecond)
	if g.Samples(1) != samples+1 {
		t.Fatalf("the second plain step is no T(1) sample: %d (had %d)", g.Samples(1), samples)
	}
	if p := g.Pick(src, 2, probs); p.K == 0 {
		t.Fatalf("still plain after a measured plain step: %+v", p)
	}
	// A young T(1) (fewer than TimeWindow samples) is refreshed after
	// ForcePlainYoung drafted steps.
	young := New(Config{MaxDraft: 2})
	for _, ms := range []float64{10, 10, 10} { // a warm-up and two samples
		young.Forward(1, time.Duration(ms*float64(time.Millisecond)))
	}
	for range TimeWindow + Warmup {
		young.Forward(2, 11*time.Millisecond)
		young.Forward(3, 12*time.Millisecond)
	}
	n = 0
	for ; n < 200; n++ {
		p := young.Pick(src, 2, probs)
		if p.K == 0 {
			break
		}
		young.Forward(p.K+1, 11*time.Millisecond)
	}
	if n != ForcePlainYoung {
		t.Fatalf("young T(1): forced plain after %d drafted steps, want %d", n, ForcePlainYoung)
	}
}

func TestSnapshot(t *testing.T) {
	g := measured(Config{MaxDraft: 3}, 10, 0, 15)
	g.Verified(Lookup, nil, 1, 1)
	s := g.Snapshot()
	if s.T1 != 10*time.Millisecond || len(s.Ratios) != 3 || s.Ratios[1] != 0 || !near(s.Ratios[2], 1.5) || s.Samples[0] != 2*TimeWindow || s.Samples[2] != TimeWindow {
		t.Fatalf("snapshot %+v", s)
	}
	if a := s.Acceptance["lookup"]; len(a) != 1 || !near(a[0], 2.0/3) {
		t.Fatalf("acceptance %v", a)
	}
}

func TestBadInputs(t *testing.T) {
	g := New(Config{MaxDraft: 100})
	if g.Config().MaxDraft != MaxRows-1 {
		t.Fatalf("max draft %d", g.Config().MaxDraft)
	}
	g.Forward(0, time.Second)
	g.Forward(MaxRows+1, time.Second)
	g.Forward(1, -time.Second)
	if g.Samples(1) != 0 {
		t.Fatal("bad forwards recorded")
	}
	p := g.Pick(src, 3, []float64{math.NaN(), 2, -1})
	if p.K < 0 || p.K > 3 || math.IsNaN(p.Value) {
		t.Fatalf("pick over bad probabilities %+v", p)
	}
}

// TestTimeSpikesClipped: a single 10× spike moves an established T(n) at
// most to 1 + (Clip−1)/8 of it, also for an n with only ClipAfter
// samples; a lasting change is followed.
func TestTimeSpikesClipped(t *testing.T) {
	g := measured(Config{}, 10, 12)
	g.Forward(2, 12*time.Millisecond) // after a plain step: no sample
	g.Forward(2, 120*time.Millisecond)
	g.Forward(2, 12*time.Millisecond) // queues the held spike
	g.pair(true)
	if v, _ := g.T(2); !near(v, 0.012*(1+(Clip-1)/TimeWindow)) {
		t.Fatalf("T(2) after a spike: %v", v)
	}
	young := New(Config{})
	for _, ms := range []float64{9, 4, 4, 4, 14, 4} { // a warm-up forward, three samples, a spike
		young.Forward(1, time.Duration(ms*float64(time.Millisecond)))
	}
	if v, _ := young.T(1); !near(v, (0.004*3+0.004*Clip+0.004)/5) {
		t.Fatalf("T(1) after a spike on its fourth sample: %v", v)
	}
	for range 4 * TimeWindow { // short runs of verifies between plain steps
		for range 3 {
			g.Forward(2, 30*time.Millisecond)
		}
		g.Forward(1, 10*time.Millisecond)
		g.Forward(1, 10*time.Millisecond)
	}
	if v, _ := g.T(2); math.Abs(v-0.030) > 0.0005 {
		t.Fatalf("T(2) after a lasting change to 30 ms: %v", v)
	}
}

// TestHeavyTailFollowed: forwards whose times are heavy-tailed by
// nature (under SSD streaming the rows whose experts miss wait for the
// disk) are averaged, tail included: T(n) follows their mean, not their
// median. (Clipped at 1.25× the median, T(2) read 9.4 ms here.)
func TestHeavyTailFollowed(t *testing.T) {
	g := measured(Config{}, 4)
	cycle := []float64{7, 13.5, 7.3, 30, 7.4, 8, 18, 10} // ms; mean 12.65, median 9
	for range 10 {
		for _, x := range cycle {
			g.Forward(2, 7*time.Millisecond) // after a plain step: no sample
			g.Forward(2, time.Duration(x*float64(time.Millisecond)))
			g.Forward(1, 4*time.Millisecond) // charged to the verify, no excess
			g.Forward(1, 4*time.Millisecond)
		}
	}
	if v, _ := g.T(2); math.Abs(v-0.01265) > 0.15*0.01265 {
		t.Fatalf("T(2) over a heavy-tailed cycle: %.2f ms, want its mean 12.65 within 15 %%", v*1000)
	}
}

// TestHopelessProbesRare: once measured, a probe worth under half a plain
// step runs every 64 picks, not every 16.
func TestHopelessProbesRare(t *testing.T) {
	g := measured(Config{MaxDraft: 2}, 10, 25, 40) // T(2)/T(1) = 2.5
	probes := 0
	for range 128 {
		if p := g.Pick(src, 2, []float64{0.1, 0.1}); p.K > 0 {
			probes++
		}
	}
	if probes != 2 {
		t.Fatalf("%d probes in 128 picks, want 2", probes)
	}
}

// TestPlainStepAfterVerifyCarried: the plain step after a verify adds its
// excess over T(1) to the verify's time and is no T(1) sample; a verify
// after a verify is not charged to it.
func TestPlainStepAfterVerifyCarried(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	// T(1) = 10, T(2) = 12, T(3) = 15 ms, TimeWindow samples each: the
	// next sample x moves T(n) by (x − T(n))/TimeWindow.
	tests := []struct {
		name   string
		rows   int     // of the verify
		verify float64 // its ms
		nextN  int     // rows of the next forward
		next   float64 // its ms
		want   float64 // T(rows) after, ms
	}{
		{"the next step pays for evicted experts", 2, 12, 1, 12, 12 + 2.0/TimeWindow},
		{"the next step finds the verify's experts", 2, 13, 1, 8, 12 - 1.0/TimeWindow},
		{"no excess", 2, 12, 1, 10, 12},
		{"a verify after a verify is not charged to it", 3, 16, 2, 9, 15 + 1.0/TimeWindow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := measured(Config{}, 10, 12, 15)
			before := g.Samples(tt.nextN)
			g.Forward(tt.rows, ms(tt.verify)) // after a plain step: no sample
			g.Forward(tt.rows, ms(tt.verify))
			g.Forward(tt.nextN, ms(tt.next))
			g.pair(true)
			if v, ok := g.T(tt.rows); !ok || math.Abs(v*1e3-tt.want) > 1e-9 {
				t.Errorf("T(%d) = %v ms, want %v", tt.rows, v*1e3, tt.want)
			}
			if g.Samples(tt.nextN) != before {
				t.Errorf("the forward after the verify was a sample of T(%d)", tt.nextN)
			}
		})
	}
	// A plain step after a warm-up verify (not held) is no T(1) sample;
	// the one after it is.
	g := measured(Config{}, 10, 12)
	before := g.Samples(1)
	g.Forward(5, ms(40)) // the first 5-row forward: a warm-up
	g.Forward(1, ms(30))
	if g.Samples(1) != before {
		t.Fatalf("the plain step after a warm-up verify was sampled")
	}
	g.Forward(1, ms(10))
	if g.Samples(1) != before+1 {
		t.Fatalf("the second plain step is no T(1) sample")
	}
}

// TestDepthChangeNoSample: a verify is a sample of T(n) only right after
// a forward of the same rows, as in decoding at that depth; after a plain
// step or a verify of other rows it pays or saves for the change.
func TestDepthChangeNoSample(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	g := measured(Config{}, 10, 12, 15)
	g.Forward(3, ms(40)) // after a plain step
	g.Forward(2, ms(30)) // after a 3-row verify
	g.Forward(1, ms(10))
	if g.Samples(2) != TimeWindow || g.Samples(3) != TimeWindow {
		t.Fatalf("verifies after a change of depth sampled: %d, %d", g.Samples(2), g.Samples(3))
	}
	if v, _ := g.T(3); !near(v, 0.015) {
		t.Fatalf("T(3) moved to %v by a change of depth", v)
	}
	g.Forward(3, ms(15))
	g.Forward(3, ms(17)) // after a 3-row verify: a sample
	g.Forward(1, ms(10)) // charged to it, no excess
	g.Forward(1, ms(10)) // the T(1) sample it pairs with
	g.pair(true)
	if v, _ := g.T(3); g.Samples(3) != TimeWindow+1 || !near(v, 0.015+0.002/TimeWindow) {
		t.Fatalf("a verify after one of the same depth: %d samples, T(3) %v", g.Samples(3), v)
	}
}

// TestUnseenSettles: after Unseen (a prompt the gate did not time) the
// next Settle forwards, of any rows, are no samples.
func TestUnseenSettles(t *testing.T) {
	g := measured(Config{}, 10, 12)
	ones := g.Samples(1)
	g.Unseen()
	for i := range Settle {
		g.Forward(2-i%2, 40*time.Millisecond) // ends with a plain step
	}
	g.pair(true)
	if g.Samples(1) != ones || g.Samples(2) != TimeWindow {
		t.Fatalf("settling forwards sampled: %d, %d", g.Samples(1), g.Samples(2))
	}
	g.Forward(1, 10*time.Millisecond)
	if g.Samples(1) != ones+1 {
		t.Fatalf("the forward after settling is no sample")
	}
}

// TestBudget: a source is asked for drafts only while some depth could pay
// even with confident drafts and every draft's time charged; a hopeless
// source is asked for one draft every ProbeEveryHopeless calls; a fixed
// depth always asks for the room.
func TestBudget(t *testing.T) {
	hi := Source{Name: "hi", Priors: []float64{0.9, 0.9, 0.9}}
	lo := Source{Name: "lo", Priors: []float64{0.5}}
	g := measured(Config{MaxDraft: 8}, 10, 12, 14, 16)
	if b := g.Budget(hi, 8); b < 2 {
		t.Errorf("a cheap accurate source: budget %d", b)
	}
	if b := g.Budget(hi, 1); b != 1 {
		t.Errorf("room 1: budget %d", b)
	}
	// The same source with drafting as slow as a forward per token: no
	// depth pays.
	g.Drafted(hi, 1, 10*time.Millisecond)
	if b := g.Budget(hi, 8); b != 0 {
		t.Errorf("drafts as slow as a step: budget %d", b)
	}
	// A source whose confident drafts (p = 0.9) are nearly always wrong.
	for range 32 {
		g.Verified(lo, []float64{0.9}, 1, 0)
	}
	n := 0
	for i := 0; i < 2*ProbeEveryHopeless; i++ {
		if b := g.Budget(lo, 8); b > 0 {
			if b != 1 {
				t.Fatalf("hopeless probe asks for %d", b)
			}
			n++
		}
	}
	if n != 2 {
		t.Errorf("hopeless source asked %d times in %d calls, want 2", n, 2*ProbeEveryHopeless)
	}
	if b := New(Config{MaxDraft: 5, Fixed: true}).Budget(lo, 8); b != 5 {
		t.Errorf("fixed depth: budget %d, want 5", b)
	}
	if b := g.Budget(hi, 0); b != 0 {
		t.Errorf("no room: budget %d", b)
	}
}

// TestUnknownProbabilitiesNotCalibrated: a drafter that gives no
// probabilities (NaN) is judged by its measured acceptance alone; its NaNs
// do not enter the calibration, which would make c = a/p̄ grow without
// bound and Budget keep asking a hopeless source for drafts.
func TestUnknownProbabilitiesNotCalibrated(t *testing.T) {
	g := measured(Config{MaxDraft: 8}, 10, 13, 16)
	nan := []float64{math.NaN(), math.NaN()}
	for range 64 {
		g.Verified(src, nan, 2, 0) // every first draft wrong
	}
	asked := 0
	for range ProbeEveryHopeless - 1 {
		if g.Budget(src, 8) > 0 {
			asked++
		}
	}
	if asked != 0 {
		t.Fatalf("a source whose drafts are always wrong was asked %d times", asked)
	}
	if c := g.Snapshot().Calibrated[src.Name][0]; !near(c, g.Acceptance(src, 1)[0]/0.5) {
		t.Fatalf("calibration %v moved from its prior by unknown probabilities", c)
	}
	// Budget prices such a source by its measured acceptance, not by
	// acceptance over the prior probability (0.6/0.5, clamped to fully
	// confident, would ask for the whole room every step).
	g = measured(Config{MaxDraft: 8}, 10, 13, 16)
	for i := range 64 {
		g.Verified(src, nan, 2, []int{2, 1, 2, 0, 0}[i%5]) // a1 ≈ 0.6, a2 ≈ 0.67
	}
	if b := g.Budget(src, 8); b < 2 || b >= 8 {
		t.Fatalf("budget %d for acceptance 0.6 at T(n)/T(1) = 1 + 0.3(n−1), want 2..7", b)
	}
}

// TestPhasesPaired: under SSD streaming a forward's time follows the
// text (plain steps of 3 ms where its experts are cached, 15 ms where
// they are not), and a gate drafts in some phases and steps plainly in
// others. T(n)/T(1) is measured against the plain steps near each
// verify, so it is the cost of a verify in its own phase (2 here) and not
// the ratio of averages taken in different phases (6/15: a verify that
// looks free).
func TestPhasesPaired(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	g := New(Config{MaxDraft: 1})
	for range 3 {
		for range 20 { // a slow phase, decoded plainly
			g.Forward(1, ms(15))
		}
		for range 6 { // a fast one: plain steps, drafting, plain steps
			g.Forward(1, ms(3))
		}
		for range TimeWindow + 1 {
			g.Forward(2, ms(6))
		}
		for range 6 { // the first charged to the last verify, no excess
			g.Forward(1, ms(3))
		}
	}
	for range 20 {
		g.Forward(1, ms(15))
	}
	if r := g.Ratio(2); math.Abs(r-2) > 0.05 {
		t1, _ := g.T(1)
		t.Fatalf("T(2)/T(1) %.3f, want 2 (T(1) %.1f ms)", r, t1*1e3)
	}
	// Where a verify costs 2 plain steps, a draft accepted 0.6 of the
	// time does not pay.
	if p := g.Pick(src, 1, []float64{0.6}); p.K != 0 && !p.Probe {
		t.Fatalf("pick %+v", p)
	}
}

// TestUnpairedVerifyNoSample: verifies with no plain step within
// PairWindow forwards of them (a long drafting run) are no samples.
func TestUnpairedVerifyNoSample(t *testing.T) {
	g := measured(Config{}, 10, 12)
	before := g.Samples(2)
	for range 10 * PairWindow {
		g.Forward(2, 50*time.Millisecond)
	}
	for range PairWindow + 1 {
		g.Forward(1, 10*time.Millisecond)
	}
	// Only verifies within PairWindow rows of a plain step that is a
	// T(1) sample pair: 3 of 2 rows at the run's start (its first forward
	// is a change of depth, no sample) and 4 at its end (the step right
	// after it is charged to the last verify).
	if got, want := g.Samples(2)-before, 7; got != want {
		t.Fatalf("%d samples from a run of %d verifies, want %d", got, 10*PairWindow, want)
	}
}

// decode runs steps picks of a gate over a source whose drafts are
// accepted with probability a each (no probabilities given), where an
// n-row forward takes cost(n) ms, as the engine drives it (Budget, Pick,
// Forward, Verified), and returns the tokens per ms of the last half and
// how many of its verifies were deeper than deep.
func decode(t *testing.T, g *Gate, a float64, steps, deep int, cost func(n int) float64) (speed float64, deeper int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	s := Source{Name: "replay", Priors: []float64{0.5}}
	var toks, ms float64
	for range AcceptWindow { // first drafts decided while decoding plainly
		acc := 0
		if rng.Float64() < a {
			acc = 1
		}
		g.Verified(s, nil, 1, acc)
	}
	for i := range steps {
		k, acc := step(g, s, rng, a, func(k int) {
			g.Forward(k+1, time.Duration(cost(k+1)*float64(time.Millisecond)))
		})
		if i >= steps/2 {
			toks += float64(min(acc, k) + 1)
			ms += cost(k + 1)
			if k > deep {
				deeper++
			}
		}
	}
	return toks / ms, deeper
}

// step runs one step of a gate over source s whose drafts are accepted
// with probability a each, as the engine drives it (Budget, Pick, the
// forward of k drafts, Verified), and returns k and the drafts (or, for
// a plain step, the first draft) accepted, before clipping to k.
func step(g *Gate, s Source, rng *rand.Rand, a float64, forward func(k int)) (k, acc int) {
	b := g.Budget(s, 8)
	if b > 0 {
		k = g.Pick(s, b, nil).K
	}
	forward(k)
	for acc < max(k, 1) && rng.Float64() < a {
		acc++
	}
	switch {
	case k > 0:
		g.Verified(s, nil, k, min(acc, k))
	case b > 0: // a declined first draft, decided by the plain step (the engine's shadow)
		g.Verified(s, nil, 1, min(acc, 1))
	}
	return k, acc
}

// TestExploreConcaveCost: under SSD streaming the first extra row of a
// verify costs more than a whole plain step (it brings a token's
// experts), later rows much less (they share them). Priced from T(2)
// alone, every depth looks a loss; exploring the deepest depth once
// measured shows the deep verifies that pay, and the gate drafts them.
func TestExploreConcaveCost(t *testing.T) {
	concave := func(n int) float64 { return 10 + 11*math.Pow(float64(n-1), 0.6) } // T(2) 2.1, T(6) 3.9, T(9) 4.8 plain steps
	g := measured(Config{MaxDraft: 8}, 10, concave(2))
	speed, deeper := decode(t, g, 0.9, 400, 2, concave)
	if speed < 1.15/10 {
		t.Errorf("%.3f tokens/ms, want ≥ 1.15× plain (0.1); T(n)/T(1): %v", speed, g.Snapshot().Ratios)
	}
	if deeper < 50 {
		t.Errorf("%d verifies deeper than 2 in the last 200 picks", deeper)
	}
	// The explorations were measured (RunPlain: while the gate drafts on,
	// a 9-row verify has no plain step near it).
	if n := g.Samples(9); n < ProbeSamples {
		t.Errorf("%d samples of T(9), want %d", n, ProbeSamples)
	}
	// Where the deep verifies do not pay either (acceptance 0.6: E(8)
	// 2.47 against T(9)/T(1) 4.8), the exploration stops once they are
	// measured (ProbeSamples) or not tried (ExploreMargin: E(8)/T(2)
	// 1.18) and the gate stays plain.
	g = measured(Config{MaxDraft: 8}, 10, concave(2))
	speed, deeper = decode(t, g, 0.6, 1000, 5, concave)
	if deeper > ProbeRun { // one run where the estimates peak, at most
		t.Errorf("acceptance 0.6: %d verifies deeper than 5 in the last 500 picks", deeper)
	}
	if speed < 0.975/10 { // the depth-1 probe runs every ProbeEveryHopeless picks cost ~1.5 %
		t.Errorf("acceptance 0.6: %.4f tokens/ms, want ≥ 0.975× plain (0.1)", speed)
	}
	// Hopeless drafts are not explored: E(8) at acceptance 0.3 is 1.43,
	// under T(2)/T(1) even before T(9) is measured.
	g = measured(Config{MaxDraft: 8}, 10, concave(2))
	decode(t, g, 0.3, 400, 0, concave)
	if n := g.Samples(9); n > 0 {
		t.Errorf("hopeless drafts explored: %d samples of T(9)", n)
	}
}

// TestYoungShrunk: a row count with fewer than ProbeSamples samples is
// priced between its own measurement and what the others price it at,
// so one forward of a fast phase does not make deep verifies look cheap.
func TestYoungShrunk(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	g := measured(Config{MaxDraft: 4}, 10, 21) // T(2)/T(1) 2.1, ρ 1.1: T(3) priced 3.2
	g.Forward(3, ms(12))                       // a change of depth: no sample
	g.Forward(3, ms(12))                       // 1.2 plain steps
	g.Forward(1, ms(10))                       // charged to it
	g.Forward(1, ms(10))                       // its reference
	g.pair(true)
	if n := g.Samples(3); n != 1 {
		t.Fatalf("%d samples of T(3), want 1", n)
	}
	// (1·1.2 + 3·3.2)/4 = 2.7; fitted with the rest alone it read 2.0
	// (pooled with T(2) as a dip).
	if r := g.Ratio(3); !near(r, 2.7) {
		t.Fatalf("T(3)/T(1) %.3f from one sample, want 2.7", r)
	}
	if r := g.Ratio(2); !near(r, 2.1) {
		t.Fatalf("T(2)/T(1) %.3f, want 2.1 (a young sample pulls no mature one)", r)
	}
}

// TestExplorationMeasured: an exploration is a probe run at the deepest
// depth followed by RunPlain plain steps, so that its verify is paired
// with a plain step near it and measured, though the gate drafts on.
func TestExplorationMeasured(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	s := Source{Name: "replay", Priors: []float64{0.9}}
	g := measured(Config{MaxDraft: 8}, 10, 15) // T(2)/T(1) 1.5: drafting pays, T(9) priced 4.5
	for range AcceptWindow {
		g.Verified(s, nil, 1, 1)
	}
	asked := 0
	for range ProbeEveryYoung {
		asked = max(asked, g.Budget(s, 8))
	}
	if asked != 8 {
		t.Fatalf("budget %d, want 8: an exploration due every %d calls", asked, ProbeEveryYoung)
	}
	var ks []int
	for range 2 + RunPlain + 1 {
		p := g.Pick(s, 8, nil)
		ks = append(ks, p.K)
		if p.K > 0 {
			g.Forward(p.K+1, ms(45))
			g.Verified(s, nil, p.K, p.K)
		} else {
			g.Forward(1, ms(10))
		}
	}
	// A run of ProbeRun (2) at 8, then RunPlain (2) plain steps.
	if want := []int{8, 8, 0, 0}; !slices.Equal(ks[:4], want) {
		t.Fatalf("picks %v, want %v then the best", ks, want)
	}
	g.pair(true)
	if n := g.Samples(9); n != 1 {
		t.Fatalf("%d samples of T(9), want 1", n)
	}
}

// TestStallChargedPerRow: under SSD streaming a forward's time is its
// compute plus its wait for expert reads, and the wait follows the text:
// where a drafter has nothing (new text) plain steps miss the cache (4 ms
// of compute, 20 of stall), where it drafts (repeated text) they hit it
// more (4 + 6). A verify's rows each bring their own experts: 6 rows take
// 12 ms of compute and 6·6 of stall, 4.8 plain steps of the phase it is
// drafted in. Paired with the plain steps around it, of both phases, its
// time reads cheaper than that, and a draft accepted 0.8 of the time
// looks worth 5 deep (E(5) = 3.69); with its stall charged per row it is
// not.
func TestStallChargedPerRow(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	run := func(stalled bool) *Gate {
		g := New(Config{MaxDraft: 5})
		fwd := func(n int, compute, stall float64) {
			if stalled {
				g.ForwardStalled(n, ms(compute+stall), ms(stall))
			} else {
				g.Forward(n, ms(compute+stall))
			}
		}
		for range 4 {
			for range 6 { // new text: no drafts
				fwd(1, 4, 20)
			}
			for range 4 { // repeated text, decoded plainly
				g.Pick(src, 5, nil)
				fwd(1, 4, 6)
			}
			for range 3 {
				g.Pick(src, 5, nil)
				fwd(6, 12, 36)
			}
			for range 2 { // the first charged to the last verify
				g.Pick(src, 5, nil)
				fwd(1, 4, 6)
			}
		}
		return g
	}
	g := run(true)
	if r := g.Ratio(6); math.Abs(r-4.8) > 0.1 {
		t.Fatalf("with stalls: T(6)/T(1) %.3f, want 4.8 (stall %v a row)", r, g.StallPerRow())
	}
	if s := g.StallPerRow(); s != 6*time.Millisecond {
		t.Fatalf("stall per row %v, want 6ms", s)
	}
	a := []float64{0.8, 0.8, 0.8, 0.8, 0.8}
	if v := g.value(src, a, 5); v >= 1 {
		t.Fatalf("with stalls: value(5) %.3f, want < 1", v)
	}
	blind := run(false)
	if r := blind.Ratio(6); r > 3.69 {
		t.Fatalf("without stalls: T(6)/T(1) %.3f; the test no longer shows what stalls change", r)
	}
	t.Logf("T(6)/T(1): %.2f with stalls, %.2f without", g.Ratio(6), blind.Ratio(6))
	if v := blind.value(src, a, 5); v <= 1 {
		t.Fatalf("without stalls: value(5) %.3f; the test no longer shows what stalls change", v)
	}
}

// TestStallSlope: where a plain step's time grows by more than its stall
// (5 ms + 1.25·stall: the readers take from the compute), the compute is
// what is left at no stall, and a row is charged 1.25 times the stall
// per row of the forwards where drafts were offered.
func TestStallSlope(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	g := New(Config{MaxDraft: 3})
	for i := range 64 {
		stall := 2.0
		if i%2 == 1 {
			stall = 10
		}
		g.Pick(src, 3, nil)
		g.ForwardStalled(1, ms(5+1.25*stall), ms(stall))
	}
	if got, want := g.StallPerRow(), ms(1.25*6); got < want-ms(0.01) || got > want+ms(0.01) {
		t.Fatalf("charge per row %v, want %v", got, want)
	}
	t1, _ := g.T(1)
	if compute := t1*1e3 - 1.25*6; math.Abs(compute-5) > 0.1 {
		t.Fatalf("T(1) %.2f ms: compute %.2f ms, want 5", t1*1e3, compute)
	}
	// Stalls that hardly differ say nothing of the slope: 1.
	flat := New(Config{MaxDraft: 3})
	for range 64 {
		flat.ForwardStalled(1, ms(9), ms(3))
	}
	if got := flat.StallPerRow(); got < ms(2.99) || got > ms(3.01) {
		t.Fatalf("charge per row %v with equal stalls, want 3ms", got)
	}
}

// TestVerifyOwnStallCharged: a rejected draft's row brings experts the
// text does not use, and they miss the cache, so a verify can stall more
// than its rows times the recent stall per row: it is then charged what
// its forwards of as many rows or fewer stalled.
func TestVerifyOwnStallCharged(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	g := New(Config{MaxDraft: 3})
	for range 8 {
		for range 6 { // plain steps: 4 ms compute, 5 of stall
			g.Pick(src, 2, nil)
			g.ForwardStalled(1, ms(9), ms(5))
		}
		for range 2 { // 2-row verifies whose second row missed: 30 ms of stall
			g.Pick(src, 2, nil)
			g.ForwardStalled(2, ms(36), ms(30))
		}
	}
	for range StallWindow {
		g.Pick(src, 2, nil)
		g.ForwardStalled(1, ms(9), ms(5))
	}
	// The recent stall per row is the plain steps' 5 ms; the verifies'
	// own 30 ms is more than 2 rows of it.
	if got := g.StallPerRow(); got != ms(5) {
		t.Fatalf("stall per row %v, want 5ms", got)
	}
	t2, _ := g.T(2)
	t3, _ := g.T(3)
	if math.Abs(t2*1e3-36) > 1 {
		t.Fatalf("T(2) %.2f ms, want 36 (6 of compute, 30 of stall)", t2*1e3)
	}
	if t3 < t2 {
		t.Fatalf("T(3) %.2f ms below T(2) %.2f", t3*1e3, t2*1e3)
	}
}

// TestYoungProbePairedByForcedSteps: while the gate drafts on, a young
// row count is probed right before the forced plain steps, which pair
// it, not every ProbeEveryYoung picks, where no plain step is near
// enough for the probe to be a sample.
func TestYoungProbePairedByForcedSteps(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	cost := []float64{0, 10, 12, 14, 16}
	g := measured(Config{MaxDraft: 3}, cost[1:4]...) // T(4) unmeasured: young
	// E(2)/cost(2) 2.71/1.4 = 1.94 against E(3)/cost(3) 2.79/1.6 = 1.74
	// (T(4) priced with ρ 0.2): depth 2 is best, depth 3 its probe.
	probs := []float64{0.9, 0.9, 0.1}
	var ks []int
	for range 3*ForcePlainAfter + 20 {
		p := g.Pick(src, 3, probs)
		ks = append(ks, p.K)
		g.Forward(p.K+1, ms(cost[p.K+1]))
	}
	forced, probes, paired := 0, 0, 0
	for i, k := range ks {
		switch {
		case k == 0 && (i == 0 || ks[i-1] != 0):
			forced++
			if i >= ProbeRun && ks[i-1] == 3 && ks[i-2] == 3 {
				paired++
			}
		case k == 3:
			probes++
		}
	}
	if forced < 3 || paired != forced {
		t.Fatalf("%d forced plain steps, %d right after a probe run of depth 3: %v", forced, paired, ks)
	}
	if n := g.Samples(4); n < ProbeSamples {
		t.Fatalf("%d samples of T(4) after %d forced plain steps, want %d", n, forced, ProbeSamples)
	}
	// Every 4th pick would be ~100 probe picks; the spacing of grown
	// row counts (here 23 picks) and the runs before the forced steps
	// give ~20.
	if probes > 2*ProbeRun*len(ks)/ProbeEvery {
		t.Fatalf("%d probe picks of %d: %v", probes, len(ks), ks)
	}
}

// TestForcedPlainAfterSettle: plain steps due while the forwards after a
// prompt settle (no samples) wait for them.
func TestForcedPlainAfterSettle(t *testing.T) {
	g := measured(Config{MaxDraft: 2}, 10, 10.5, 11)
	probs := []float64{0.9, 0.9}
	for range ForcePlainAfter - 1 {
		p := g.Pick(src, 2, probs)
		g.Forward(p.K+1, 11*time.Millisecond)
	}
	g.Unseen()
	for i := range Settle {
		p := g.Pick(src, 2, probs)
		if p.K == 0 {
			t.Fatalf("settling forward %d: plain %+v", i, p)
		}
		g.Forward(p.K+1, 11*time.Millisecond)
	}
	p := g.Pick(src, 2, probs)
	g.Forward(p.K+1, 11*time.Millisecond)
	if p.K == 0 {
		t.Fatalf("the 64th drafted step is plain: %+v", p)
	}
	if p := g.Pick(src, 2, probs); p.K != 0 || !p.Plain {
		t.Fatalf("after %d drafted steps and the settling: %+v, want a forced plain step", ForcePlainAfter, p)
	}
}

// TestStallChargeSamples: a verify's own stall is charged (charge) from
// the verifies that are samples of T(n) only: not the forwards settling
// after a prompt (a new request's text misses the cache whatever the
// depth) nor the first verify after a change of depth (it reads what the
// shallower verifies before it did not bring). Two gates see the same
// forwards but for those: the same T(n).
func TestStallChargeSamples(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	run := func(cold, change float64) *Gate {
		g := New(Config{MaxDraft: 8})
		fwd := func(n int, compute, stall float64) {
			g.Pick(src, 8, nil)
			g.ForwardStalled(n, ms(compute+stall), ms(stall))
		}
		for range 4 {
			g.Unseen()
			for range Settle {
				fwd(4, 8, cold)
			}
			for range 12 {
				fwd(4, 8, 20)
			}
			fwd(6, 10, change) // a probe run's first verify
			fwd(6, 10, 30)
			fwd(1, 4, 5)
			fwd(1, 4, 5)
		}
		for range 8 {
			fwd(4, 8, 20)
		}
		fwd(1, 4, 5)
		fwd(1, 4, 5)
		return g
	}
	warm, cold := run(20, 30), run(200, 120)
	for _, n := range []int{4, 6} {
		w, _ := warm.T(n)
		c, _ := cold.T(n)
		if math.Abs(c-w) > 1e-6 {
			t.Errorf("T(%d): %.2f ms with cold settling forwards and dear first probes, %.2f ms without", n, c*1e3, w*1e3)
		}
	}
	if w, _ := warm.T(6); w < ms(30).Seconds() {
		t.Errorf("T(6) %.2f ms: below its 30 ms of stall", w*1e3)
	}
}

// TestSettleDeep: under streaming a request's first forwards but the
// very first read the new text's experts whatever their rows
// (SettleSamples), so there the gate drafts deeper than it does once the
// text is kept up; in memory, where they cost no more, as deep as ever;
// and where it does not draft once kept up, not there either. The very
// first forward after the prompt costs more the more rows it has (here
// 150 ms more, and a row 3 times its kept-up cost): it is drafted as
// kept up.
func TestSettleDeep(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	excess := [Settle]float64{150, 70, 30, 0} // over T(n), by place after the prompt
	for _, c := range []struct {
		name     string
		streamed bool
		row      float64 // ms a verify's row adds, kept up
		kept     [2]int  // the depths kept up, and of a request's first forward
		settle   [2]int  // the depths of a request's second forward
	}{
		// Kept up, an n-row forward takes 28 + 17(n−1) ms, 8 + 4(n−1) of
		// them stalled: the best depth is 2 at acceptance 0.9.
		{"streamed", true, 17, [2]int{1, 3}, [2]int{5, 5}},
		{"in memory", false, 17, [2]int{1, 3}, [2]int{1, 3}},
		// 28 + 40(n−1): drafting loses kept up, and also where it would
		// win if the first forwards' excess were shared by every row.
		{"streamed, plain", true, 40, [2]int{0, 0}, [2]int{0, 0}},
	} {
		g := New(Config{MaxDraft: 5})
		rng := rand.New(rand.NewPCG(3, 4))
		var first, settle, kept [6]int // picks by depth
		for req := range 12 {
			g.Unseen()
			for i := range 40 {
				k, _ := step(g, src, rng, 0.9, func(k int) {
					took, stall := 28+c.row*float64(k), 8+4*float64(k)
					if i < Settle {
						took += excess[i]
						stall += excess[i]
					}
					if i == 0 {
						took += 2 * c.row * float64(k)
						stall += 2 * c.row * float64(k)
					}
					if !c.streamed {
						took, stall = took-stall, 0
					}
					g.ForwardStalled(k+1, ms(took), ms(stall))
				})
				if req >= 4 {
					switch {
					case i == 0:
						first[k]++
					case i == 1:
						settle[k]++
					case i >= Settle:
						kept[k]++
					}
				}
			}
		}
		most := func(c [6]int) int { return slices.Index(c[:], slices.Max(c[:])) } // the depth picked most
		d0, ds, dk := most(first), most(settle), most(kept)
		t.Logf("%s: first forwards %v, second %v, kept up %v", c.name, first, settle, kept)
		if dk < c.kept[0] || dk > c.kept[1] {
			t.Errorf("%s: kept up, the gate drafted %d deep most (%v), want %d–%d", c.name, dk, kept, c.kept[0], c.kept[1])
		}
		if d0 < c.kept[0] || d0 > c.kept[1] {
			t.Errorf("%s: a request's first forward drafted %d deep most (%v), want %d–%d", c.name, d0, first, c.kept[0], c.kept[1])
		}
		if ds < c.settle[0] || ds > c.settle[1] {
			t.Errorf("%s: a request's second forward drafted %d deep most (%v), want %d–%d", c.name, ds, settle, c.settle[0], c.settle[1])
		}
	}
}

// TestSettleNoDeeperThanMeasured: among a request's first forwards the
// gate drafts deeper where it drafts kept up (SettleSamples), but to no
// more rows than it has measured: past them a settling forward's time
// grows with its rows, which the excess X, measured on other forwards,
// does not show.
func TestSettleNoDeeperThanMeasured(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	const stall = 0.01                                        // ms a row: streamed, and no charge to speak of
	tn := func(n int) float64 { return 20 + 13*float64(n-1) } // kept up, ms
	excess := [Settle]float64{150, 70, 30, 0}                 // over T(n), by place after the prompt
	probs := slices.Repeat([]float64{0.8}, 8)                 // a_j = 0.8: kept up, 1 draft is best
	for _, c := range []struct {
		name   string
		rows   int    // the deepest forward measured
		settle [2]int // the depths of a request's second forward
	}{
		{"measured to 3 rows", 3, [2]int{2, 2}},
		{"measured to 9 rows", 9, [2]int{4, 6}},
	} {
		g := New(Config{MaxDraft: 8})
		fwd := func(n int, took float64) { g.ForwardStalled(n, ms(took), ms(stall*float64(n))) }
		for range TimeWindow + Warmup {
			fwd(1, tn(1))
		}
		for n := 2; n <= c.rows; n++ {
			for range TimeWindow {
				fwd(n, tn(n))
				fwd(n, tn(n))
				fwd(1, tn(1))
				fwd(1, tn(1))
			}
		}
		for range SettleSamples + 1 { // requests of plain steps: X measured
			g.Unseen()
			for i := range Settle {
				fwd(1, tn(1)+excess[i])
			}
		}
		if p := g.Pick(src, 8, probs); p.K != 1 {
			t.Fatalf("%s: kept up, %d drafts, want 1", c.name, p.K)
		}
		g.Unseen()
		fwd(1, tn(1)+excess[0]) // the first forward after the prompt
		if k := g.Pick(src, 8, probs).K; k < c.settle[0] || k > c.settle[1] {
			t.Errorf("%s: a request's second forward drafted %d deep, want %d–%d", c.name, k, c.settle[0], c.settle[1])
		}
	}
}

// TestYoungStallShrunk: under streaming a verify's stall comes in bursts,
// so a row count's stall measured on one verify (a probe) enters its
// price shrunk towards its rows times the stall per row, as if that were
// worth ProbeSamples verifies; measured on ProbeSamples verifies it is
// charged as measured.
func TestYoungStallShrunk(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	const row = 4.0 // ms of stall per row, plain steps and 5-row verifies alike
	run := func(probes int, stall float64) float64 {
		g := New(Config{MaxDraft: 8})
		fwd := func(n int, compute, s float64) { g.ForwardStalled(n, ms(compute+s), ms(s)) }
		for range TimeWindow {
			fwd(5, 20, 5*row)
			fwd(5, 20, 5*row)
			fwd(1, 10, row)
			fwd(1, 10, row)
		}
		fwd(6, 22, 6*row) // the first 6-row forward: a warm-up
		fwd(1, 10, row)
		for range probes {
			fwd(6, 22, 6*row) // a probe run's first verify: no sample
			fwd(6, 22, stall)
			fwd(1, 10, row)
			fwd(1, 10, row)
		}
		for range StallWindow { // the recent stall per row: 4 ms
			fwd(1, 10, row)
		}
		g.pair(true)
		t6, _ := g.T(6)
		return t6 * 1e3
	}
	for _, c := range []struct {
		probes int
		want   float64 // ms T(6) grows by with the probes' stall at 60 ms, not 24
	}{
		{1, (60 - 6*row) / (1 + ProbeSamples)},
		{ProbeSamples, 60 - 6*row},
	} {
		dear, even := run(c.probes, 60), run(c.probes, 6*row)
		if got := dear - even; math.Abs(got-c.want) > 0.5 {
			t.Errorf("%d probes stalling 60 ms against %.0f: T(6) %.2f ms against %.2f, %+.2f, want %+.2f", c.probes, 6*row, dear, even, got, c.want)
		}
	}
}

// TestNoProbeWhileSettling: the forwards after a prompt are no samples,
// and under streaming they and the next ones are dear (the new text's
// experts come in), so no probe runs among the first ProbeWait; the
// probes come after them.
func TestNoProbeWhileSettling(t *testing.T) {
	g := measured(Config{MaxDraft: 2}, 10) // T(2) unmeasured: young, probed often
	for range AcceptWindow {
		g.Verified(src, nil, 1, 0) // drafting loses: the gate steps plainly
	}
	settling, later := 0, 0
	for range 6 {
		g.Unseen()
		for i := range 24 {
			p := g.Pick(src, 2, nil)
			if p.Probe {
				if i < ProbeWait {
					settling++
				} else {
					later++
				}
			}
			g.Forward(p.K+1, time.Duration(10*(p.K+1))*time.Millisecond)
		}
	}
	if settling > 0 || later == 0 {
		t.Fatalf("%d probes among the first %d forwards after a prompt, %d after them; want none and some", settling, ProbeWait, later)
	}
}

// TestExploreChargesRowsStall: under streaming every row of a verify is
// charged its stall (StallPerRow), so an exploration's lower bound is
// the compute of the deepest measured verify with the explored rows'
// stall, not that verify's whole time. Here a row costs 3 ms of compute
// and 4 of stall over a plain step's 10 and 4: T(3)/T(1) is 2.0, T(9)/T(1)
// 5.0. A drafter whose first draft is accepted 0.45 of the time and the
// others 0.9 after an accepted one gives E(8) = 3.57: against T(3) alone
// a 9-row verify looked worth 1.78 plain steps, where it is worth 0.71.
func TestExploreChargesRowsStall(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	forward := func(g *Gate, n int) { g.ForwardStalled(n, ms(10+3*float64(n-1)+4*float64(n)), ms(4*float64(n))) }
	s := Source{Name: "replay", Priors: []float64{0.5}}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := func(k int) int { // of k drafts
		acc := 0
		for acc < k {
			a := 0.9
			if acc == 0 {
				a = 0.45
			}
			if rng.Float64() >= a {
				break
			}
			acc++
		}
		return acc
	}
	g := New(Config{MaxDraft: 8})
	for range 2 * AcceptWindow { // every position measured
		g.Verified(s, nil, 8, accepted(8))
	}
	for range TimeWindow + Warmup {
		g.Pick(s, 2, nil)
		forward(g, 1)
	}
	for range TimeWindow { // T(2) and T(3) measured: runs of two, then two plain steps
		for _, n := range []int{2, 2, 1, 1, 3, 3, 1, 1} {
			g.Pick(s, 2, nil)
			forward(g, n)
		}
	}
	g.pair(true)
	if r := g.Ratio(3); math.Abs(r-2) > 0.01 {
		t.Fatalf("T(3)/T(1) %.3f, want 2", r)
	}
	if r := g.Ratio(9); r < 4.5 {
		t.Fatalf("T(9)/T(1) priced %.3f, want ≥ 4.5 (every row's stall charged)", r)
	}
	deep := 0
	for range 1000 {
		k := 0
		if b := g.Budget(s, 8); b > 0 {
			k = g.Pick(s, b, nil).K
		}
		forward(g, k+1)
		acc := accepted(max(k, 1))
		if k > 0 {
			g.Verified(s, nil, k, acc)
		} else {
			g.Verified(s, nil, 1, acc)
		}
		if k >= 5 {
			deep++
		}
	}
	if deep > 0 {
		t.Fatalf("%d verifies of 5 drafts or more; T(n)/T(1): %.2f, acceptance %.2f", deep, g.Snapshot().Ratios, g.Acceptance(s, 8))
	}
}

// TestNoHopelessProbeStreamed: under streaming every row of a verify is
// charged its stall, so drafts accepted 0.05 of the time (E(1) = 1.05)
// cannot pay even if a 2-row forward cost one row's compute and two
// rows' stall (here (10+8)/14 = 1.29 plain steps), and are not probed;
// in memory, where a row's price can be as low as T(1), they are (every
// ProbeEveryHopeless picks).
func TestNoHopelessProbeStreamed(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name  string
		stall float64 // ms a row
		want  bool    // probes
	}{{"streamed", 4, false}, {"memory", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(Config{MaxDraft: 4})
			forward := func(n int) {
				g.ForwardStalled(n, ms(10+3*float64(n-1)+tc.stall*float64(n)), ms(tc.stall*float64(n)))
			}
			rng := rand.New(rand.NewPCG(1, 2))
			probes := 0
			for i := range 2000 {
				p := g.Pick(src, 4, nil)
				if p.Probe && i >= 2*AcceptWindow { // the prior (0.5) measured away

					probes++
				}
				forward(p.K + 1)
				acc := 0
				for acc < max(p.K, 1) && rng.Float64() < 0.05 {
					acc++
				}
				g.Verified(src, nil, max(p.K, 1), min(acc, max(p.K, 1)))
			}
			if got := probes > 0; got != tc.want {
				t.Fatalf("%d probes in 2000 picks; want some: %v", probes, tc.want)
			}
		})
	}
}

// TestProbeRunLossMeasured: where the gate decodes plainly, a probe run
// is spaced by what the runs measurably lost, not only by its estimate
// from T(n), which is measured on a run's second verify: here the first
// verify after plain steps takes 50 ms (its rows' weights are not
// close), the second 18, a plain step 10. At acceptance 0.5 a run
// gives ~4 tokens for 78 ms: 3.8 plain steps lost, where the estimate
// (2 verifies of T(2)/T(1) 1.8 at value 0.83) says 0.6; at ProbeLoss
// the runs are ~ProbeEveryMax picks apart, not ProbeEveryHopeless.
func TestProbeRunLossMeasured(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	g := New(Config{MaxDraft: 1})
	rng := rand.New(rand.NewPCG(5, 6))
	prev, probes := 1, 0
	const picks = 6000
	for i := range picks {
		p := g.Pick(src, 1, nil)
		n := p.K + 1
		took := 10.0
		switch {
		case n > 1 && prev == 1:
			took = 50
		case n > 1:
			took = 18
		}
		g.Forward(n, ms(took))
		prev = n
		acc := 0
		if rng.Float64() < 0.5 {
			acc = 1
		}
		g.Verified(src, nil, 1, acc)
		if p.Probe && i >= picks/2 {
			probes++
		}
	}
	if r := g.Ratio(2); math.Abs(r-1.8) > 0.05 {
		t.Fatalf("T(2)/T(1) %.2f, want 1.8", r)
	}
	// ~picks/2/ProbeEveryMax runs of ProbeRun in the second half.
	if max := ProbeRun * (picks/2/ProbeEveryMax + 2); probes == 0 || probes > max {
		t.Fatalf("%d probe verifies in %d picks, want 1..%d (runs lost %.2f plain steps)", probes, picks/2, max, g.prunLoss.v)
	}
}

// TestProbedDeepCapped: under streaming a row count measured only in
// probe runs, deeper than the depth kept up, is priced no higher than the
// straight line through the kept-up costs (an MoE's extra rows cost less
// the more there are), so a dear probe (its verify follows shallower
// ones) does not keep the gate shallow; measured kept up, it is priced as
// measured; in memory, as measured either way.
func TestProbedDeepCapped(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	probs := slices.Repeat([]float64{0.9}, 8)
	kept := map[int]float64{1: 20, 2: 34, 3: 40} // ms, kept up: 6 ms a row past 2
	for _, c := range []struct {
		name  string
		six   float64 // a 6-row verify, ms
		probe bool    // measured in probe runs only
		deep  bool    // 4–5 drafts, not 1–2
		stall float64 // ms a row: streamed where > 0
	}{
		{"probed dear", 90, true, true, 0.01},
		{"kept up dear", 90, false, false, 0.01},
		{"kept up cheap", 56, false, true, 0.01},
		{"probed dear in memory", 90, true, false, 0},
	} {
		g := New(Config{MaxDraft: 5})
		fwd := func(n int, took float64) { g.ForwardStalled(n, ms(took), ms(c.stall*float64(n))) }
		for range TimeWindow + Warmup {
			fwd(1, kept[1])
		}
		for _, n := range []int{2, 3, 6} {
			took := kept[n]
			if n == 6 {
				took = c.six
			}
			for range TimeWindow {
				g.probing = n == 6 && c.probe // as Pick leaves it after a probe
				fwd(n, took)
				fwd(n, took)
				g.probing = false
				fwd(1, kept[1])
				fwd(1, kept[1])
			}
		}
		if k := g.Pick(src, 5, probs).K; (k >= 4) != c.deep || k < 1 {
			t3, _ := g.T(3)
			t6, _ := g.T(6)
			t.Errorf("%s: %d drafts (T(3), T(6) priced %.1f, %.1f ms), want deep %v", c.name, k, t3*1000, t6*1000, c.deep)
		}
	}
}

// TestStallRejectionPooled: under streaming a verify with a rejected
// draft stalls more than one whose drafts were all accepted (here 36 ms
// against 6, whatever its rows), so the mean stall of a row count's few
// verifies says more about how many of them were rejected than about
// its rows. Measured at 3 rows with every draft accepted and at 4 rows
// with half rejected, the gate prices both at the stall expected at the
// drafter's acceptance: 4 rows cost 3 ms of compute and what the one
// more draft adds to the chance of a rejection, not 15 ms more.
func TestStallRejectionPooled(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	s := Source{Name: "replay", Priors: []float64{0.5}}
	g := New(Config{MaxDraft: 5})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 4 * AcceptWindow { // a_j ≈ 0.8
		acc := 0
		for acc < 5 && rng.Float64() < 0.8 {
			acc++
		}
		g.Verified(s, nil, 5, acc)
	}
	for range TimeWindow + Warmup {
		g.ForwardStalled(1, ms(14), ms(4))
	}
	verify := func(n int, rejected bool) {
		stall := 6.0
		if rejected {
			stall = 36
		}
		g.ForwardStalled(n, ms(10+3*float64(n-1)+stall), ms(stall))
		acc := n - 1
		if rejected {
			acc = 0
		}
		g.Verified(s, nil, n-1, acc)
	}
	for i := range 2 * TimeWindow {
		if i%2 == 0 {
			verify(3, false)
			verify(3, false)
		} else {
			verify(4, false)
			verify(4, i%4 == 1) // half the 4-row samples rejected
		}
		g.ForwardStalled(1, ms(14), ms(4))
		g.ForwardStalled(1, ms(14), ms(4))
	}
	g.pair(true)
	a := g.Acceptance(s, 3) // T prices the rejections at the last source's
	t3, _ := g.T(3)
	t4, _ := g.T(4)
	p3 := 1 - a[0]*a[1]
	p4 := 1 - a[0]*a[1]*a[2]
	want := 3 + 30*(p4-p3) // ms: one row's compute, and the rejections' stall
	if got := (t4 - t3) * 1e3; math.Abs(got-want) > 1 {
		t.Fatalf("T(4) − T(3) = %.2f ms, want %.2f (3 of compute, rejections %.2f → %.2f)", got, want, p3, p4)
	}
	if got, want := t3*1e3, 16+6+30*p3; math.Abs(got-want) > 1 {
		t.Fatalf("T(3) = %.2f ms, want %.2f", got, want)
	}
}

// TestStreamedProbesPaired: under streaming, while the gate drafts on, a
// probe of a grown row count runs only right before the forced plain
// steps, which pair it, so that it is a sample: elsewhere it has no
// plain step near, and the depth it probes would stay priced as first
// measured.
func TestStreamedProbesPaired(t *testing.T) {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	forward := func(g *Gate, n int) { // 6 ms a row of compute, 2 of stall; 4 rows dearer
		c := 10 + 6*float64(n-1)
		if n >= 4 {
			c += 10
		}
		g.ForwardStalled(n, ms(c+2*float64(n)), ms(2*float64(n)))
	}
	g := New(Config{MaxDraft: 3})
	for range 2 * AcceptWindow {
		g.Verified(src, nil, 3, 3)
	}
	for range TimeWindow + Warmup {
		forward(g, 1)
	}
	for range TimeWindow { // T(2..4) grown: runs of two, then two plain steps
		for _, n := range []int{2, 2, 1, 1, 3, 3, 1, 1, 4, 4, 1, 1} {
			forward(g, n)
		}
	}
	g.pair(true)
	before := g.Samples(4)
	var plans []Plan
	for range 400 {
		p := g.Pick(src, 3, nil)
		plans = append(plans, p)
		forward(g, p.K+1)
		if p.K > 0 {
			g.Verified(src, nil, p.K, p.K)
		}
	}
	runs := 0
	for i, p := range plans {
		if !p.Probe {
			continue
		}
		if p.K != 3 {
			t.Fatalf("pick %d: a probe of %d drafts, want 3 (the best is 2)", i, p.K)
		}
		j := i + 1
		for j < len(plans) && plans[j].Probe {
			j++
		}
		if j < len(plans) && !plans[j].Plain {
			t.Fatalf("pick %d: a probe run not followed by the forced plain steps (pick %d: %+v)", i, j, plans[j])
		}
		if i == 0 || !plans[i-1].Probe {
			runs++
		}
	}
	if runs == 0 {
		t.Fatal("no probe run in 400 picks")
	}
	if got := g.Samples(4); got < before+runs-1 {
		t.Fatalf("%d probe runs, T(4) samples %d → %d: the runs were not measured", runs, before, got)
	}
}
