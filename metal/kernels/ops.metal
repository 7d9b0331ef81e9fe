// The non-matrix steps of a decode step: RMSNorm, NEOX RoPE, the KV cache
// store, decode attention, softmax, the router (softmax + top-k +
// renormalisation), SwiGLU, the expert combine and a residual add; the
// fill, the row repeat and qwen4exp's PLE gate, which were host code.
// Written for Strata; each mirrors the CPU code in engine/cpu.
#include <metal_stdlib>
using namespace metal;

// ---- RMSNorm: out[r] = x[r] * w / sqrt(mean(x[r]^2) + eps), one threadgroup per row.
struct norm_args {
    uint  n;         // values per row
    float eps;
    uint  x_stride;  // floats between rows of x and out
};

// Sum of v over the threadgroup; sh holds one float per simdgroup.
inline float tg_sum(float v, threadgroup float * sh, ushort tiitg, ushort tiisg, ushort sgitg, ushort nsg) {
    v = simd_sum(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);   // sh free from an earlier use
    if (tiisg == 0) sh[sgitg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = 0.f;
    for (ushort i = 0; i < nsg; i++) t += sh[i];
    return t;
}

inline float tg_max(float v, threadgroup float * sh, ushort tiitg, ushort tiisg, ushort sgitg, ushort nsg) {
    v = simd_max(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tiisg == 0) sh[sgitg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = sh[0];
    for (ushort i = 1; i < nsg; i++) t = max(t, sh[i]);
    return t;
}

kernel void kernel_rms_norm(
        constant norm_args & a [[buffer(0)]],
        device const float * x [[buffer(1)]],
        device const float * w [[buffer(2)]],
        device       float * out [[buffer(3)]],
        threadgroup  float * sh [[threadgroup(0)]],
        uint   row   [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    device const float * xr = x + ulong(row) * a.x_stride;
    device float * o = out + ulong(row) * a.x_stride;
    float s = 0.f;
    for (uint i = tiitg; i < a.n; i += ntg) s += xr[i] * xr[i];
    s = tg_sum(s, sh, tiitg, tiisg, sgitg, nsg);
    const float scale = 1.0f / sqrt(s / float(a.n) + a.eps);
    // Every lane has read all it needs of xr (its own elements) before writing o: out may alias x.
    for (uint i = tiitg; i < a.n; i += ntg) o[i] = xr[i] * scale * w[i];
}

// ---- RoPE, NEOX layout (element i pairs with i + dims/2), in place; one threadgroup per head,
// one thread per pair. The position comes from a buffer so that the step's commands can be reused.
struct rope_args {
    uint  head_dim;
    uint  dims;         // rotated dimensions
    float freq_base;
    float freq_scale;
    float ext_factor;   // YaRN mix; 0 without YaRN
    float attn_factor;
    float corr0, corr1; // YaRN correction dims
};

kernel void kernel_rope_neox(
        constant rope_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const int * pos [[buffer(2)]],
        uint head [[threadgroup_position_in_grid]],
        uint i    [[thread_position_in_threadgroup]]) {
    if (i >= a.dims / 2) return;
    const float theta_scale = pow(a.freq_base, -2.0f / float(a.dims));
    const float theta = float(pos[0]) * pow(theta_scale, float(i));
    const float interp = a.freq_scale * theta;
    float t = interp, mscale = a.attn_factor;
    if (a.ext_factor != 0.0f) {
        const float y = (float(i) - a.corr0) / max(0.001f, a.corr1 - a.corr0);
        const float ramp = (1.0f - min(1.0f, max(0.0f, y))) * a.ext_factor;
        t = interp * (1.0f - ramp) + theta * ramp;
        mscale *= 1.0f + 0.1f * log(1.0f / a.freq_scale);
    }
    const float c = cos(t) * mscale, s = sin(t) * mscale;
    device float * h = x + ulong(head) * a.head_dim;
    const uint half_dims = a.dims / 2;
    const float x0 = h[i], x1 = h[i + half_dims];
    h[i] = x0 * c - x1 * s;
    h[i + half_dims] = x0 * s + x1 * c;
}

// ---- K and V of the current position into the F16 caches ([n_ctx][kv_dim] each).
struct kv_args {
    uint kv_dim;
    uint tg_base;
    uint v_trans;   // 0: V as K ([n_ctx][kv_dim]); else V transposed, rows of v_trans positions
};

kernel void kernel_kv_store(
        constant kv_args & a [[buffer(0)]],
        device const float * k [[buffer(1)]],
        device const float * v [[buffer(2)]],
        device half * kc [[buffer(3)]],
        device half * vc [[buffer(4)]],
        device const int * pos [[buffer(5)]],
        uint2 tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg.x + a.tg_base) * ntg + tid;   // grid.y: rows, at positions pos[0] + row
    if (i >= a.kv_dim) return;
    const uint p = uint(pos[0]) + tg.y;
    const ulong src = ulong(tg.y) * a.kv_dim + i;
    kc[ulong(p) * a.kv_dim + i] = half(k[src]);
    vc[a.v_trans ? ulong(i) * a.v_trans + p : ulong(p) * a.kv_dim + i] = half(v[src]);
}

// ---- Decode attention for one new position: one threadgroup per query head.
// Scores go to a device scratch row per head (any context length); Q and the
// probabilities are rounded to half before their dots, as the CPU backend does.
// With a mask (qwen4exp's QSA) the positions it does not keep get probability 0.
struct attn_args {
    uint  head_dim;
    uint  group;      // query heads per KV head
    uint  kv_dim;
    uint  n_ctx;      // scratch row length
    float scale;
    uint  v_trans;    // 0: V as K; else V transposed, rows of v_trans positions
    uint  q_stride;   // floats between rows of q and out (grid.y: rows at positions pos[0] + row)
    uint  sel_words;  // 0: every position; else the row's mask of kept positions, sel_words uints a row
};

kernel void kernel_attn_decode(
        constant attn_args & a [[buffer(0)]],
        device const float * q [[buffer(1)]],
        device const half * kc [[buffer(2)]],
        device const half * vc [[buffer(3)]],
        device float * scores [[buffer(4)]],
        device float * out [[buffer(5)]],
        device const int * pos [[buffer(6)]],
        device const uint * sel [[buffer(7)]],
        threadgroup float * sh [[threadgroup(0)]],
        uint2  tgp   [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    const uint head = tgp.x, row = tgp.y;
    const uint npos = uint(pos[0]) + row + 1;
    const uint hd = a.head_dim;
    device const float * qh = q + ulong(row) * a.q_stride + ulong(head) * hd;
    out += ulong(row) * a.q_stride;
    const ulong koff = ulong(head / a.group) * hd;
    device float * sc = scores + (ulong(row) * (a.q_stride / hd) + head) * a.n_ctx;
    // Position j is kept when bit j%32 of the row's mask word j/32 is set
    // (with no mask, all are); the others get probability 0.
    device const uint * selr = sel + ulong(row) * a.sel_words;
    float mx = -INFINITY;
    for (uint j = tiitg; j < npos; j += ntg) {
        if (a.sel_words && !((selr[j / 32] >> (j % 32)) & 1u)) {
            sc[j] = 0.f;
            continue;
        }
        device const half * kr = kc + ulong(j) * a.kv_dim + koff;
        float s = 0.f;
        for (uint d = 0; d < hd; d++) s += float(half(qh[d])) * float(kr[d]);
        s *= a.scale;
        sc[j] = s;
        mx = max(mx, s);
    }
    mx = tg_max(mx, sh, tiitg, tiisg, sgitg, nsg);
    float sum = 0.f;
    for (uint j = tiitg; j < npos; j += ntg) {
        if (a.sel_words && !((selr[j / 32] >> (j % 32)) & 1u)) continue;   // stays 0
        const float e = exp(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    sum = tg_sum(sum, sh, tiitg, tiisg, sgitg, nsg);
    const float inv = 1.0f / sum;
    threadgroup_barrier(mem_flags::mem_device);   // every score written before any is read across lanes
    for (uint d = tiitg; d < hd; d += ntg) {
        float o = 0.f;
        if (a.v_trans) {
            device const half * vr = vc + (koff + d) * a.v_trans;
            for (uint j = 0; j < npos; j++) o += float(half(sc[j] * inv)) * float(vr[j]);
        } else {
            for (uint j = 0; j < npos; j++) o += float(half(sc[j] * inv)) * float(vc[ulong(j) * a.kv_dim + koff + d]);
        }
        out[ulong(head) * hd + d] = o;
    }
}

// ---- Softmax of rows, in place: one threadgroup per row.
struct softmax_args {
    uint n;
};

kernel void kernel_softmax(
        constant softmax_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        threadgroup float * sh [[threadgroup(0)]],
        uint   row   [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    device float * r = x + ulong(row) * a.n;
    float mx = -INFINITY;
    for (uint i = tiitg; i < a.n; i += ntg) mx = max(mx, r[i]);
    mx = tg_max(mx, sh, tiitg, tiisg, sgitg, nsg);
    float s = 0.f;
    for (uint i = tiitg; i < a.n; i += ntg) { const float e = exp(r[i] - mx); r[i] = e; s += e; }
    s = tg_sum(s, sh, tiitg, tiisg, sgitg, nsg);
    const float inv = 1.0f / s;
    for (uint i = tiitg; i < a.n; i += ntg) r[i] *= inv;
}

// ---- Router: softmax over the expert logits (in place), the k most probable (ties to the lower
// index), their probabilities renormalised and scaled. One simdgroup per token.
struct router_args {
    uint  n_expert;   // at most 32 * 32
    uint  k;          // at most 32
    float w_scale;    // 0 or 1: none
    uint  probs;      // 1: logits already hold the softmax (Backend.Route), left unchanged
};

kernel void kernel_router(
        constant router_args & a [[buffer(0)]],
        device float * logits [[buffer(1)]],
        device int * ids [[buffer(2)]],
        device float * wts [[buffer(3)]],
        uint   tok   [[threadgroup_position_in_grid]],
        ushort lane  [[thread_index_in_simdgroup]]) {
    device float * p = logits + ulong(tok) * a.n_expert;
    if (!a.probs) {   // uniform over the simdgroup
        float mx = -INFINITY;
        for (uint i = lane; i < a.n_expert; i += 32) mx = max(mx, p[i]);
        mx = simd_max(mx);
        float s = 0.f;
        for (uint i = lane; i < a.n_expert; i += 32) { const float e = exp(p[i] - mx); p[i] = e; s += e; }
        const float inv = 1.0f / simd_sum(s);
        for (uint i = lane; i < a.n_expert; i += 32) p[i] *= inv;
    }
    uint taken = 0;   // bit j: expert lane + 32 j already chosen
    float wsum = 0.f, my_w = 0.f;
    int my_id = 0;
    for (uint k = 0; k < a.k; k++) {
        float best = -INFINITY;
        int bi = int(a.n_expert);
        for (uint i = lane, j = 0; i < a.n_expert; i += 32, j++) {
            if ((taken >> j & 1) == 0 && (bi == int(a.n_expert) || p[i] > best)) { best = p[i]; bi = int(i); }
        }
        const float m = simd_max(best);
        const int chosen = simd_min(best == m ? bi : int(a.n_expert));
        if (chosen % 32 == int(lane)) taken |= 1u << (chosen / 32);
        if (k == lane) { my_id = chosen; my_w = m; }   // lane k writes choice k
        wsum += m;
    }
    wsum = max(wsum, 6.103515625e-5f);
    if (lane < a.k) {
        float w = my_w / wsum;
        if (a.w_scale != 0.0f && a.w_scale != 1.0f) w *= a.w_scale;
        ids[tok * a.k + lane] = my_id;
        wts[tok * a.k + lane] = w;
    }
}

// ---- SwiGLU: out = silu(gate) * up, elementwise.
struct elt_args {
    uint n;
    uint tg_base;
};

kernel void kernel_swiglu(
        constant elt_args & a [[buffer(0)]],
        device const float * gate [[buffer(1)]],
        device const float * up [[buffer(2)]],
        device float * out [[buffer(3)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    const float g = gate[i];
    out[i] = g / (1.0f + exp(-g)) * up[i];
}

// ---- Residual add: x += y.
kernel void kernel_add(
        constant elt_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const float * y [[buffer(2)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    x[i] += y[i];
}

// ---- Expert combine: x += sum_k wts[k] * down[k], summed in slot order as the CPU does.
struct combine_args {
    uint n_embd;
    uint k;
    uint tg_base;
};

kernel void kernel_moe_combine(
        constant combine_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const float * down [[buffer(2)]],
        device const float * wts [[buffer(3)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n_embd) return;
    float o = down[i] * wts[0];
    for (uint k = 1; k < a.k; k++) o += down[ulong(k) * a.n_embd + i] * wts[k];
    x[i] += o;
}

// ---- RMSNorm (optional) and NEOX RoPE of each head of each row, in place, with the host's
// cos/sin rows (cs[row * rope_dims + 2i], [2i + 1]); one threadgroup per (head, row).
struct norm_rope_args {
    uint  head_dim;
    uint  heads;
    uint  rope_dims;   // 0: no rotation
    uint  has_w;       // 0: no norm
    float eps;
};

kernel void kernel_norm_rope(
        constant norm_rope_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        device const float * w [[buffer(2)]],
        device const float * cs [[buffer(3)]],
        threadgroup float * sh [[threadgroup(0)]],
        uint2  tgp   [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    device float * h = x + (ulong(tgp.y) * a.heads + tgp.x) * a.head_dim;
    if (a.has_w) {
        float s = 0.f;
        for (uint i = tiitg; i < a.head_dim; i += ntg) s += h[i] * h[i];
        s = tg_sum(s, sh, tiitg, tiisg, sgitg, nsg);
        const float scale = 1.0f / sqrt(s / float(a.head_dim) + a.eps);
        for (uint i = tiitg; i < a.head_dim; i += ntg) h[i] = h[i] * scale * w[i];
    }
    if (a.rope_dims == 0) return;
    threadgroup_barrier(mem_flags::mem_device);   // the normed head, written by every lane, is read across lanes
    device const float * c = cs + ulong(tgp.y) * a.rope_dims;
    const uint half_dims = a.rope_dims / 2;
    for (uint i = tiitg; i < half_dims; i += ntg) {
        const float co = c[2 * i], si = c[2 * i + 1];
        const float x0 = h[i], x1 = h[i + half_dims];
        h[i] = x0 * co - x1 * si;
        h[i + half_dims] = x0 * si + x1 * co;
    }
}

// ---- y = w * x and y += w * x (the CPU's combine: each product rounded, then added).
struct axpy_args {
    uint  n;
    uint  tg_base;
    float w;
    uint  accumulate;   // 0: y = w x; 1: y += w x
};

kernel void kernel_axpy(
        constant axpy_args & a [[buffer(0)]],
        device float * y [[buffer(1)]],
        device const float * x [[buffer(2)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    const float p = x[i] * a.w;
    y[i] = a.accumulate ? y[i] + p : p;
}

// ---- Cache-aware router (MoCE bounded by a max-rank window, engine/routing.CacheRoute): after
// the softmax, the true ranking of the window's experts; the true top-J always kept; the other
// k-J slots to the best scores among the window, a resident expert below the protected ranks
// scaled by lambda (ties keep the true order); the chosen in true rank order, renormalised.
// One simdgroup per token; rank and picked are threadgroup arrays of n_expert ints.
struct router_cache_args {
    uint  n_expert;
    uint  k;
    float w_scale;
    float lambda;
    uint  protected_top;
    uint  always_kept;
    uint  max_rank;   // 0: no window
    float max_mass;   // 0: none
    uint  probs;      // 1: logits already hold the softmax (Backend.Route), left unchanged
};

kernel void kernel_router_cache(
        constant router_cache_args & a [[buffer(0)]],
        device float * logits [[buffer(1)]],
        device int * ids [[buffer(2)]],
        device float * wts [[buffer(3)]],
        device const int * resident [[buffer(4)]],
        threadgroup int * rank [[threadgroup(0)]],
        threadgroup int * picked [[threadgroup(1)]],
        uint   tok   [[threadgroup_position_in_grid]],
        ushort lane  [[thread_index_in_simdgroup]]) {
    const uint n = a.n_expert;
    device float * p = logits + ulong(tok) * n;
    if (!a.probs) {   // uniform over the simdgroup
        float mx = -INFINITY;
        for (uint i = lane; i < n; i += 32) mx = max(mx, p[i]);
        mx = simd_max(mx);
        float s = 0.f;
        for (uint i = lane; i < n; i += 32) { const float e = exp(p[i] - mx); p[i] = e; s += e; }
        const float inv = 1.0f / simd_sum(s);
        for (uint i = lane; i < n; i += 32) p[i] *= inv;
    }
    for (uint i = lane; i < n; i += 32) picked[i] = 0;
    const uint m = a.max_rank > 0 ? min(a.max_rank, n) : n;
    uint taken = 0;
    for (uint r = 0; r < m; r++) {
        float best = -INFINITY;
        int bi = int(n);
        for (uint i = lane, j = 0; i < n; i += 32, j++) {
            if ((taken >> j & 1) == 0 && (bi == int(n) || p[i] > best)) { best = p[i]; bi = int(i); }
        }
        const float bm = simd_max(best);
        const int chosen = simd_min(best == bm ? bi : int(n));
        if (chosen % 32 == int(lane)) taken |= 1u << (chosen / 32);
        if (lane == 0) rank[r] = chosen;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane != 0) return;   // the selection is sequential, as the CPU's
    uint len = m;
    if (a.max_mass > 0.0f) {
        float mass = 0.f;
        for (uint i = 0; i < m; i++) {
            mass += p[rank[i]];
            if (i + 1 >= a.k && mass >= a.max_mass) { len = i + 1; break; }
        }
    }
    const uint j = min(a.always_kept, a.k);
    for (uint i = 0; i < j; i++) picked[rank[i]] = 1;
    for (uint slot = j; slot < a.k; slot++) {
        int best = -1;
        float bs = 0.f;
        for (uint i = j; i < len; i++) {
            const int e = rank[i];
            if (picked[e]) continue;
            const float sc = (i >= a.protected_top && resident[e]) ? p[e] * a.lambda : p[e];
            if (best < 0 || sc > bs) { best = int(i); bs = sc; }
        }
        picked[rank[best]] = 1;
    }
    uint nsel = 0;
    float sum = 0.f;
    for (uint i = 0; i < len && nsel < a.k; i++) {
        const int e = rank[i];
        if (picked[e]) { ids[tok * a.k + nsel] = e; wts[tok * a.k + nsel] = p[e]; sum += p[e]; nsel++; }
    }
    sum = max(sum, 6.103515625e-5f);
    for (uint i = 0; i < a.k; i++) {
        float w = wts[tok * a.k + i] / sum;
        if (a.w_scale != 0.0f && a.w_scale != 1.0f) w *= a.w_scale;
        wts[tok * a.k + i] = w;
    }
}

// ---- Flash attention for decode and prefill: one simdgroup per (query
// head, row); row r sees positions 0..pos[0]+r (causal). K and V are read
// in blocks of 32 positions, one position per lane for the scores, with
// the running maximum and sum of the online softmax, so no score row is
// stored and any context length fits. Q is rounded to half before its
// dots (as the CPU backend does against the half KV cache); the
// probabilities stay float (the CPU rounds them to half, which bounds the
// difference: see the selftest). Each lane accumulates head_dim/32 output
// values (head_dim a multiple of 32, at most 256). With a mask (qwen4exp's
// QSA) only the positions it keeps count; a row keeps at least one. No
// infinities: fast math may assume there are none.
struct fa_args {
    uint  head_dim;
    uint  group;      // query heads per KV head
    uint  kv_dim;
    float scale;
    uint  v_trans;    // 0: V as K; else V transposed, rows of v_trans positions
    uint  q_stride;   // floats between rows of q and out
    uint  sel_words;  // 0: every position; else the row's mask of kept positions, sel_words uints a row
};

constant float FA_NEG = -1e30f;

kernel void kernel_flash_attn(
        constant fa_args & a [[buffer(0)]],
        device const float * q [[buffer(1)]],
        device const half * kc [[buffer(2)]],
        device const half * vc [[buffer(3)]],
        device float * out [[buffer(4)]],
        device const int * pos [[buffer(5)]],
        device const uint * sel [[buffer(6)]],
        threadgroup float * qs [[threadgroup(0)]],
        uint2  tgp   [[threadgroup_position_in_grid]],
        ushort tiisg [[thread_index_in_simdgroup]]) {
    const uint head = tgp.x, row = tgp.y, hd = a.head_dim;
    const uint npos = uint(pos[0]) + row + 1;
    device const float * qh = q + ulong(row) * a.q_stride + ulong(head) * hd;
    for (uint d = tiisg; d < hd; d += 32) qs[d] = float(half(qh[d]));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const ulong koff = ulong(head / a.group) * hd;
    const uint nd = hd / 32;
    float o[8] = { 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f };
    float m = FA_NEG, l = 0.f;
    // A block's 32 positions are one word of the row's mask (bit j%32 of
    // word j/32 set: kept); with no mask every position is kept. The word
    // is the same for every lane, so skipping a block or a position of it
    // is uniform over the simdgroup.
    device const uint * selr = sel + ulong(row) * a.sel_words;
    for (uint j0 = 0; j0 < npos; j0 += 32) {
        const uint bits = a.sel_words ? selr[j0 / 32] : 0xffffffffu;
        if (bits == 0) continue;
        const uint j = j0 + tiisg;
        const bool keep = j < npos && ((bits >> tiisg) & 1u);
        float s = FA_NEG;
        if (keep) {
            device const half * kr = kc + ulong(j) * a.kv_dim + koff;
            float acc = 0.f;
            for (uint d = 0; d < hd; d++) acc += qs[d] * float(kr[d]);
            s = acc * a.scale;
        }
        const float mn = max(m, simd_max(s));
        const float corr = exp(m - mn);
        const float p = keep ? exp(s - mn) : 0.f;
        l = l * corr + simd_sum(p);
        for (uint i = 0; i < nd; i++) o[i] *= corr;
        const uint nb = min(32u, npos - j0);
        for (uint jj = 0; jj < nb; jj++) {
            if (!((bits >> jj) & 1u)) continue;
            const float pj = simd_shuffle(p, ushort(jj));
            const ulong jp = j0 + jj;
            for (uint i = 0; i < nd; i++) {
                const ulong d = koff + tiisg + 32 * i;
                const float v = a.v_trans ? float(vc[d * a.v_trans + jp]) : float(vc[jp * a.kv_dim + d]);
                o[i] += pj * v;
            }
        }
        m = mn;
    }
    const float inv = 1.0f / l;
    device float * oh = out + ulong(row) * a.q_stride + ulong(head) * hd;
    for (uint i = 0; i < nd; i++) oh[tiisg + 32 * i] = o[i] * inv;
}

// ---- Fill: x[i] = v (Backend.Fill: a MoE output cleared before the experts add into it).
struct fill_args {
    uint  n;
    uint  tg_base;
    float v;
};

kernel void kernel_fill(
        constant fill_args & a [[buffer(0)]],
        device float * x [[buffer(1)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    x[i] = a.v;
}

// ---- Repeat: dst[r][c][j] = src[r][j] for copies c (Backend.Repeat: qwen4exp's residual widened
// into its streams, the PLE value broadcast over them). One thread per value of dst.
struct repeat_args {
    uint n;        // values of dst
    uint tg_base;
    uint width;    // values per row of src
    uint copies;
};

kernel void kernel_repeat(
        constant repeat_args & a [[buffer(0)]],
        device float * dst [[buffer(1)]],
        device const float * src [[buffer(2)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    const uint row = i / (a.width * a.copies);
    dst[i] = src[ulong(row) * a.width + i % a.width];
}

// ---- PLE gate (qwen4exp, Backend.PLEGate): per group of n values of key and qry,
// s = sum(key * qry) / sqrt(n), gate = sgn(s) sqrt(max(|s|, 1e-6)); one threadgroup per group.
// The sum is a float tree where the CPU sums the float products in double: the selftest's bound.
struct ple_gate_args {
    uint  n;
    uint  tg_base;
    float scale;   // the float 1/sqrt(n), as the CPU rounds it
};

kernel void kernel_ple_gate(
        constant ple_gate_args & a [[buffer(0)]],
        device float * gate [[buffer(1)]],
        device const float * key [[buffer(2)]],
        device const float * qry [[buffer(3)]],
        threadgroup float * sh [[threadgroup(0)]],   // one float per simdgroup
        uint   tg    [[threadgroup_position_in_grid]],
        ushort tiitg [[thread_index_in_threadgroup]],
        ushort ntg   [[threads_per_threadgroup]],
        ushort tiisg [[thread_index_in_simdgroup]],
        ushort sgitg [[simdgroup_index_in_threadgroup]],
        ushort nsg   [[simdgroups_per_threadgroup]]) {
    const uint g = tg + a.tg_base;
    device const float * k = key + ulong(g) * a.n;
    device const float * q = qry + ulong(g) * a.n;
    float s = 0.f;
    for (uint i = tiitg; i < a.n; i += ntg) s += k[i] * q[i];
    s = tg_sum(s, sh, tiitg, tiisg, sgitg, nsg) * a.scale;
    if (tiitg != 0) return;
    const float mag = sqrt(max(fabs(s), 1e-6f));
    gate[g] = s > 0.f ? mag : (s < 0.f ? -mag : 0.f);
}
