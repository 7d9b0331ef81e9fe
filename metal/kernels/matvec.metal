// Quantized matrix-vector products and row lookups for ggml's block
// layouts. Written for Strata; the block layouts are ggml's (ggml-common.h).
//
// Every weight type provides deq(row, c, out): the 32 values of chunk c of
// a row (chunk c covers columns 32c..32c+31) as float. A mat-vec
// threadgroup holds NSG simdgroups; each simdgroup owns NR consecutive
// rows; its lanes take the row's chunks in turn and the partial dots are
// reduced with simd_sum. grid.y selects one of several matrices: dense
// (consecutive in w) or experts found through the slot map.
#include <metal_stdlib>
using namespace metal;

constant int FC_nsg [[function_constant(0)]];
constant int FC_nr  [[function_constant(1)]];
constant int NSG = is_function_constant_defined(FC_nsg) ? FC_nsg : 4;  // simdgroups per threadgroup
constant int NR  = is_function_constant_defined(FC_nr)  ? FC_nr  : 2;  // rows per simdgroup (at most 4)

struct mv_args {
    uint  ncols;       // values per row (a multiple of 32, and of the block size)
    uint  nrows;       // rows per matrix
    ulong row_bytes;   // bytes per row
    ulong mat_bytes;   // bytes between the matrices of grid.y (dense mode)
    uint  x_stride;    // floats between the inputs of grid.y (0: one input for all)
    uint  y_stride;    // floats between the outputs of grid.y
    uint  use_slots;   // 1: matrix y is w + slots[ids[y]] * slot_bytes + w_off
    uint  tg_base;     // first threadgroup of this dispatch (grid-size guard)
    ulong slot_bytes;
    ulong w_off;
};

inline float f16_at(device const uchar * p) { return float(*(device const half *) p); }

