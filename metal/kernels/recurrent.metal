// The recurrent steps of qwen3next's gated DeltaNet layers and its gated
// attention: head splitting, sigmoid gates, the gated RMSNorm, the causal
// depthwise convolution with its rolling state, and the gated delta-rule
// recurrence. Written for Strata; each mirrors engine/cpu/recurrent.go
// (ggml-cpu's ops), with float sums in another order, so the results agree
// within the selftest's stated bounds rather than bit for bit.
#include <metal_stdlib>
using namespace metal;

inline float rec_sum(float v, threadgroup float * sh, ushort tiisg, ushort sgitg, ushort nsg) {
    v = simd_sum(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tiisg == 0) sh[sgitg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = 0.f;
    for (ushort i = 0; i < nsg; i++) t += sh[i];
    return t;
}

inline float rec_sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

// ---- SplitHeads: each row of x is heads groups of d0+d1 values; the first
// d0 of each group go to dst0, the rest to dst1. One thread per value of x.
struct split_args {
    uint n;        // rows * heads * (d0 + d1)
    uint d0, d1;
    uint tg_base;
};

kernel void kernel_split_heads(
        constant split_args & a [[buffer(0)]],
        device const float * x [[buffer(1)]],
        device float * dst0 [[buffer(2)]],
        device float * dst1 [[buffer(3)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    const uint g = a.d0 + a.d1, grp = i / g, e = i % g;
    if (e < a.d0) dst0[grp * a.d0 + e] = x[i];
    else dst1[grp * a.d1 + e - a.d0] = x[i];
}

// ---- SigmoidMul: x[i] *= sigmoid(g[i / per]) (per = 1: a gate per value;
// per = row length: one per row).
struct sigmul_args {
    uint n;
    uint per;
    uint tg_base;
};

kernel void kernel_sigmoid_mul(
        constant sigmul_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const float * g [[buffer(2)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    x[i] *= rec_sigmoid(g[i / a.per]);
}

// ---- GatedRMSNorm: each group of n values of x becomes
// RMSNorm(x)·w·silu(z); one threadgroup per group.
struct gnorm_args {
    uint  n;
    float eps;
};

kernel void kernel_gated_rms_norm(
        constant gnorm_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const float * z [[buffer(2)]],
        device const float * w [[buffer(3)]],
        threadgroup float * sh [[threadgroup(0)]],
        uint   grp   [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    device float * xr = x + ulong(grp) * a.n;
    device const float * zr = z + ulong(grp) * a.n;
    float s = 0.f;
    for (uint i = tiitg; i < a.n; i += ntg) s += xr[i] * xr[i];
    s = rec_sum(s, sh, tiisg, sgitg, nsg);
    const float scale = 1.0f / sqrt(s / float(a.n) + a.eps);
    for (uint i = tiitg; i < a.n; i += ntg) {
        const float zz = zr[i];
        xr[i] = xr[i] * scale * w[i] * (zz / (1.0f + exp(-zz)));
    }
}

// ---- CausalConv: per channel (one thread each), the sequence state
// (taps-1 inputs, oldest first) then the rows of x, convolved with the
// channel's taps (any number: qwen4exp's PLE convolution is a dilated one
// laid out as many taps with zeros between), then SiLU, into out; the
// state becomes the last taps-1 inputs. Snapshot i (of nsnap) is the state
// after row rows-nsnap+i, written to snaps + i·channels·(taps-1).
struct conv_args {
    uint channels;
    uint taps;
    uint rows;
    uint nsnap;
    uint tg_base;
};

kernel void kernel_causal_conv(
        constant conv_args & a [[buffer(0)]],
        device float * out [[buffer(1)]],
        device const float * x [[buffer(2)]],
        device float * state [[buffer(3)]],
        device const float * w [[buffer(4)]],
        device float * snaps [[buffer(5)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint ch = (tg + a.tg_base) * ntg + tid;
    if (ch >= a.channels) return;
    const uint k = a.taps - 1;
    device float * st = state + ulong(ch) * k;
    device const float * wc = w + ulong(ch) * a.taps;
    // Inputs at sequence index m: m < k the old state, else row m-k of x.
    const uint first = a.rows - a.nsnap;
    for (uint t = 0; t < a.rows; t++) {
        float sum = 0.f;
        for (uint i = 0; i < a.taps; i++) {
            const uint m = t + i;
            const float v = m < k ? st[m] : x[ulong(m - k) * a.channels + ch];
            sum += v * wc[i];
        }
        out[ulong(t) * a.channels + ch] = sum / (1.0f + exp(-sum));
        if (t >= first) {
            device float * sn = snaps + ulong(t - first) * a.channels * k + ulong(ch) * k;
            for (uint j = 0; j < k; j++) {
                const uint m = t + 1 + j;
                sn[j] = m < k ? st[m] : x[ulong(m - k) * a.channels + ch];
            }
        }
    }
    // The new state: the last k inputs, in place. Entry j comes from
    // sequence index rows+j > j, so ascending j reads old state entries
    // before they are overwritten.
    for (uint j = 0; j < k; j++) {
        const uint m = a.rows + j;
        st[j] = m < k ? st[m] : x[ulong(m - k) * a.channels + ch];
    }
}

// ---- GatedDeltaNet: one threadgroup per value head, thread j owning row j
// of the head's state (column j of the state matrix), through all rows:
// q and k L2-normalised in threadgroup memory, beta = sigmoid(b), the decay
// exp(softplus(a + dt_bias)·A), then per row j: scale, dj = (v_j − s_j·k)·beta,
// s_j += k·dj, out_j = s_j·q / sqrt(D). Value head h reads key head
// h / (value_heads/key_heads) (qwen3next), or h mod key_heads when tiled
// (qwen4exp). Snapshot i is the state after row rows-nsnap+i, at
// snaps + i·value_heads·D·D.
struct delta_args {
    uint  key_heads;
    uint  value_heads;
    uint  dim;
    uint  rows;
    uint  nsnap;
    float eps;
    uint  tiled;
};

kernel void kernel_gated_delta_net(
        constant delta_args & a [[buffer(0)]],
        device const float * qkv [[buffer(1)]],
        device const float * bb [[buffer(2)]],
        device const float * aa [[buffer(3)]],
        device float * state [[buffer(4)]],
        device float * out [[buffer(5)]],
        device const float * dt_bias [[buffer(6)]],
        device const float * A [[buffer(7)]],
        device float * snaps [[buffer(8)]],
        threadgroup float * sh [[threadgroup(0)]],   // q[D], k[D], then one float per simdgroup
        uint   h     [[threadgroup_position_in_grid]],
        ushort j     [[thread_index_in_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    const uint D = a.dim, hv = a.value_heads;
    const uint kh = a.tiled ? h % a.key_heads : h / (hv / a.key_heads);
    const uint key_dim = a.key_heads * D, conv_dim = 2 * key_dim + hv * D;
    threadgroup float * qs = sh;
    threadgroup float * ks = sh + D;
    threadgroup float * red = sh + 2 * D;
    device float * sr = state + (ulong(h) * D + j) * D;
    const float scale = 1.0f / sqrt(float(D));
    const uint first = a.rows - a.nsnap;
    for (uint t = 0; t < a.rows; t++) {
        device const float * row = qkv + ulong(t) * conv_dim;
        const float qv = row[kh * D + j], kv = row[key_dim + kh * D + j];
        const float qn = rec_sum(qv * qv, red, tiisg, sgitg, nsg);
        const float kn = rec_sum(kv * kv, red, tiisg, sgitg, nsg);
        qs[j] = qv / max(sqrt(qn), a.eps);
        ks[j] = kv / max(sqrt(kn), a.eps);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        const float beta = rec_sigmoid(bb[t * hv + h]);
        const float x = aa[t * hv + h] + dt_bias[h];
        const float sp = x > 20.f ? x : log(1.0f + exp(x));
        const float eg = exp(sp * A[h]);
        float dot_k = 0.f;
        for (uint i = 0; i < D; i++) {
            const float s = sr[i] * eg;
            sr[i] = s;
            dot_k += s * ks[i];
        }
        const float dj = (row[2 * key_dim + h * D + j] - dot_k) * beta;
        float dot_q = 0.f;
        for (uint i = 0; i < D; i++) {
            const float s = fma(ks[i], dj, sr[i]);
            sr[i] = s;
            dot_q += s * qs[i];
        }
        out[(ulong(t) * hv + h) * D + j] = dot_q * scale;
        if (t >= first) {
            device float * sn = snaps + ulong(t - first) * hv * D * D + (ulong(h) * D + j) * D;
            for (uint i = 0; i < D; i++) sn[i] = sr[i];
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);   // qs, ks free for the next row
    }
}
