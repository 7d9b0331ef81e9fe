// The hyper-connection steps of qwen4exp (engine/backend's GroupRMSNorm,
// ScaledSiLU, HyperMix and HyperCombine): the grouped RMSNorm of the HC
// streams, the low-rank gate's scaled SiLU, the gated mean of the streams
// and the combine into them. Written for Strata; each mirrors
// engine/cpu/hyper.go, with the RMS sum in another order (float, not
// ggml's double) and fast-math exp, so the results agree within the
// selftest's stated bounds rather than bit for bit.
#include <metal_stdlib>
using namespace metal;

inline float hc_sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

// ---- GroupRMSNorm: group g (of rows·span groups of n values, contiguous)
// normalised by its own RMS and multiplied by w[(g mod span)·n ...]
// (span groups per row); one threadgroup per group. out may alias x.
struct group_norm_args {
    uint  n;        // values per group
    uint  span;     // groups per row (len(w) / n)
    float eps;
    uint  tg_base;
};

kernel void kernel_group_rms_norm(
        constant group_norm_args & a [[buffer(0)]],
        device const float * x [[buffer(1)]],
        device const float * w [[buffer(2)]],
        device float * out [[buffer(3)]],
        threadgroup float * sh [[threadgroup(0)]],   // one float per simdgroup
        uint   tg    [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    const uint g = tg + a.tg_base;
    device const float * xg = x + ulong(g) * a.n;
    device float * og = out + ulong(g) * a.n;
    device const float * wg = w + ulong(g % a.span) * a.n;
    float s = 0.f;
    for (uint i = tiitg; i < a.n; i += ntg) s += xg[i] * xg[i];
    s = simd_sum(s);
    if (tiisg == 0) sh[sgitg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = 0.f;
    for (ushort i = 0; i < nsg; i++) t += sh[i];
    const float scale = 1.0f / sqrt(t / float(a.n) + a.eps);
    // Each lane reads only its own elements before writing them: out may alias x.
    for (uint i = tiitg; i < a.n; i += ntg) og[i] = xg[i] * scale * wg[i];
}

// ---- ScaledSiLU: x[i] = silu(scale·x[i]); one thread per value.
struct scaled_silu_args {
    uint  n;
    float scale;
    uint  tg_base;
};

kernel void kernel_scaled_silu(
        constant scaled_silu_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    const float v = x[i] * a.scale;
    x[i] = v / (1.0f + exp(-v));
}

// ---- HyperMix: out[r][i] = (Σ_c xn[r][c][i]·sigmoid(gate[r][c][i]))·(1/streams),
// summed in stream order; one thread per output value.
struct hyper_mix_args {
    uint n;         // values per stream
    uint streams;
    uint total;     // rows · n
    uint tg_base;
};

kernel void kernel_hyper_mix(
        constant hyper_mix_args & a [[buffer(0)]],
        device const float * xn [[buffer(1)]],
        device const float * gate [[buffer(2)]],
        device float * out [[buffer(3)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint k = (tg + a.tg_base) * ntg + tid;
    if (k >= a.total) return;
    const uint r = k / a.n, i = k % a.n;
    const ulong base = ulong(r) * a.streams * a.n + i;
    float o = 0.f;
    for (uint c = 0; c < a.streams; c++) {
        const ulong j = base + ulong(c) * a.n;
        o += xn[j] * hc_sigmoid(gate[j]);
    }
    out[k] = o * (1.0f / float(a.streams));
}

// ---- HyperCombine: x[r][c][i] += y[r][i]·2·sigmoid(inject[r][c]·(1/streams));
// one thread per value of x.
struct hyper_combine_args {
    uint n;
    uint streams;
    uint total;     // rows · streams · n
    uint tg_base;
};

kernel void kernel_hyper_combine(
        constant hyper_combine_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const float * y [[buffer(2)]],
        device const float * inject [[buffer(3)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint k = (tg + a.tg_base) * ntg + tid;
    if (k >= a.total) return;
    const uint i = k % a.n, rc = k / a.n, r = rc / a.streams;
    const float w = 2.0f * hc_sigmoid(inject[rc] * (1.0f / float(a.streams)));
    x[k] += y[ulong(r) * a.n + i] * w;
}