struct t_f32 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const float * p = (device const float *) row + 32 * c;
        for (int i = 0; i < 32; i++) o[i] = p[i];
    }
};
struct t_f16 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const half * p = (device const half *) row + 32 * c;
        for (int i = 0; i < 32; i++) o[i] = float(p[i]);
    }
};
struct t_bf16 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const ushort * p = (device const ushort *) row + 32 * c;
        for (int i = 0; i < 32; i++) o[i] = as_type<float>(uint(p[i]) << 16);
    }
};
// Q8_0: 34 bytes per 32 values: half d, int8 qs[32].
struct t_q8_0 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 34 * c;
        const float d = f16_at(b);
        device const char * qs = (device const char *) (b + 2);
        for (int i = 0; i < 32; i++) o[i] = float(qs[i]) * d;
    }
};
// Q4_0: 18 bytes per 32 values: half d, qs[16] (low nibbles values 0..15, high 16..31), value (q-8)*d.
struct t_q4_0 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 18 * c;
        const float d = f16_at(b);
        for (int i = 0; i < 16; i++) {
            const uchar q = b[2 + i];
            o[i]      = float(int(q & 15) - 8) * d;
            o[i + 16] = float(int(q >> 4) - 8) * d;
        }
    }
};
// K-quant 6-bit scale/min pair j of a Q4_K/Q5_K block (ggml's get_scale_min_k4).
inline void scale_min_k4(int j, device const uchar * q, thread float & sc, thread float & m) {
    if (j < 4) {
        sc = float(q[j] & 63);
        m  = float(q[j + 4] & 63);
    } else {
        sc = float((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
        m  = float((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}
// Q4_K: 144 bytes per 256: half d, half dmin, scales[12], qs[128].
struct t_q4_K {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 144 * (c / 8);
        const int j = c % 8;
        const float d = f16_at(b), dmin = f16_at(b + 2);
        float sc, m;
        scale_min_k4(j, b + 4, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        device const uchar * q = b + 16 + 32 * (j / 2);
        const int sh = (j & 1) * 4;
        for (int i = 0; i < 32; i++) o[i] = d1 * float((q[i] >> sh) & 15) - m1;
    }
};
// Q5_K: 176 bytes per 256: half d, half dmin, scales[12], qh[32], qs[128].
struct t_q5_K {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 176 * (c / 8);
        const int j = c % 8;
        const float d = f16_at(b), dmin = f16_at(b + 2);
        float sc, m;
        scale_min_k4(j, b + 4, sc, m);
        const float d1 = d * sc, m1 = dmin * m;
        device const uchar * qh = b + 16;
        device const uchar * q = b + 48 + 32 * (j / 2);
        const int sh = (j & 1) * 4;
        for (int i = 0; i < 32; i++) {
            const int v = ((q[i] >> sh) & 15) + (((qh[i] >> j) & 1) << 4);
            o[i] = d1 * float(v) - m1;
        }
    }
};
// Q6_K: 210 bytes per 256: ql[128], qh[64], int8 scales[16], half d.
struct t_q6_K {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 210 * (c / 8);
        const int h = (c % 8) / 4, j = c % 4;   // half of the block, which quarter of it
        const float d = f16_at(b + 208);
        device const uchar * ql = b + 64 * h + 32 * (j & 1);
        device const uchar * qh = b + 128 + 32 * h;
        device const char * sc = (device const char *) (b + 192 + 8 * h + 2 * j);
        const int shl = (j >> 1) * 4, shh = 2 * j;
        for (int i = 0; i < 32; i++) {
            const int q = (((ql[i] >> shl) & 15) | (((qh[i] >> shh) & 3) << 4)) - 32;
            o[i] = d * float(sc[i / 16]) * float(q);
        }
    }
};
// Q2_K: 84 bytes per 256: scales[16] (low nibble scale, high min), qs[64], half d, half dmin.
struct t_q2_K {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 84 * (c / 8);
        const int h = (c % 8) / 4, j = c % 4;   // 128-value half, which 2-bit plane
        const float d = f16_at(b + 80), dmin = f16_at(b + 82);
        device const uchar * q = b + 16 + 32 * h;
        for (int i = 0; i < 32; i++) {
            const uchar s = b[8 * h + 2 * j + i / 16];
            o[i] = d * float(s & 15) * float((q[i] >> (2 * j)) & 3) - dmin * float(s >> 4);
        }
    }
};
// Q3_K: 110 bytes per 256: hmask[32], qs[64], scales[12] (16 packed 6-bit), half d.
inline int q3k_scale(device const uchar * s, int is) {
    const int lo = is < 8 ? (s[is] & 15) : (s[is - 8] >> 4);
    const int hi = (s[8 + (is % 4)] >> (2 * (is / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}
struct t_q3_K {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 110 * (c / 8);
        const int h = (c % 8) / 4, j = c % 4;
        const float d = f16_at(b + 108);
        device const uchar * hm = b;
        device const uchar * q = b + 32 + 32 * h;
        const int m = 4 * h + j;   // bit of hmask
        for (int i = 0; i < 32; i++) {
            const int sc = q3k_scale(b + 96, 8 * h + 2 * j + i / 16);
            const int v = int((q[i] >> (2 * j)) & 3) - (((hm[i] >> m) & 1) ? 0 : 4);
            o[i] = d * float(sc) * float(v);
        }
    }
};

constant ulong iq2xs_grid[512] = {
    0x0808080808080808ul, 0x080808080808082bul, 0x0808080808081919ul, 0x0808080808082b08ul,
    0x0808080808082b2bul, 0x0808080808190819ul, 0x0808080808191908ul, 0x080808080819192bul,
    0x0808080808192b19ul, 0x08080808082b0808ul, 0x08080808082b082bul, 0x08080808082b1919ul,
    0x08080808082b2b08ul, 0x0808080819080819ul, 0x0808080819081908ul, 0x080808081908192bul,
    0x0808080819082b19ul, 0x0808080819190808ul, 0x080808081919082bul, 0x0808080819191919ul,
    0x0808080819192b08ul, 0x08080808192b0819ul, 0x08080808192b1908ul, 0x080808082b080808ul,
    0x080808082b08082bul, 0x080808082b081919ul, 0x080808082b082b08ul, 0x080808082b190819ul,
    0x080808082b191908ul, 0x080808082b192b19ul, 0x080808082b2b0808ul, 0x0808081908080819ul,
    0x0808081908081908ul, 0x080808190808192bul, 0x0808081908082b19ul, 0x0808081908190808ul,
    0x080808190819082bul, 0x0808081908191919ul, 0x0808081908192b08ul, 0x0808081908192b2bul,
    0x08080819082b0819ul, 0x08080819082b1908ul, 0x0808081919080808ul, 0x080808191908082bul,
    0x0808081919081919ul, 0x0808081919082b08ul, 0x0808081919190819ul, 0x0808081919191908ul,
    0x08080819192b0808ul, 0x08080819192b2b08ul, 0x080808192b080819ul, 0x080808192b081908ul,
    0x080808192b190808ul, 0x0808082b08080808ul, 0x0808082b0808082bul, 0x0808082b08081919ul,
    0x0808082b08082b08ul, 0x0808082b08190819ul, 0x0808082b08191908ul, 0x0808082b082b0808ul,
    0x0808082b19080819ul, 0x0808082b19081908ul, 0x0808082b19190808ul, 0x0808082b19191919ul,
    0x0808082b2b080808ul, 0x0808082b2b082b2bul, 0x0808190808080819ul, 0x0808190808081908ul,
    0x080819080808192bul, 0x0808190808082b19ul, 0x0808190808190808ul, 0x080819080819082bul,
    0x0808190808191919ul, 0x0808190808192b08ul, 0x08081908082b0819ul, 0x08081908082b1908ul,
    0x0808190819080808ul, 0x080819081908082bul, 0x0808190819081919ul, 0x0808190819082b08ul,
    0x0808190819190819ul, 0x0808190819191908ul, 0x080819081919192bul, 0x08081908192b0808ul,
    0x080819082b080819ul, 0x080819082b081908ul, 0x080819082b190808ul, 0x0808191908080808ul,
    0x080819190808082bul, 0x0808191908081919ul, 0x0808191908082b08ul, 0x0808191908190819ul,
    0x0808191908191908ul, 0x08081919082b0808ul, 0x0808191919080819ul, 0x0808191919081908ul,
    0x0808191919190808ul, 0x08081919192b0819ul, 0x080819192b080808ul, 0x0808192b08080819ul,
    0x0808192b08081908ul, 0x0808192b08190808ul, 0x0808192b082b192bul, 0x0808192b19080808ul,
    0x0808192b1908082bul, 0x0808192b2b081908ul, 0x08082b0808080808ul, 0x08082b080808082bul,
    0x08082b0808081919ul, 0x08082b0808082b08ul, 0x08082b0808082b2bul, 0x08082b0808190819ul,
    0x08082b0808191908ul, 0x08082b08082b0808ul, 0x08082b08082b1919ul, 0x08082b0819080819ul,
    0x08082b0819081908ul, 0x08082b0819190808ul, 0x08082b0819192b08ul, 0x08082b082b080808ul,
    0x08082b082b2b0808ul, 0x08082b082b2b2b2bul, 0x08082b1908080819ul, 0x08082b1908081908ul,
    0x08082b1908190808ul, 0x08082b1919080808ul, 0x08082b192b080819ul, 0x08082b192b082b19ul,
    0x08082b2b08080808ul, 0x08082b2b082b0808ul, 0x08082b2b082b2b08ul, 0x08082b2b2b19192bul,
    0x08082b2b2b2b0808ul, 0x0819080808080819ul, 0x0819080808081908ul, 0x081908080808192bul,
    0x0819080808082b19ul, 0x0819080808190808ul, 0x081908080819082bul, 0x0819080808191919ul,
    0x0819080808192b08ul, 0x08190808082b0819ul, 0x08190808082b1908ul, 0x0819080819080808ul,
    0x081908081908082bul, 0x0819080819081919ul, 0x0819080819082b08ul, 0x0819080819190819ul,
    0x0819080819191908ul, 0x08190808192b0808ul, 0x08190808192b2b2bul, 0x081908082b080819ul,
    0x081908082b081908ul, 0x081908082b190808ul, 0x0819081908080808ul, 0x081908190808082bul,
    0x0819081908081919ul, 0x0819081908082b08ul, 0x0819081908190819ul, 0x0819081908191908ul,
    0x08190819082b0808ul, 0x0819081919080819ul, 0x0819081919081908ul, 0x0819081919190808ul,
    0x081908192b080808ul, 0x081908192b191908ul, 0x081908192b19192bul, 0x0819082b08080819ul,
    0x0819082b08081908ul, 0x0819082b0808192bul, 0x0819082b08190808ul, 0x0819082b19080808ul,
    0x0819082b192b0808ul, 0x0819190808080808ul, 0x081919080808082bul, 0x0819190808081919ul,
    0x0819190808082b08ul, 0x0819190808190819ul, 0x0819190808191908ul, 0x08191908082b0808ul,
    0x0819190819080819ul, 0x0819190819081908ul, 0x0819190819082b19ul, 0x0819190819190808ul,
    0x08191908192b1908ul, 0x081919082b080808ul, 0x0819191908080819ul, 0x0819191908081908ul,
    0x0819191908190808ul, 0x0819191919080808ul, 0x0819192b08080808ul, 0x0819192b08191908ul,
    0x0819192b19082b19ul, 0x08192b0808080819ul, 0x08192b0808081908ul, 0x08192b0808190808ul,
    0x08192b080819082bul, 0x08192b0819080808ul, 0x08192b0819191908ul, 0x08192b082b08192bul,
    0x08192b1908080808ul, 0x08192b1908081919ul, 0x08192b19192b192bul, 0x08192b2b19190819ul,
    0x08192b2b2b2b2b19ul, 0x082b080808080808ul, 0x082b08080808082bul, 0x082b080808081919ul,
    0x082b080808082b08ul, 0x082b080808082b2bul, 0x082b080808190819ul, 0x082b080808191908ul,
    0x082b0808082b0808ul, 0x082b080819080819ul, 0x082b080819081908ul, 0x082b080819190808ul,
    0x082b08082b080808ul, 0x082b08082b2b0808ul, 0x082b081908080819ul, 0x082b081908081908ul,
    0x082b081908190808ul, 0x082b081919080808ul, 0x082b081919082b08ul, 0x082b0819192b1919ul,
    0x082b082b08080808ul, 0x082b082b082b082bul, 0x082b082b2b080808ul, 0x082b082b2b2b2b08ul,
    0x082b190808080819ul, 0x082b190808081908ul, 0x082b190808190808ul, 0x082b1908082b2b19ul,
    0x082b190819080808ul, 0x082b191908080808ul, 0x082b191919080819ul, 0x082b19191919082bul,
    0x082b19192b192b19ul, 0x082b192b08080819ul, 0x082b192b08192b2bul, 0x082b192b2b2b192bul,
    0x082b2b0808080808ul, 0x082b2b0808082b08ul, 0x082b2b0808082b2bul, 0x082b2b08082b0808ul,
    0x082b2b0819191919ul, 0x082b2b082b082b08ul, 0x082b2b082b2b082bul, 0x082b2b19192b2b08ul,
    0x082b2b192b190808ul, 0x082b2b2b08082b08ul, 0x082b2b2b082b0808ul, 0x082b2b2b2b08082bul,
    0x082b2b2b2b082b08ul, 0x082b2b2b2b082b2bul, 0x1908080808080819ul, 0x1908080808081908ul,
    0x190808080808192bul, 0x1908080808082b19ul, 0x1908080808190808ul, 0x190808080819082bul,
    0x1908080808191919ul, 0x1908080808192b08ul, 0x19080808082b0819ul, 0x19080808082b1908ul,
    0x1908080819080808ul, 0x190808081908082bul, 0x1908080819081919ul, 0x1908080819082b08ul,
    0x1908080819082b2bul, 0x1908080819190819ul, 0x1908080819191908ul, 0x19080808192b0808ul,
    0x19080808192b1919ul, 0x190808082b080819ul, 0x190808082b081908ul, 0x190808082b190808ul,
    0x1908081908080808ul, 0x190808190808082bul, 0x1908081908081919ul, 0x1908081908082b08ul,
    0x1908081908190819ul, 0x1908081908191908ul, 0x19080819082b0808ul, 0x1908081919080819ul,
    0x1908081919081908ul, 0x1908081919190808ul, 0x190808192b080808ul, 0x190808192b081919ul,
    0x190808192b2b082bul, 0x1908082b08080819ul, 0x1908082b08081908ul, 0x1908082b08190808ul,
    0x1908082b0819082bul, 0x1908082b082b2b19ul, 0x1908082b19080808ul, 0x1908190808080808ul,
    0x190819080808082bul, 0x1908190808081919ul, 0x1908190808082b08ul, 0x1908190808190819ul,
    0x1908190808191908ul, 0x1908190808192b19ul, 0x19081908082b0808ul, 0x1908190819080819ul,
    0x1908190819081908ul, 0x1908190819190808ul, 0x190819082b080808ul, 0x190819082b191908ul,
    0x1908191908080819ul, 0x1908191908081908ul, 0x1908191908190808ul, 0x19081919082b1908ul,
    0x1908191919080808ul, 0x190819192b192b2bul, 0x1908192b08080808ul, 0x1908192b08082b2bul,
    0x1908192b19081908ul, 0x1908192b19190808ul, 0x19082b0808080819ul, 0x19082b0808081908ul,
    0x19082b0808190808ul, 0x19082b0819080808ul, 0x19082b0819081919ul, 0x19082b0819191908ul,
    0x19082b08192b082bul, 0x19082b1908080808ul, 0x19082b1908190819ul, 0x19082b1919081908ul,
    0x19082b1919190808ul, 0x19082b19192b2b19ul, 0x19082b2b08081908ul, 0x1919080808080808ul,
    0x191908080808082bul, 0x1919080808081919ul, 0x1919080808082b08ul, 0x1919080808190819ul,
    0x1919080808191908ul, 0x19190808082b0808ul, 0x19190808082b2b08ul, 0x1919080819080819ul,
    0x1919080819081908ul, 0x1919080819190808ul, 0x191908082b080808ul, 0x1919081908080819ul,
    0x1919081908081908ul, 0x1919081908190808ul, 0x1919081908191919ul, 0x1919081919080808ul,
    0x191908191908082bul, 0x1919082b08080808ul, 0x1919082b19081908ul, 0x1919082b2b2b2b2bul,
    0x1919190808080819ul, 0x1919190808081908ul, 0x1919190808190808ul, 0x19191908082b0819ul,
    0x1919190819080808ul, 0x19191908192b0808ul, 0x191919082b080819ul, 0x191919082b2b0819ul,
    0x1919191908080808ul, 0x1919191908082b08ul, 0x191919192b080808ul, 0x191919192b082b08ul,
    0x1919192b082b0819ul, 0x1919192b192b2b08ul, 0x1919192b2b2b0819ul, 0x19192b0808080808ul,
    0x19192b0808191908ul, 0x19192b0819080819ul, 0x19192b0819190808ul, 0x19192b082b192b19ul,
    0x19192b1908192b2bul, 0x19192b1919080808ul, 0x19192b191908082bul, 0x19192b2b2b081919ul,
    0x192b080808080819ul, 0x192b080808081908ul, 0x192b080808190808ul, 0x192b080819080808ul,
    0x192b080819191908ul, 0x192b0808192b082bul, 0x192b08082b08192bul, 0x192b08082b2b2b19ul,
    0x192b081908080808ul, 0x192b082b082b1908ul, 0x192b082b19082b2bul, 0x192b082b2b19082bul,
    0x192b190808080808ul, 0x192b19080819192bul, 0x192b191908190808ul, 0x192b191919080808ul,
    0x192b191919081919ul, 0x192b19192b2b1908ul, 0x192b2b0808080819ul, 0x192b2b08192b2b2bul,
    0x192b2b19082b1919ul, 0x192b2b2b0808192bul, 0x192b2b2b19191908ul, 0x192b2b2b192b082bul,
    0x2b08080808080808ul, 0x2b0808080808082bul, 0x2b08080808081919ul, 0x2b08080808082b08ul,
    0x2b08080808190819ul, 0x2b08080808191908ul, 0x2b080808082b0808ul, 0x2b080808082b2b2bul,
    0x2b08080819080819ul, 0x2b08080819081908ul, 0x2b08080819190808ul, 0x2b0808082b080808ul,
    0x2b0808082b08082bul, 0x2b0808082b2b2b08ul, 0x2b0808082b2b2b2bul, 0x2b08081908080819ul,
    0x2b08081908081908ul, 0x2b0808190808192bul, 0x2b08081908190808ul, 0x2b08081919080808ul,
    0x2b08081919190819ul, 0x2b08081919192b19ul, 0x2b08082b08080808ul, 0x2b08082b082b0808ul,
    0x2b08082b2b080808ul, 0x2b08082b2b08082bul, 0x2b08082b2b2b0808ul, 0x2b08082b2b2b2b08ul,
    0x2b08190808080819ul, 0x2b08190808081908ul, 0x2b08190808190808ul, 0x2b0819080819082bul,
    0x2b08190808191919ul, 0x2b08190819080808ul, 0x2b081908192b0808ul, 0x2b0819082b082b19ul,
    0x2b08191908080808ul, 0x2b08191919081908ul, 0x2b0819192b2b1919ul, 0x2b08192b08192b08ul,
    0x2b08192b192b2b2bul, 0x2b082b0808080808ul, 0x2b082b0808082b08ul, 0x2b082b08082b1919ul,
    0x2b082b0819192b2bul, 0x2b082b082b080808ul, 0x2b082b082b08082bul, 0x2b082b082b2b2b08ul,
    0x2b082b190808192bul, 0x2b082b2b082b082bul, 0x2b082b2b2b080808ul, 0x2b082b2b2b082b08ul,
    0x2b082b2b2b19192bul, 0x2b082b2b2b2b2b08ul, 0x2b19080808080819ul, 0x2b19080808081908ul,
    0x2b19080808190808ul, 0x2b19080819080808ul, 0x2b1908081919192bul, 0x2b1908082b081908ul,
    0x2b19081908080808ul, 0x2b190819082b082bul, 0x2b190819192b1908ul, 0x2b19082b1919192bul,
    0x2b19082b2b082b19ul, 0x2b19190808080808ul, 0x2b19190808081919ul, 0x2b19190819081908ul,
    0x2b19190819190808ul, 0x2b19190819192b08ul, 0x2b191919082b2b19ul, 0x2b1919192b190808ul,
    0x2b1919192b19082bul, 0x2b19192b19080819ul, 0x2b192b0819190819ul, 0x2b192b082b2b192bul,
    0x2b192b1919082b19ul, 0x2b192b2b08191919ul, 0x2b192b2b192b0808ul, 0x2b2b080808080808ul,
    0x2b2b08080808082bul, 0x2b2b080808082b08ul, 0x2b2b080808082b2bul, 0x2b2b0808082b0808ul,
    0x2b2b0808082b2b2bul, 0x2b2b08082b2b0808ul, 0x2b2b081919190819ul, 0x2b2b081919192b19ul,
    0x2b2b08192b2b192bul, 0x2b2b082b08080808ul, 0x2b2b082b0808082bul, 0x2b2b082b08082b08ul,
    0x2b2b082b082b2b2bul, 0x2b2b082b2b080808ul, 0x2b2b082b2b2b0808ul, 0x2b2b190819080808ul,
    0x2b2b19082b191919ul, 0x2b2b192b192b1919ul, 0x2b2b192b2b192b08ul, 0x2b2b2b0808082b2bul,
    0x2b2b2b08082b0808ul, 0x2b2b2b08082b082bul, 0x2b2b2b08082b2b08ul, 0x2b2b2b082b2b0808ul,
    0x2b2b2b082b2b2b08ul, 0x2b2b2b1908081908ul, 0x2b2b2b192b081908ul, 0x2b2b2b192b08192bul,
    0x2b2b2b2b082b2b08ul, 0x2b2b2b2b082b2b2bul, 0x2b2b2b2b2b190819ul, 0x2b2b2b2b2b2b2b2bul,
};

// The 8 sign bits of a 7-bit index (ggml's ksigns_iq2xs: the 8th is the parity).
inline uint iq_signs(uint i) { return i | ((popcount(i) & 1) << 7); }

// IQ2_XS: 74 bytes per 256: half d, ushort qs[32] (9-bit grid index, 7-bit sign index), scales[8].
struct t_iq2_xs {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 74 * (c / 8);
        const int ib = c % 8;
        const float d = f16_at(b);
        device const ushort * qs = (device const ushort *) (b + 2) + 4 * ib;
        const uchar s = b[66 + ib];
        for (int l = 0; l < 4; l++) {
            const float db = d * (0.5f + float(l < 2 ? (s & 15) : (s >> 4))) * 0.25f;
            const ushort q = qs[l];
            const ulong g = iq2xs_grid[q & 511];
            const uint sg = iq_signs(q >> 9);
            for (int k = 0; k < 8; k++) {
                const float v = db * float(uchar(g >> (8 * k)));
                o[8 * l + k] = (sg >> k) & 1 ? -v : v;
            }
        }
    }
};

constant ulong iq2xxs_grid[256] = {
    0x0808080808080808ul, 0x080808080808082bul, 0x0808080808081919ul, 0x0808080808082b08ul,
    0x0808080808082b2bul, 0x0808080808190819ul, 0x0808080808191908ul, 0x08080808082b0808ul,
    0x08080808082b082bul, 0x08080808082b2b08ul, 0x08080808082b2b2bul, 0x0808080819080819ul,
    0x0808080819081908ul, 0x0808080819190808ul, 0x0808080819192b08ul, 0x08080808192b0819ul,
    0x08080808192b1908ul, 0x080808082b080808ul, 0x080808082b08082bul, 0x080808082b082b2bul,
    0x080808082b2b082bul, 0x0808081908080819ul, 0x0808081908081908ul, 0x0808081908190808ul,
    0x0808081908191919ul, 0x0808081919080808ul, 0x080808192b081908ul, 0x080808192b192b08ul,
    0x0808082b08080808ul, 0x0808082b0808082bul, 0x0808082b082b082bul, 0x0808082b2b08082bul,
    0x0808190808080819ul, 0x0808190808081908ul, 0x0808190808190808ul, 0x08081908082b0819ul,
    0x08081908082b1908ul, 0x0808190819080808ul, 0x080819081908082bul, 0x0808190819082b08ul,
    0x08081908192b0808ul, 0x080819082b080819ul, 0x080819082b081908ul, 0x080819082b190808ul,
    0x080819082b2b1908ul, 0x0808191908080808ul, 0x080819190808082bul, 0x0808191908082b08ul,
    0x08081919082b0808ul, 0x080819191908192bul, 0x08081919192b2b19ul, 0x080819192b080808ul,
    0x080819192b190819ul, 0x0808192b08082b19ul, 0x0808192b08190808ul, 0x0808192b19080808ul,
    0x0808192b2b081908ul, 0x0808192b2b2b1908ul, 0x08082b0808080808ul, 0x08082b0808081919ul,
    0x08082b0808082b08ul, 0x08082b0808191908ul, 0x08082b08082b2b08ul, 0x08082b0819080819ul,
    0x08082b0819081908ul, 0x08082b0819190808ul, 0x08082b081919082bul, 0x08082b082b082b08ul,
    0x08082b1908081908ul, 0x08082b1919080808ul, 0x08082b2b0808082bul, 0x08082b2b08191908ul,
    0x0819080808080819ul, 0x0819080808081908ul, 0x0819080808190808ul, 0x08190808082b0819ul,
    0x0819080819080808ul, 0x08190808192b0808ul, 0x081908082b081908ul, 0x081908082b190808ul,
    0x081908082b191919ul, 0x0819081908080808ul, 0x0819081908082b08ul, 0x08190819082b0808ul,
    0x0819081919190808ul, 0x0819081919192b2bul, 0x081908192b080808ul, 0x0819082b082b1908ul,
    0x0819082b19081919ul, 0x0819190808080808ul, 0x0819190808082b08ul, 0x08191908082b0808ul,
    0x08191908082b1919ul, 0x0819190819082b19ul, 0x081919082b080808ul, 0x0819191908192b08ul,
    0x08191919192b082bul, 0x0819192b08080808ul, 0x0819192b0819192bul, 0x08192b0808080819ul,
    0x08192b0808081908ul, 0x08192b0808190808ul, 0x08192b0819080808ul, 0x08192b082b080819ul,
    0x08192b1908080808ul, 0x08192b1908081919ul, 0x08192b192b2b0808ul, 0x08192b2b19190819ul,
    0x082b080808080808ul, 0x082b08080808082bul, 0x082b080808082b2bul, 0x082b080819081908ul,
    0x082b0808192b0819ul, 0x082b08082b080808ul, 0x082b08082b08082bul, 0x082b0819082b2b19ul,
    0x082b081919082b08ul, 0x082b082b08080808ul, 0x082b082b0808082bul, 0x082b190808080819ul,
    0x082b190808081908ul, 0x082b190808190808ul, 0x082b190819080808ul, 0x082b19081919192bul,
    0x082b191908080808ul, 0x082b191919080819ul, 0x082b1919192b1908ul, 0x082b192b2b190808ul,
    0x082b2b0808082b08ul, 0x082b2b08082b0808ul, 0x082b2b082b191908ul, 0x082b2b2b19081908ul,
    0x1908080808080819ul, 0x1908080808081908ul, 0x1908080808190808ul, 0x1908080808192b08ul,
    0x19080808082b0819ul, 0x19080808082b1908ul, 0x1908080819080808ul, 0x1908080819082b08ul,
    0x190808081919192bul, 0x19080808192b0808ul, 0x190808082b080819ul, 0x190808082b081908ul,
    0x190808082b190808ul, 0x1908081908080808ul, 0x19080819082b0808ul, 0x19080819192b0819ul,
    0x190808192b080808ul, 0x190808192b081919ul, 0x1908082b08080819ul, 0x1908082b08190808ul,
    0x1908082b19082b08ul, 0x1908082b1919192bul, 0x1908082b192b2b08ul, 0x1908190808080808ul,
    0x1908190808082b08ul, 0x19081908082b0808ul, 0x190819082b080808ul, 0x190819082b192b19ul,
    0x190819190819082bul, 0x19081919082b1908ul, 0x1908192b08080808ul, 0x19082b0808080819ul,
    0x19082b0808081908ul, 0x19082b0808190808ul, 0x19082b0819080808ul, 0x19082b0819081919ul,
    0x19082b1908080808ul, 0x19082b1919192b08ul, 0x19082b19192b0819ul, 0x19082b192b08082bul,
    0x19082b2b19081919ul, 0x19082b2b2b190808ul, 0x1919080808080808ul, 0x1919080808082b08ul,
    0x1919080808190819ul, 0x1919080808192b19ul, 0x19190808082b0808ul, 0x191908082b080808ul,
    0x191908082b082b08ul, 0x1919081908081908ul, 0x191908191908082bul, 0x191908192b2b1908ul,
    0x1919082b2b190819ul, 0x191919082b190808ul, 0x191919082b19082bul, 0x1919191908082b2bul,
    0x1919192b08080819ul, 0x1919192b19191908ul, 0x19192b0808080808ul, 0x19192b0808190819ul,
    0x19192b0808192b19ul, 0x19192b08192b1908ul, 0x19192b1919080808ul, 0x19192b2b08082b08ul,
    0x192b080808081908ul, 0x192b080808190808ul, 0x192b080819080808ul, 0x192b0808192b2b08ul,
    0x192b081908080808ul, 0x192b081919191919ul, 0x192b082b08192b08ul, 0x192b082b192b0808ul,
    0x192b190808080808ul, 0x192b190808081919ul, 0x192b191908190808ul, 0x192b19190819082bul,
    0x192b19192b081908ul, 0x192b2b081908082bul, 0x2b08080808080808ul, 0x2b0808080808082bul,
    0x2b08080808082b2bul, 0x2b08080819080819ul, 0x2b0808082b08082bul, 0x2b08081908081908ul,
    0x2b08081908192b08ul, 0x2b08081919080808ul, 0x2b08082b08190819ul, 0x2b08190808080819ul,
    0x2b08190808081908ul, 0x2b08190808190808ul, 0x2b08190808191919ul, 0x2b08190819080808ul,
    0x2b081908192b0808ul, 0x2b08191908080808ul, 0x2b0819191908192bul, 0x2b0819192b191908ul,
    0x2b08192b08082b19ul, 0x2b08192b19080808ul, 0x2b08192b192b0808ul, 0x2b082b080808082bul,
    0x2b082b1908081908ul, 0x2b082b2b08190819ul, 0x2b19080808081908ul, 0x2b19080808190808ul,
    0x2b190808082b1908ul, 0x2b19080819080808ul, 0x2b1908082b2b0819ul, 0x2b1908190819192bul,
    0x2b1908192b080808ul, 0x2b19082b19081919ul, 0x2b19190808080808ul, 0x2b191908082b082bul,
    0x2b19190819081908ul, 0x2b19191919190819ul, 0x2b192b082b080819ul, 0x2b192b19082b0808ul,
    0x2b2b08080808082bul, 0x2b2b080819190808ul, 0x2b2b08082b081919ul, 0x2b2b081908082b19ul,
    0x2b2b082b08080808ul, 0x2b2b190808192b08ul, 0x2b2b2b0819190808ul, 0x2b2b2b1908081908ul,
};

constant uint iq3xxs_grid[256] = {
    0x04040404u, 0x04040414u, 0x04040424u, 0x04040c0cu,
    0x04040c1cu, 0x04040c3eu, 0x04041404u, 0x04041414u,
    0x04041c0cu, 0x04042414u, 0x04043e1cu, 0x04043e2cu,
    0x040c040cu, 0x040c041cu, 0x040c0c04u, 0x040c0c14u,
    0x040c140cu, 0x040c142cu, 0x040c1c04u, 0x040c1c14u,
    0x040c240cu, 0x040c2c24u, 0x040c3e04u, 0x04140404u,
    0x04140414u, 0x04140424u, 0x04140c0cu, 0x04141404u,
    0x04141414u, 0x04141c0cu, 0x04141c1cu, 0x04141c3eu,
    0x04142c0cu, 0x04142c3eu, 0x04143e2cu, 0x041c040cu,
    0x041c043eu, 0x041c0c04u, 0x041c0c14u, 0x041c142cu,
    0x041c3e04u, 0x04240c1cu, 0x04241c3eu, 0x04242424u,
    0x04242c3eu, 0x04243e1cu, 0x04243e2cu, 0x042c040cu,
    0x042c043eu, 0x042c1c14u, 0x042c2c14u, 0x04341c2cu,
    0x04343424u, 0x043e0c04u, 0x043e0c24u, 0x043e0c34u,
    0x043e241cu, 0x043e340cu, 0x0c04040cu, 0x0c04041cu,
    0x0c040c04u, 0x0c040c14u, 0x0c04140cu, 0x0c04141cu,
    0x0c041c04u, 0x0c041c14u, 0x0c041c24u, 0x0c04243eu,
    0x0c042c04u, 0x0c0c0404u, 0x0c0c0414u, 0x0c0c0c0cu,
    0x0c0c1404u, 0x0c0c1414u, 0x0c14040cu, 0x0c14041cu,
    0x0c140c04u, 0x0c140c14u, 0x0c14140cu, 0x0c141c04u,
    0x0c143e14u, 0x0c1c0404u, 0x0c1c0414u, 0x0c1c1404u,
    0x0c1c1c0cu, 0x0c1c2434u, 0x0c1c3434u, 0x0c24040cu,
    0x0c24042cu, 0x0c242c04u, 0x0c2c1404u, 0x0c2c1424u,
    0x0c2c2434u, 0x0c2c3e0cu, 0x0c34042cu, 0x0c3e1414u,
    0x0c3e2404u, 0x14040404u, 0x14040414u, 0x14040c0cu,
    0x14040c1cu, 0x14041404u, 0x14041414u, 0x14041434u,
    0x14041c0cu, 0x14042414u, 0x140c040cu, 0x140c041cu,
    0x140c042cu, 0x140c0c04u, 0x140c0c14u, 0x140c140cu,
    0x140c1c04u, 0x140c341cu, 0x140c343eu, 0x140c3e04u,
    0x14140404u, 0x14140414u, 0x14140c0cu, 0x14140c3eu,
    0x14141404u, 0x14141414u, 0x14141c3eu, 0x14142404u,
    0x14142c2cu, 0x141c040cu, 0x141c0c04u, 0x141c0c24u,
    0x141c3e04u, 0x141c3e24u, 0x14241c2cu, 0x14242c1cu,
    0x142c041cu, 0x142c143eu, 0x142c240cu, 0x142c3e24u,
    0x143e040cu, 0x143e041cu, 0x143e0c34u, 0x143e242cu,
    0x1c04040cu, 0x1c040c04u, 0x1c040c14u, 0x1c04140cu,
    0x1c04141cu, 0x1c042c04u, 0x1c04342cu, 0x1c043e14u,
    0x1c0c0404u, 0x1c0c0414u, 0x1c0c1404u, 0x1c0c1c0cu,
    0x1c0c2424u, 0x1c0c2434u, 0x1c14040cu, 0x1c14041cu,
    0x1c140c04u, 0x1c14142cu, 0x1c142c14u, 0x1c143e14u,
    0x1c1c0c0cu, 0x1c1c1c1cu, 0x1c241c04u, 0x1c24243eu,
    0x1c243e14u, 0x1c2c0404u, 0x1c2c0434u, 0x1c2c1414u,
    0x1c2c2c2cu, 0x1c340c24u, 0x1c341c34u, 0x1c34341cu,
    0x1c3e1c1cu, 0x1c3e3404u, 0x24040424u, 0x24040c3eu,
    0x24041c2cu, 0x24041c3eu, 0x24042c1cu, 0x24042c3eu,
    0x240c3e24u, 0x24141404u, 0x24141c3eu, 0x24142404u,
    0x24143404u, 0x24143434u, 0x241c043eu, 0x241c242cu,
    0x24240424u, 0x24242c0cu, 0x24243424u, 0x242c142cu,
    0x242c241cu, 0x242c3e04u, 0x243e042cu, 0x243e0c04u,
    0x243e0c14u, 0x243e1c04u, 0x2c040c14u, 0x2c04240cu,
    0x2c043e04u, 0x2c0c0404u, 0x2c0c0434u, 0x2c0c1434u,
    0x2c0c2c2cu, 0x2c140c24u, 0x2c141c14u, 0x2c143e14u,
    0x2c1c0414u, 0x2c1c2c1cu, 0x2c240c04u, 0x2c24141cu,
    0x2c24143eu, 0x2c243e14u, 0x2c2c0414u, 0x2c2c1c0cu,
    0x2c342c04u, 0x2c3e1424u, 0x2c3e2414u, 0x34041424u,
    0x34042424u, 0x34042434u, 0x34043424u, 0x340c140cu,
    0x340c340cu, 0x34140c3eu, 0x34143424u, 0x341c1c04u,
    0x341c1c34u, 0x34242424u, 0x342c042cu, 0x342c2c14u,
    0x34341c1cu, 0x343e041cu, 0x343e140cu, 0x3e04041cu,
    0x3e04042cu, 0x3e04043eu, 0x3e040c04u, 0x3e041c14u,
    0x3e042c14u, 0x3e0c1434u, 0x3e0c2404u, 0x3e140c14u,
    0x3e14242cu, 0x3e142c14u, 0x3e1c0404u, 0x3e1c0c2cu,
    0x3e1c1c1cu, 0x3e1c3404u, 0x3e24140cu, 0x3e24240cu,
    0x3e2c0404u, 0x3e2c0414u, 0x3e2c1424u, 0x3e341c04u,
};

constant char kvalues_iq4nl[16] = { -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113 };

// A little-endian uint32 at any byte offset (the i-quant blocks do not keep them 4-byte aligned).
inline uint u32_at(device const uchar * p) { return uint(p[0]) | uint(p[1]) << 8 | uint(p[2]) << 16 | uint(p[3]) << 24; }

// 8 values of a grid entry g (8 bytes, low first) with sign bits sg, times db.
inline void iq_grid8(ulong g, uint sg, float db, thread float * o) {
    for (int k = 0; k < 8; k++) {
        const float v = db * float(uchar(g >> (8 * k)));
        o[k] = (sg >> k) & 1 ? -v : v;
    }
}

// IQ2_XXS: 66 bytes per 256: half d, then per 32 values 4 grid indices (bytes) and a uint32 of
// 4 x 7 sign bits and a 4-bit scale: value = d*(0.5+s)/4 * grid * sign.
struct t_iq2_xxs {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 66 * (c / 8);
        device const uchar * g = b + 2 + 8 * (c % 8);
        const uint aux = u32_at(g + 4);
        const float db = f16_at(b) * (0.5f + float(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++) iq_grid8(iq2xxs_grid[g[l]], iq_signs((aux >> (7 * l)) & 127), db, o + 8 * l);
    }
};
// IQ3_XXS: 98 bytes per 256: half d, qs[64] (two 4-value grid indices per 8 values), then per 32
// values a uint32 of 4 x 7 sign bits and a 4-bit scale: value = d*(0.5+s)/2 * grid * sign.
struct t_iq3_xxs {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 98 * (c / 8);
        const uint ib = c % 8;
        device const uchar * qs = b + 2 + 8 * ib;
        const uint aux = u32_at(b + 66 + 4 * ib);
        const float db = f16_at(b) * (0.5f + float(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++) {
            const ulong g = ulong(iq3xxs_grid[qs[2 * l]]) | ulong(iq3xxs_grid[qs[2 * l + 1]]) << 32;
            iq_grid8(g, iq_signs((aux >> (7 * l)) & 127), db, o + 8 * l);
        }
    }
};
// IQ4_XS: 136 bytes per 256: half d, ushort scales_h, scales_l[4], qs[128] (4-bit indices into
// kvalues_iq4nl, low nibbles first 16 values of each 32): value = d*(scale-32)*kvalues[q].
struct t_iq4_xs {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 136 * (c / 8);
        const uint ib = c % 8;
        const uint h = uint(b[2]) | uint(b[3]) << 8;
        const int ls = int(((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (((h >> (2 * ib)) & 3) << 4)) - 32;
        const float dl = f16_at(b) * float(ls);
        device const uchar * qs = b + 8 + 16 * ib;
        for (int j = 0; j < 16; j++) {
            o[j]      = dl * float(kvalues_iq4nl[qs[j] & 15]);
            o[j + 16] = dl * float(kvalues_iq4nl[qs[j] >> 4]);
        }
    }
};

template <typename T>
inline void mv_impl(constant mv_args & a, device const uchar * w, device const float * x, device float * y,
                    device const int * ids, device const int * slots, uint3 tgpig, ushort tiisg, ushort sgitg) {
    const uint first = ((tgpig.x + a.tg_base) * NSG + sgitg) * NR;
    device const uchar * m = a.use_slots ? w + ulong(slots[ids[tgpig.y]]) * a.slot_bytes + a.w_off
                                         : w + ulong(tgpig.y) * a.mat_bytes;
    device const float * xv = x + ulong(tgpig.y) * a.x_stride;
    const uint nchunks = a.ncols / 32;
    float sum[4] = { 0.f, 0.f, 0.f, 0.f };
    float v[32];
    for (int r = 0; r < NR; r++) {
        const uint row = first + r;
        if (row >= a.nrows) break;
        device const uchar * wr = m + ulong(row) * a.row_bytes;
        for (uint c = tiisg; c < nchunks; c += 32) {
            T::deq(wr, c, v);
            device const float4 * x4 = (device const float4 *) (xv + 32 * c);
            float s = 0.f;
            for (int i = 0; i < 8; i++) s += dot(float4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]), x4[i]);
            sum[r] += s;
        }
    }
    for (int r = 0; r < NR; r++) {
        const uint row = first + r;
        if (row >= a.nrows) break;            // uniform across the simdgroup
        const float t = simd_sum(sum[r]);
        if (tiisg == 0) y[ulong(tgpig.y) * a.y_stride + row] = t;
    }
}

#define MV_PARAMS constant mv_args & a [[buffer(0)]], device const uchar * w [[buffer(1)]], \
    device const float * x [[buffer(2)]], device float * y [[buffer(3)]], device const int * ids [[buffer(4)]], \
    device const int * slots [[buffer(5)]], uint3 tgpig [[threadgroup_position_in_grid]], \
    ushort tiisg [[thread_index_in_simdgroup]], ushort sgitg [[simdgroup_index_in_threadgroup]]
#define MV_ARGS a, w, x, y, ids, slots, tgpig, tiisg, sgitg

kernel void kernel_mv_f32(MV_PARAMS)     { mv_impl<t_f32>(MV_ARGS); }
kernel void kernel_mv_f16(MV_PARAMS)     { mv_impl<t_f16>(MV_ARGS); }
kernel void kernel_mv_bf16(MV_PARAMS)    { mv_impl<t_bf16>(MV_ARGS); }
kernel void kernel_mv_q8_0(MV_PARAMS)    { mv_impl<t_q8_0>(MV_ARGS); }
kernel void kernel_mv_q4_0(MV_PARAMS)    { mv_impl<t_q4_0>(MV_ARGS); }
kernel void kernel_mv_q4_K(MV_PARAMS)    { mv_impl<t_q4_K>(MV_ARGS); }
kernel void kernel_mv_q5_K(MV_PARAMS)    { mv_impl<t_q5_K>(MV_ARGS); }
kernel void kernel_mv_q6_K(MV_PARAMS)    { mv_impl<t_q6_K>(MV_ARGS); }
kernel void kernel_mv_q2_K(MV_PARAMS)    { mv_impl<t_q2_K>(MV_ARGS); }
kernel void kernel_mv_q3_K(MV_PARAMS)    { mv_impl<t_q3_K>(MV_ARGS); }
kernel void kernel_mv_iq2_xs(MV_PARAMS)  { mv_impl<t_iq2_xs>(MV_ARGS); }
kernel void kernel_mv_iq2_xxs(MV_PARAMS) { mv_impl<t_iq2_xxs>(MV_ARGS); }
kernel void kernel_mv_iq3_xxs(MV_PARAMS) { mv_impl<t_iq3_xxs>(MV_ARGS); }
kernel void kernel_mv_iq4_xs(MV_PARAMS)  { mv_impl<t_iq4_xs>(MV_ARGS); }

// Row lookup (token embeddings): out[t] = dequantized row ids[t]; one
// simdgroup per row, a lane per chunk.
struct rows_args {
    uint  ncols;
    ulong row_bytes;
};

template <typename T>
inline void rows_impl(constant rows_args & a, device const uchar * w, device const int * ids, device float * out,
                      uint tgpig, ushort tiisg) {
    device const uchar * wr = w + ulong(ids[tgpig]) * a.row_bytes;
    float v[32];
    for (uint c = tiisg; c < a.ncols / 32; c += 32) {
        T::deq(wr, c, v);
        for (int i = 0; i < 32; i++) out[ulong(tgpig) * a.ncols + 32 * c + i] = v[i];
    }
}

#define ROWS_PARAMS constant rows_args & a [[buffer(0)]], device const uchar * w [[buffer(1)]], \
    device const int * ids [[buffer(2)]], device float * out [[buffer(3)]], \
    uint tgpig [[threadgroup_position_in_grid]], ushort tiisg [[thread_index_in_simdgroup]]
#define ROWS_ARGS a, w, ids, out, tgpig, tiisg

kernel void kernel_get_rows_f32(ROWS_PARAMS)     { rows_impl<t_f32>(ROWS_ARGS); }
kernel void kernel_get_rows_f16(ROWS_PARAMS)     { rows_impl<t_f16>(ROWS_ARGS); }
kernel void kernel_get_rows_bf16(ROWS_PARAMS)    { rows_impl<t_bf16>(ROWS_ARGS); }
kernel void kernel_get_rows_q8_0(ROWS_PARAMS)    { rows_impl<t_q8_0>(ROWS_ARGS); }
kernel void kernel_get_rows_q4_0(ROWS_PARAMS)    { rows_impl<t_q4_0>(ROWS_ARGS); }
kernel void kernel_get_rows_q4_K(ROWS_PARAMS)    { rows_impl<t_q4_K>(ROWS_ARGS); }
kernel void kernel_get_rows_q5_K(ROWS_PARAMS)    { rows_impl<t_q5_K>(ROWS_ARGS); }
kernel void kernel_get_rows_q6_K(ROWS_PARAMS)    { rows_impl<t_q6_K>(ROWS_ARGS); }
kernel void kernel_get_rows_q2_K(ROWS_PARAMS)    { rows_impl<t_q2_K>(ROWS_ARGS); }
kernel void kernel_get_rows_q3_K(ROWS_PARAMS)    { rows_impl<t_q3_K>(ROWS_ARGS); }
kernel void kernel_get_rows_iq2_xs(ROWS_PARAMS)  { rows_impl<t_iq2_xs>(ROWS_ARGS); }
kernel void kernel_get_rows_iq2_xxs(ROWS_PARAMS) { rows_impl<t_iq2_xxs>(ROWS_ARGS); }
kernel void kernel_get_rows_iq3_xxs(ROWS_PARAMS) { rows_impl<t_iq3_xxs>(ROWS_ARGS); }
kernel void kernel_get_rows_iq4_xs(ROWS_PARAMS)  { rows_impl<t_iq4_xs>(ROWS_ARGS); }
