// qwen4exp's QSA indexer steps on the device (engine/backend's StoreF16,
// QSAPool and QSASelect): the keys stored as F16, the blocks pooled, each
// query's block scores and the selection of its kept cells, which
// reproduces libstdc++'s std::partial_sort (heap select) exactly, ties
// included, as engine/cpu/qsa.go does. Written for Strata.
#include <metal_stdlib>
using namespace metal;

// ---- StoreF16: dst[i] = half(src[i]) (round to nearest even).
struct f16_args {
    uint n;
    uint tg_base;
};

kernel void kernel_store_f16(
        constant f16_args & a [[buffer(0)]],
        device half * dst [[buffer(1)]],
        device const float * src [[buffer(2)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    dst[i] = half(src[i]);
}

// ---- QSAPool: dst[b][e] = (sum over m < r of raw[b r + m][e], in order) * inv_r. One thread per value.
struct qsa_pool_args {
    uint  n;       // blocks * dim
    uint  tg_base;
    uint  dim;
    uint  r;
    float inv_r;   // the float 1/r, as the CPU rounds it
};

kernel void kernel_qsa_pool(
        constant qsa_pool_args & a [[buffer(0)]],
        device float * dst [[buffer(1)]],
        device const half * raw [[buffer(2)]],
        uint tg [[threadgroup_position_in_grid]],
        uint tid [[thread_position_in_threadgroup]],
        uint ntg [[threads_per_threadgroup]]) {
    const uint i = (tg + a.tg_base) * ntg + tid;
    if (i >= a.n) return;
    const uint b = i / a.dim, e = i % a.dim;
    device const half * p = raw + ulong(b) * a.r * a.dim + e;
    float s = float(p[0]);
    for (uint m = 1; m < a.r; m++) s += float(p[ulong(m) * a.dim]);
    dst[i] = s * a.inv_r;
}

// ---- QSA scores: scores[row][b] = sum over heads h (in order) of max(q_h . keys[b], 0), for the
// blocks b < (pos0 + row + 1) / r of the rows that see more cells than the width. One simdgroup
// per (block, row); the dot products are float simd sums where the CPU sums in double.
struct qsa_score_args {
    uint pos0;
    uint r;
    uint width;
    uint stride;   // floats between rows of scores
    uint heads;
    uint dim;
    uint tg_base;
};

kernel void kernel_qsa_scores(
        constant qsa_score_args & a [[buffer(0)]],
        device float * scores [[buffer(1)]],
        device const float * q [[buffer(2)]],
        device const float * keys [[buffer(3)]],
        uint2  tgp  [[threadgroup_position_in_grid]],
        ushort lane [[thread_index_in_simdgroup]]) {
    const uint b = tgp.x + a.tg_base, row = tgp.y;
    const uint n = a.pos0 + row + 1;
    if (n <= a.width || b >= n / a.r) return;   // uniform over the simdgroup
    device const float * k = keys + ulong(b) * a.dim;
    device const float * qr = q + ulong(row) * a.heads * a.dim;
    float s = 0.f;
    for (uint h = 0; h < a.heads; h++) {
        device const float * qh = qr + ulong(h) * a.dim;
        float d = 0.f;
        for (uint i = lane; i < a.dim; i += 32) d += qh[i] * k[i];
        d = simd_sum(d);
        if (d > 0.f) s = h == 0 ? d : s + d;
    }
    if (lane == 0) scores[ulong(row) * a.stride + b] = s;
}

// ---- QSA selection: row t (position p = pos0 + t, n = p + 1 cells) keeps every cell when
// n <= width; else libstdc++'s std::__heap_select(idx, idx + width, idx + n) with cmp_top_k
// (a before b when v[a] > v[b]) over the cells' values: cell j of a complete block b worth
// scores[t][b], the tail cells (n / r * r ...) 1e9. Only the heap's width entries are kept
// (the entries past it are each read once, at their own step, while they still hold their own
// index). One thread per row; heap is [rows][width] device scratch. The mask's uint pairs are
// the host's uint64 words (little-endian).
struct qsa_select_args {
    uint pos0;
    uint r;
    uint width;
    uint stride;   // floats between rows of scores
    uint words;    // uint64 words per row of sel
};

inline float qsa_val(device const float * sc, uint j, uint tail, uint r) {
    return j < tail ? sc[j / r] : 1e9f;
}

// std::__adjust_heap followed by std::__push_heap on h[0..n) with the hole at hole.
inline void qsa_adjust(device int * h, uint hole, uint n, int value, device const float * sc, uint tail, uint r) {
    const uint top = hole;
    uint child = hole;
    while (n >= 1 && child < (n - 1) / 2) {
        child = 2 * (child + 1);
        if (qsa_val(sc, uint(h[child]), tail, r) > qsa_val(sc, uint(h[child - 1]), tail, r)) child--;
        h[hole] = h[child];
        hole = child;
    }
    if ((n & 1) == 0 && child == (n - 2) / 2) {
        child = 2 * (child + 1);
        h[hole] = h[child - 1];
        hole = child - 1;
    }
    const float v = qsa_val(sc, uint(value), tail, r);
    while (hole > top) {
        const uint parent = (hole - 1) / 2;
        if (!(qsa_val(sc, uint(h[parent]), tail, r) > v)) break;
        h[hole] = h[parent];
        hole = parent;
    }
    h[hole] = value;
}

kernel void kernel_qsa_select(
        constant qsa_select_args & a [[buffer(0)]],
        device uint * sel [[buffer(1)]],
        device const float * scores [[buffer(2)]],
        device int * heap [[buffer(3)]],
        uint row [[threadgroup_position_in_grid]]) {
    const uint n = a.pos0 + row + 1;
    device uint * m = sel + ulong(row) * a.words * 2;
    for (uint w = 0; w < (n + 63) / 64 * 2; w++) m[w] = 0;
    if (n <= a.width) {
        for (uint j = 0; j < n; j++) m[j / 32] |= 1u << (j % 32);
        return;
    }
    const uint k = a.width, tail = n / a.r * a.r;
    device const float * sc = scores + ulong(row) * a.stride;
    device int * h = heap + ulong(row) * k;
    for (uint j = 0; j < k; j++) h[j] = int(j);
    if (k >= 2) {   // std::__make_heap
        for (uint parent = (k - 2) / 2; ; parent--) {
            qsa_adjust(h, parent, k, h[parent], sc, tail, a.r);
            if (parent == 0) break;
        }
    }
    for (uint i = k; i < n; i++) {
        if (qsa_val(sc, i, tail, a.r) > qsa_val(sc, uint(h[0]), tail, a.r)) qsa_adjust(h, 0, k, int(i), sc, tail, a.r);
    }
    for (uint j = 0; j < k; j++) m[uint(h[j]) / 32] |= 1u << (uint(h[j]) % 32);
}
