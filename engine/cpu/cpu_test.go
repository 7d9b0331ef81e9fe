package cpu_test

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-llm/strata/engine/backend"
	"github.com/strata-llm/strata/engine/cpu"
	"github.com/strata-llm/strata/engine/ggml"
	"github.com/strata-llm/strata/engine/quant"
)

func TestPoolCoversEveryItemOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := cpu.NewPool(threads)
		for _, n := range []int{0, 1, 3, 100, 1000} {
			hits := make([]atomic.Int32, n)
			var badW atomic.Bool
			p.Run(n, &countTask{hits: hits, threads: threads, badW: &badW})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("threads %d n %d: item %d ran %d times", threads, n, i, h)
				}
			}
			if badW.Load() {
				t.Fatalf("worker index out of range")
			}
		}
		p.Close()
	}
}

// TestPoolParksAndWakes runs loops while the workers spin, after they have
// parked, and closes the pool in both states.
func TestPoolParksAndWakes(t *testing.T) {
	for _, parkBeforeClose := range []bool{false, true} {
		p := cpu.NewPool(3)
		for round := 0; round < 6; round++ {
			if round%2 == 1 {
				time.Sleep(2 * cpu.SpinTime) // let the workers park
			}
			n := 50 + round
			hits := make([]atomic.Int32, n)
			var badW atomic.Bool
			p.Run(n, &countTask{hits: hits, threads: 3, badW: &badW})
			for i := range hits {
				if h := hits[i].Load(); h != 1 {
					t.Fatalf("round %d: item %d ran %d times", round, i, h)
				}
			}
		}
		if parkBeforeClose {
			time.Sleep(2 * cpu.SpinTime)
		}
		done := make(chan struct{})
		go func() { p.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not return")
		}
	}
}

// TestPoolSharesWork checks that a loop of slow items is spread over the
// threads (a worker that never woke would leave all to the caller).
func TestPoolSharesWork(t *testing.T) {
	p := cpu.NewPool(2)
	defer p.Close()
	time.Sleep(2 * cpu.SpinTime)
	var byThread [2]atomic.Int32
	p.Run(20, taskFunc(func(w, i int) {
		byThread[w].Add(1)
		time.Sleep(2 * time.Millisecond)
	}))
	if byThread[1].Load() == 0 {
		t.Errorf("the worker ran none of 20 items of 2 ms (caller ran %d)", byThread[0].Load())
	}
}

type taskFunc func(w, i int)

func (f taskFunc) Run(w, i int) { f(w, i) }

func TestRMSNormAndSoftmax(t *testing.T) {
	x := []float32{1, -2, 3, -4}
	w := []float32{1, 1, 2, 0.5}
	out := make([]float32, 4)
	cpu.RMSNorm(out, x, w, 0)
	rms := math.Sqrt((1 + 4 + 9 + 16) / 4.0)
	for i := range x {
		want := float64(x[i]) / rms * float64(w[i])
		if math.Abs(float64(out[i])-want) > 1e-6 {
			t.Errorf("rmsnorm[%d] = %v, want %v", i, out[i], want)
		}
	}
	s := []float32{1, 2, 3, float32(math.Inf(-1))}
	cpu.Softmax(s)
	z := math.Exp(1) + math.Exp(2) + math.Exp(3)
	for i, l := range []float64{1, 2, 3} {
		if math.Abs(float64(s[i])-math.Exp(l)/z) > 1e-6 {
			t.Errorf("softmax[%d] = %v", i, s[i])
		}
	}
	if s[3] != 0 {
		t.Errorf("softmax of -inf = %v", s[3])
	}
}

func TestRopeNeox(t *testing.T) {
	r := backend.Rope{Dims: 8, FreqBase: 10000, FreqScale: 1, AttnFactor: 1}
	cs := make([]float32, 8)
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	orig := append([]float32(nil), x...)
	r.Cache(3, cs)
	cpu.ApplyNeox(x, cs, 8)
	for i := 0; i < 4; i++ {
		theta := 3 * math.Pow(10000, -2*float64(i)/8)
		c, s := math.Cos(theta), math.Sin(theta)
		w0 := float64(orig[i])*c - float64(orig[i+4])*s
		w1 := float64(orig[i])*s + float64(orig[i+4])*c
		if math.Abs(float64(x[i])-w0) > 1e-5 || math.Abs(float64(x[i+4])-w1) > 1e-5 {
			t.Errorf("pair %d: (%v, %v), want (%v, %v)", i, x[i], x[i+4], w0, w1)
		}
	}
	// Position 0 is the identity; YaRN at factor 1 too.
	y := append([]float32(nil), orig...)
	r.Cache(0, cs)
	cpu.ApplyNeox(y, cs, 8)
	for i := range y {
		if y[i] != orig[i] {
			t.Fatalf("rope at 0 changed element %d", i)
		}
	}
}

func TestMatMulMatchesDequantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	p := cpu.NewPool(2)
	defer p.Close()
	for _, typ := range []ggml.Type{ggml.F32, ggml.Q8_0, ggml.Q4_K} {
		rows, cols, n := 37, 256, 3
		k, err := quant.For(typ)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := typ.RowSize(int64(cols))
		data := make([]byte, int(rb)*rows)
		k.Random(data, rng, 1)
		w, err := cpu.NewWeight(typ, data, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var a cpu.Acts
		a.Quantize(p, w.VecDotType(), x, n, cols)
		out := make([]float32, n*rows)
		cpu.MatMul(p, &w, &a, out)
		deq := make([]float32, cols)
		for r := 0; r < rows; r++ {
			w.DequantizeRow(r, deq)
			for tk := 0; tk < n; tk++ {
				var want, norm float64
				for c := 0; c < cols; c++ {
					want += float64(deq[c]) * float64(x[tk*cols+c])
					norm += math.Abs(float64(deq[c]) * float64(x[tk*cols+c]))
				}
				// Activation quantization error: ≤ 1/127 relative per element for Q8.
				if d := math.Abs(float64(out[tk*rows+r]) - want); d > 0.02*norm+1e-5 {
					t.Fatalf("%s row %d token %d: %v, want %v (±%v)", typ, r, tk, out[tk*rows+r], want, 0.02*norm)
				}
			}
		}
	}
	if _, err := cpu.NewWeight(ggml.Q8_0, make([]byte, 10), 2, 32); err == nil {
		t.Error("NewWeight accepted a short buffer")
	}
}

// countTask counts how often each item runs and checks the thread index.
type countTask struct {
	hits    []atomic.Int32
	threads int
	badW    *atomic.Bool
}

func (c *countTask) Run(w, i int) {
	if w < 0 || w >= c.threads {
		c.badW.Store(true)
	}
	c.hits[i].Add(1)
}

// TestWarmUpStops: WarmUp touches the dense weights' pages on the pool's
// threads until stopped, and returns with the pool usable.
func TestWarmUpStops(t *testing.T) {
	be := cpu.NewBackend(2)
	defer be.Close()
	if _, err := be.NewMatrix(ggml.F32, make([]byte, 4*1024*300), 300, 1024); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		be.WarmUp(stop)
		close(done)
	}()
	time.Sleep(20 * time.Millisecond)
	close(stop)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WarmUp did not stop")
	}
	x := make([]float32, 8)
	be.Softmax(x, 1, 8) // the pool still runs loops
	if x[0] != 0.125 {
		t.Fatalf("softmax after warm-up: %v", x)
	}
}
