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
                       // 2: located: loc = ((ulong *) slots)[ids[y] * slot_bytes + w_off]; matrix y is
                       //    base (loc >> 56) + (loc & 2^56-1), base 0 being w and 1..4 p1..p4
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
                    device const int * ids, device const int * slots,
                    device const uchar * p1, device const uchar * p2, device const uchar * p3, device const uchar * p4,
                    uint3 tgpig, ushort tiisg, ushort sgitg) {
    const uint first = ((tgpig.x + a.tg_base) * NSG + sgitg) * NR;
    device const uchar * m;
    if (a.use_slots == 2) {
        // An expert where its provider put it (the arena, in up to four
        // buffers), or in a slot the host copied it into (w).
        const ulong loc = ((device const ulong *) slots)[ulong(ids[tgpig.y]) * a.slot_bytes + a.w_off];
        const uint part = uint(loc >> 56);
        device const uchar * base = part == 1 ? p1 : part == 2 ? p2 : part == 3 ? p3 : part == 4 ? p4 : w;
        m = base + (loc & 0x00ffffffffffffffUL);
    } else if (a.use_slots == 1) {
        m = w + ulong(slots[ids[tgpig.y]]) * a.slot_bytes + a.w_off;
    } else {
        m = w + ulong(tgpig.y) * a.mat_bytes;
    }
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
#define MV_ARGS a, w, x, y, ids, slots, w, w, w, w, tgpig, tiisg, sgitg
// kernel_mvl_*: the located mode (use_slots 2), with the four other bases.
#define MVL_PARAMS MV_PARAMS, device const uchar * p1 [[buffer(6)]], device const uchar * p2 [[buffer(7)]], \
    device const uchar * p3 [[buffer(8)]], device const uchar * p4 [[buffer(9)]]
#define MVL_ARGS a, w, x, y, ids, slots, p1, p2, p3, p4, tgpig, tiisg, sgitg

kernel void kernel_mv_f32(MV_PARAMS)     { mv_impl<t_f32>(MV_ARGS); }
kernel void kernel_mvl_f32(MVL_PARAMS) { mv_impl<t_f32>(MVL_ARGS); }
kernel void kernel_mv_f16(MV_PARAMS)     { mv_impl<t_f16>(MV_ARGS); }
kernel void kernel_mvl_f16(MVL_PARAMS) { mv_impl<t_f16>(MVL_ARGS); }
kernel void kernel_mv_bf16(MV_PARAMS)    { mv_impl<t_bf16>(MV_ARGS); }
kernel void kernel_mvl_bf16(MVL_PARAMS) { mv_impl<t_bf16>(MVL_ARGS); }
kernel void kernel_mv_q8_0(MV_PARAMS)    { mv_impl<t_q8_0>(MV_ARGS); }
kernel void kernel_mvl_q8_0(MVL_PARAMS) { mv_impl<t_q8_0>(MVL_ARGS); }
kernel void kernel_mv_q4_0(MV_PARAMS)    { mv_impl<t_q4_0>(MV_ARGS); }
kernel void kernel_mvl_q4_0(MVL_PARAMS) { mv_impl<t_q4_0>(MVL_ARGS); }
kernel void kernel_mv_q4_K(MV_PARAMS)    { mv_impl<t_q4_K>(MV_ARGS); }
kernel void kernel_mvl_q4_K(MVL_PARAMS) { mv_impl<t_q4_K>(MVL_ARGS); }
kernel void kernel_mv_q5_K(MV_PARAMS)    { mv_impl<t_q5_K>(MV_ARGS); }
kernel void kernel_mvl_q5_K(MVL_PARAMS) { mv_impl<t_q5_K>(MVL_ARGS); }
kernel void kernel_mv_q6_K(MV_PARAMS)    { mv_impl<t_q6_K>(MV_ARGS); }
kernel void kernel_mvl_q6_K(MVL_PARAMS) { mv_impl<t_q6_K>(MVL_ARGS); }
kernel void kernel_mv_q2_K(MV_PARAMS)    { mv_impl<t_q2_K>(MV_ARGS); }
kernel void kernel_mvl_q2_K(MVL_PARAMS) { mv_impl<t_q2_K>(MVL_ARGS); }
kernel void kernel_mv_q3_K(MV_PARAMS)    { mv_impl<t_q3_K>(MV_ARGS); }
kernel void kernel_mvl_q3_K(MVL_PARAMS) { mv_impl<t_q3_K>(MVL_ARGS); }
kernel void kernel_mv_iq2_xs(MV_PARAMS)  { mv_impl<t_iq2_xs>(MV_ARGS); }
kernel void kernel_mvl_iq2_xs(MVL_PARAMS) { mv_impl<t_iq2_xs>(MVL_ARGS); }
kernel void kernel_mv_iq2_xxs(MV_PARAMS) { mv_impl<t_iq2_xxs>(MV_ARGS); }
kernel void kernel_mvl_iq2_xxs(MVL_PARAMS) { mv_impl<t_iq2_xxs>(MVL_ARGS); }
kernel void kernel_mv_iq3_xxs(MV_PARAMS) { mv_impl<t_iq3_xxs>(MV_ARGS); }
kernel void kernel_mvl_iq3_xxs(MVL_PARAMS) { mv_impl<t_iq3_xxs>(MVL_ARGS); }
kernel void kernel_mv_iq4_xs(MV_PARAMS)  { mv_impl<t_iq4_xs>(MV_ARGS); }
kernel void kernel_mvl_iq4_xs(MVL_PARAMS) { mv_impl<t_iq4_xs>(MVL_ARGS); }

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

// Matrix-matrix products for prompts (prefill): Y[t] = W·X[t] for NTOK
// activation rows at once, so each weight block is read and dequantized
// once per 32 rows of X instead of once per row. A threadgroup of 4
// simdgroups owns a tile of 32 weight rows × 32 activation rows; per
// 32-column chunk, lanes 0..31 dequantize one weight row each and lanes
// 32..63 load one activation row each into threadgroup memory, then every
// simdgroup multiplies a 16×16 part of the tile with 8×8 simdgroup
// matrices, accumulating in float. Activation row t is X + ids[t]·x_stride
// when use_ids (the rows routed to one expert), else X + t·x_stride.
struct mm_args {
    uint  ncols;
    uint  nrows;
    ulong row_bytes;
    uint  ntok;
    uint  x_stride;
    uint  y_stride;
    uint  tg_base;     // first threadgroup of this dispatch along x (grid-size guard)
    uint  use_ids;
};

template <typename T>
inline void mm_impl(constant mm_args & a, device const uchar * w, device const float * x, device float * y,
                    device const int * ids, threadgroup float * sh, uint3 tgpig, ushort tiitg, ushort sgitg) {
    threadgroup float * ws = sh;          // [32 weight rows][32 columns]
    threadgroup float * xs = sh + 1024;   // [32 activation rows][32 columns]
    const uint r0 = (tgpig.x + a.tg_base) * 32, t0 = tgpig.y * 32;
    const uint rb = (sgitg / 2) * 16, tb = (sgitg % 2) * 16;   // this simdgroup's part of the tile
    simdgroup_float8x8 acc[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.f);
    float v[32];
    const uint nchunks = a.ncols / 32;
    for (uint c = 0; c < nchunks; c++) {
        if (tiitg < 32) {
            const uint row = r0 + tiitg;
            if (row < a.nrows) {
                T::deq(w + ulong(row) * a.row_bytes, c, v);
            } else {
                for (int i = 0; i < 32; i++) v[i] = 0.f;
            }
            for (int i = 0; i < 32; i++) ws[32 * tiitg + i] = v[i];
        } else if (tiitg < 64) {
            const uint t = tiitg - 32, tok = t0 + t;
            if (tok < a.ntok) {
                const ulong xr = a.use_ids ? ulong(ids[tok]) : ulong(tok);
                device const float4 * x4 = (device const float4 *) (x + xr * a.x_stride + 32 * c);
                for (int i = 0; i < 8; i++) {
                    const float4 q = x4[i];
                    xs[32 * t + 4 * i] = q.x;
                    xs[32 * t + 4 * i + 1] = q.y;
                    xs[32 * t + 4 * i + 2] = q.z;
                    xs[32 * t + 4 * i + 3] = q.w;
                }
            } else {
                for (int i = 0; i < 32; i++) xs[32 * t + i] = 0.f;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < 32; k += 8) {
            simdgroup_float8x8 A[2], B[2];
            for (int i = 0; i < 2; i++) simdgroup_load(A[i], ws, 32, ulong2(k, rb + 8 * i));
            for (int j = 0; j < 2; j++) simdgroup_load(B[j], xs, 32, ulong2(k, tb + 8 * j), true);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) simdgroup_multiply_accumulate(acc[i][j], A[i], B[j], acc[i][j]);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    // The tile, activation-row major, through threadgroup memory, then
    // out with the bounds checked.
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) simdgroup_store(acc[i][j], ws, 32, ulong2(rb + 8 * i, tb + 8 * j), true);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint e = tiitg; e < 1024; e += 128) {
        const uint t = e / 32, r = e % 32;
        if (t0 + t < a.ntok && r0 + r < a.nrows) y[ulong(t0 + t) * a.y_stride + r0 + r] = ws[e];
    }
}

#define MM_PARAMS constant mm_args & a [[buffer(0)]], device const uchar * w [[buffer(1)]], \
    device const float * x [[buffer(2)]], device float * y [[buffer(3)]], device const int * ids [[buffer(4)]], \
    threadgroup float * sh [[threadgroup(0)]], uint3 tgpig [[threadgroup_position_in_grid]], \
    ushort tiitg [[thread_index_in_threadgroup]], ushort sgitg [[simdgroup_index_in_threadgroup]]
#define MM_ARGS a, w, x, y, ids, sh, tgpig, tiitg, sgitg

kernel void kernel_mm_f32(MM_PARAMS)     { mm_impl<t_f32>(MM_ARGS); }
kernel void kernel_mm_f16(MM_PARAMS)     { mm_impl<t_f16>(MM_ARGS); }
kernel void kernel_mm_bf16(MM_PARAMS)    { mm_impl<t_bf16>(MM_ARGS); }
kernel void kernel_mm_q8_0(MM_PARAMS)    { mm_impl<t_q8_0>(MM_ARGS); }
kernel void kernel_mm_q4_0(MM_PARAMS)    { mm_impl<t_q4_0>(MM_ARGS); }
kernel void kernel_mm_q4_K(MM_PARAMS)    { mm_impl<t_q4_K>(MM_ARGS); }
kernel void kernel_mm_q5_K(MM_PARAMS)    { mm_impl<t_q5_K>(MM_ARGS); }
kernel void kernel_mm_q6_K(MM_PARAMS)    { mm_impl<t_q6_K>(MM_ARGS); }
kernel void kernel_mm_q2_K(MM_PARAMS)    { mm_impl<t_q2_K>(MM_ARGS); }
kernel void kernel_mm_q3_K(MM_PARAMS)    { mm_impl<t_q3_K>(MM_ARGS); }
kernel void kernel_mm_iq2_xs(MM_PARAMS)  { mm_impl<t_iq2_xs>(MM_ARGS); }
kernel void kernel_mm_iq2_xxs(MM_PARAMS) { mm_impl<t_iq2_xxs>(MM_ARGS); }
kernel void kernel_mm_iq3_xxs(MM_PARAMS) { mm_impl<t_iq3_xxs>(MM_ARGS); }
kernel void kernel_mm_iq4_xs(MM_PARAMS)  { mm_impl<t_iq4_xs>(MM_ARGS); }

// ---- The newer weight types (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, TQ1_0, TQ2_0, IQ3_S, IQ2_S, IQ1_S,
// IQ1_M): their layouts as engine/quant's Go references read them (ggml-common.h). The grids are
// ggml's, generated from engine/quant/iq_tables.go.
constant char kvalues_fp4[16] = {
    0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
};
constant uint iq3s_grid[512] = {
    0x01010101, 0x01010103, 0x01010105, 0x0101010b, 0x0101010f, 0x01010301, 0x01010303, 0x01010305,
    0x01010309, 0x0101030d, 0x01010501, 0x01010503, 0x0101050b, 0x01010707, 0x01010901, 0x01010905,
    0x0101090b, 0x0101090f, 0x01010b03, 0x01010b07, 0x01010d01, 0x01010d05, 0x01010f03, 0x01010f09,
    0x01010f0f, 0x01030101, 0x01030103, 0x01030105, 0x01030109, 0x01030301, 0x01030303, 0x0103030b,
    0x01030501, 0x01030507, 0x0103050f, 0x01030703, 0x0103070b, 0x01030909, 0x01030d03, 0x01030d0b,
    0x01030f05, 0x01050101, 0x01050103, 0x0105010b, 0x0105010f, 0x01050301, 0x01050307, 0x0105030d,
    0x01050503, 0x0105050b, 0x01050701, 0x01050709, 0x01050905, 0x0105090b, 0x0105090f, 0x01050b03,
    0x01050b07, 0x01050f01, 0x01050f07, 0x01070107, 0x01070303, 0x0107030b, 0x01070501, 0x01070505,
    0x01070703, 0x01070707, 0x0107070d, 0x01070909, 0x01070b01, 0x01070b05, 0x01070d0f, 0x01070f03,
    0x01070f0b, 0x01090101, 0x01090307, 0x0109030f, 0x01090503, 0x01090509, 0x01090705, 0x01090901,
    0x01090907, 0x01090b03, 0x01090f01, 0x010b0105, 0x010b0109, 0x010b0501, 0x010b0505, 0x010b050d,
    0x010b0707, 0x010b0903, 0x010b090b, 0x010b090f, 0x010b0d0d, 0x010b0f07, 0x010d010d, 0x010d0303,
    0x010d0307, 0x010d0703, 0x010d0b05, 0x010d0f03, 0x010f0101, 0x010f0105, 0x010f0109, 0x010f0501,
    0x010f0505, 0x010f050d, 0x010f0707, 0x010f0b01, 0x010f0b09, 0x03010101, 0x03010103, 0x03010105,
    0x03010109, 0x03010301, 0x03010303, 0x03010307, 0x0301030b, 0x0301030f, 0x03010501, 0x03010505,
    0x03010703, 0x03010709, 0x0301070d, 0x03010b09, 0x03010b0d, 0x03010d03, 0x03010f05, 0x03030101,
    0x03030103, 0x03030107, 0x0303010d, 0x03030301, 0x03030309, 0x03030503, 0x03030701, 0x03030707,
    0x03030903, 0x03030b01, 0x03030b05, 0x03030f01, 0x03030f0d, 0x03050101, 0x03050305, 0x0305030b,
    0x0305030f, 0x03050501, 0x03050509, 0x03050705, 0x03050901, 0x03050907, 0x03050b0b, 0x03050d01,
    0x03050f05, 0x03070103, 0x03070109, 0x0307010f, 0x03070301, 0x03070307, 0x03070503, 0x0307050f,
    0x03070701, 0x03070709, 0x03070903, 0x03070d05, 0x03070f01, 0x03090107, 0x0309010b, 0x03090305,
    0x03090309, 0x03090703, 0x03090707, 0x03090905, 0x0309090d, 0x03090b01, 0x03090b09, 0x030b0103,
    0x030b0301, 0x030b0307, 0x030b0503, 0x030b0701, 0x030b0705, 0x030b0b03, 0x030d0501, 0x030d0509,
    0x030d050f, 0x030d0909, 0x030d090d, 0x030f0103, 0x030f0107, 0x030f0301, 0x030f0305, 0x030f0503,
    0x030f070b, 0x030f0903, 0x030f0d05, 0x030f0f01, 0x05010101, 0x05010103, 0x05010107, 0x0501010b,
    0x0501010f, 0x05010301, 0x05010305, 0x05010309, 0x0501030d, 0x05010503, 0x05010507, 0x0501050f,
    0x05010701, 0x05010705, 0x05010903, 0x05010907, 0x0501090b, 0x05010b01, 0x05010b05, 0x05010d0f,
    0x05010f01, 0x05010f07, 0x05010f0b, 0x05030101, 0x05030105, 0x05030301, 0x05030307, 0x0503030f,
    0x05030505, 0x0503050b, 0x05030703, 0x05030709, 0x05030905, 0x05030b03, 0x05050103, 0x05050109,
    0x0505010f, 0x05050503, 0x05050507, 0x05050701, 0x0505070f, 0x05050903, 0x05050b07, 0x05050b0f,
    0x05050f03, 0x05050f09, 0x05070101, 0x05070105, 0x0507010b, 0x05070303, 0x05070505, 0x05070509,
    0x05070703, 0x05070707, 0x05070905, 0x05070b01, 0x05070d0d, 0x05090103, 0x0509010f, 0x05090501,
    0x05090507, 0x05090705, 0x0509070b, 0x05090903, 0x05090f05, 0x05090f0b, 0x050b0109, 0x050b0303,
    0x050b0505, 0x050b070f, 0x050b0901, 0x050b0b07, 0x050b0f01, 0x050d0101, 0x050d0105, 0x050d010f,
    0x050d0503, 0x050d0b0b, 0x050d0d03, 0x050f010b, 0x050f0303, 0x050f050d, 0x050f0701, 0x050f0907,
    0x050f0b01, 0x07010105, 0x07010303, 0x07010307, 0x0701030b, 0x0701030f, 0x07010505, 0x07010703,
    0x07010707, 0x0701070b, 0x07010905, 0x07010909, 0x0701090f, 0x07010b03, 0x07010d07, 0x07010f03,
    0x07030103, 0x07030107, 0x0703010b, 0x07030309, 0x07030503, 0x07030507, 0x07030901, 0x07030d01,
    0x07030f05, 0x07030f0d, 0x07050101, 0x07050305, 0x07050501, 0x07050705, 0x07050709, 0x07050b01,
    0x07070103, 0x07070301, 0x07070309, 0x07070503, 0x07070507, 0x0707050f, 0x07070701, 0x07070903,
    0x07070907, 0x0707090f, 0x07070b0b, 0x07070f07, 0x07090107, 0x07090303, 0x0709030d, 0x07090505,
    0x07090703, 0x07090b05, 0x07090d01, 0x07090d09, 0x070b0103, 0x070b0301, 0x070b0305, 0x070b050b,
    0x070b0705, 0x070b0909, 0x070b0b0d, 0x070b0f07, 0x070d030d, 0x070d0903, 0x070f0103, 0x070f0107,
    0x070f0501, 0x070f0505, 0x070f070b, 0x09010101, 0x09010109, 0x09010305, 0x09010501, 0x09010509,
    0x0901050f, 0x09010705, 0x09010903, 0x09010b01, 0x09010f01, 0x09030105, 0x0903010f, 0x09030303,
    0x09030307, 0x09030505, 0x09030701, 0x0903070b, 0x09030907, 0x09030b03, 0x09030b0b, 0x09050103,
    0x09050107, 0x09050301, 0x0905030b, 0x09050503, 0x09050707, 0x09050901, 0x09050b0f, 0x09050d05,
    0x09050f01, 0x09070109, 0x09070303, 0x09070307, 0x09070501, 0x09070505, 0x09070703, 0x0907070b,
    0x09090101, 0x09090105, 0x09090509, 0x0909070f, 0x09090901, 0x09090f03, 0x090b010b, 0x090b010f,
    0x090b0503, 0x090b0d05, 0x090d0307, 0x090d0709, 0x090d0d01, 0x090f0301, 0x090f030b, 0x090f0701,
    0x090f0907, 0x090f0b03, 0x0b010105, 0x0b010301, 0x0b010309, 0x0b010505, 0x0b010901, 0x0b010909,
    0x0b01090f, 0x0b010b05, 0x0b010d0d, 0x0b010f09, 0x0b030103, 0x0b030107, 0x0b03010b, 0x0b030305,
    0x0b030503, 0x0b030705, 0x0b030f05, 0x0b050101, 0x0b050303, 0x0b050507, 0x0b050701, 0x0b05070d,
    0x0b050b07, 0x0b070105, 0x0b07010f, 0x0b070301, 0x0b07050f, 0x0b070909, 0x0b070b03, 0x0b070d0b,
    0x0b070f07, 0x0b090103, 0x0b090109, 0x0b090501, 0x0b090705, 0x0b09090d, 0x0b0b0305, 0x0b0b050d,
    0x0b0b0b03, 0x0b0b0b07, 0x0b0d0905, 0x0b0f0105, 0x0b0f0109, 0x0b0f0505, 0x0d010303, 0x0d010307,
    0x0d01030b, 0x0d010703, 0x0d010707, 0x0d010d01, 0x0d030101, 0x0d030501, 0x0d03050f, 0x0d030d09,
    0x0d050305, 0x0d050709, 0x0d050905, 0x0d050b0b, 0x0d050d05, 0x0d050f01, 0x0d070101, 0x0d070309,
    0x0d070503, 0x0d070901, 0x0d09050b, 0x0d090907, 0x0d090d05, 0x0d0b0101, 0x0d0b0107, 0x0d0b0709,
    0x0d0b0d01, 0x0d0d010b, 0x0d0d0901, 0x0d0f0303, 0x0d0f0307, 0x0f010101, 0x0f010109, 0x0f01010f,
    0x0f010501, 0x0f010505, 0x0f01070d, 0x0f010901, 0x0f010b09, 0x0f010d05, 0x0f030105, 0x0f030303,
    0x0f030509, 0x0f030907, 0x0f03090b, 0x0f050103, 0x0f050109, 0x0f050301, 0x0f05030d, 0x0f050503,
    0x0f050701, 0x0f050b03, 0x0f070105, 0x0f070705, 0x0f07070b, 0x0f070b07, 0x0f090103, 0x0f09010b,
    0x0f090307, 0x0f090501, 0x0f090b01, 0x0f0b0505, 0x0f0b0905, 0x0f0d0105, 0x0f0d0703, 0x0f0f0101,
};
constant ulong iq2s_grid[1024] = {
    0x0808080808080808ul, 0x080808080808082bul, 0x0808080808081919ul, 0x0808080808082b08ul,
    0x0808080808082b2bul, 0x0808080808190819ul, 0x0808080808191908ul, 0x080808080819192bul,
    0x0808080808192b19ul, 0x08080808082b0808ul, 0x08080808082b082bul, 0x08080808082b1919ul,
    0x08080808082b2b08ul, 0x0808080819080819ul, 0x0808080819081908ul, 0x080808081908192bul,
    0x0808080819082b19ul, 0x0808080819190808ul, 0x080808081919082bul, 0x0808080819191919ul,
    0x0808080819192b08ul, 0x08080808192b0819ul, 0x08080808192b1908ul, 0x08080808192b192bul,
    0x08080808192b2b19ul, 0x080808082b080808ul, 0x080808082b08082bul, 0x080808082b081919ul,
    0x080808082b082b08ul, 0x080808082b190819ul, 0x080808082b191908ul, 0x080808082b2b0808ul,
    0x080808082b2b1919ul, 0x080808082b2b2b2bul, 0x0808081908080819ul, 0x0808081908081908ul,
    0x080808190808192bul, 0x0808081908082b19ul, 0x0808081908190808ul, 0x080808190819082bul,
    0x0808081908191919ul, 0x0808081908192b08ul, 0x08080819082b0819ul, 0x08080819082b1908ul,
    0x0808081919080808ul, 0x080808191908082bul, 0x0808081919081919ul, 0x0808081919082b08ul,
    0x0808081919190819ul, 0x0808081919191908ul, 0x080808191919192bul, 0x0808081919192b19ul,
    0x08080819192b0808ul, 0x08080819192b1919ul, 0x08080819192b2b08ul, 0x080808192b080819ul,
    0x080808192b081908ul, 0x080808192b190808ul, 0x080808192b19082bul, 0x080808192b191919ul,
    0x080808192b2b0819ul, 0x080808192b2b1908ul, 0x0808082b08080808ul, 0x0808082b0808082bul,
    0x0808082b08081919ul, 0x0808082b08082b08ul, 0x0808082b08190819ul, 0x0808082b08191908ul,
    0x0808082b082b0808ul, 0x0808082b082b2b2bul, 0x0808082b19080819ul, 0x0808082b19081908ul,
    0x0808082b1908192bul, 0x0808082b19082b19ul, 0x0808082b19190808ul, 0x0808082b19191919ul,
    0x0808082b2b080808ul, 0x0808082b2b081919ul, 0x0808082b2b082b2bul, 0x0808082b2b191908ul,
    0x0808082b2b2b082bul, 0x0808190808080819ul, 0x0808190808081908ul, 0x080819080808192bul,
    0x0808190808082b19ul, 0x0808190808190808ul, 0x080819080819082bul, 0x0808190808191919ul,
    0x0808190808192b08ul, 0x08081908082b0819ul, 0x08081908082b1908ul, 0x08081908082b192bul,
    0x08081908082b2b19ul, 0x0808190819080808ul, 0x080819081908082bul, 0x0808190819081919ul,
    0x0808190819082b08ul, 0x0808190819082b2bul, 0x0808190819190819ul, 0x0808190819191908ul,
    0x080819081919192bul, 0x0808190819192b19ul, 0x08081908192b0808ul, 0x08081908192b082bul,
    0x08081908192b1919ul, 0x080819082b080819ul, 0x080819082b081908ul, 0x080819082b08192bul,
    0x080819082b082b19ul, 0x080819082b190808ul, 0x080819082b191919ul, 0x080819082b192b08ul,
    0x080819082b2b0819ul, 0x080819082b2b1908ul, 0x0808191908080808ul, 0x080819190808082bul,
    0x0808191908081919ul, 0x0808191908082b08ul, 0x0808191908082b2bul, 0x0808191908190819ul,
    0x0808191908191908ul, 0x080819190819192bul, 0x0808191908192b19ul, 0x08081919082b0808ul,
    0x08081919082b1919ul, 0x08081919082b2b08ul, 0x0808191919080819ul, 0x0808191919081908ul,
    0x080819191908192bul, 0x0808191919082b19ul, 0x0808191919190808ul, 0x080819191919082bul,
    0x0808191919191919ul, 0x0808191919192b08ul, 0x08081919192b0819ul, 0x08081919192b1908ul,
    0x080819192b080808ul, 0x080819192b08082bul, 0x080819192b081919ul, 0x080819192b082b08ul,
    0x080819192b190819ul, 0x080819192b191908ul, 0x080819192b2b0808ul, 0x0808192b08080819ul,
    0x0808192b08081908ul, 0x0808192b0808192bul, 0x0808192b08082b19ul, 0x0808192b08190808ul,
    0x0808192b08191919ul, 0x0808192b19080808ul, 0x0808192b19081919ul, 0x0808192b19082b08ul,
    0x0808192b19190819ul, 0x0808192b19191908ul, 0x0808192b192b0808ul, 0x0808192b2b080819ul,
    0x0808192b2b081908ul, 0x0808192b2b190808ul, 0x08082b0808080808ul, 0x08082b080808082bul,
    0x08082b0808081919ul, 0x08082b0808082b08ul, 0x08082b0808190819ul, 0x08082b0808191908ul,
    0x08082b080819192bul, 0x08082b0808192b19ul, 0x08082b08082b0808ul, 0x08082b08082b1919ul,
    0x08082b08082b2b2bul, 0x08082b0819080819ul, 0x08082b0819081908ul, 0x08082b081908192bul,
    0x08082b0819082b19ul, 0x08082b0819190808ul, 0x08082b081919082bul, 0x08082b0819191919ul,
    0x08082b0819192b08ul, 0x08082b08192b0819ul, 0x08082b08192b1908ul, 0x08082b082b080808ul,
    0x08082b082b081919ul, 0x08082b082b191908ul, 0x08082b082b2b2b2bul, 0x08082b1908080819ul,
    0x08082b1908081908ul, 0x08082b1908190808ul, 0x08082b190819082bul, 0x08082b1908191919ul,
    0x08082b1908192b08ul, 0x08082b19082b0819ul, 0x08082b1919080808ul, 0x08082b1919081919ul,
    0x08082b1919082b08ul, 0x08082b1919190819ul, 0x08082b1919191908ul, 0x08082b19192b0808ul,
    0x08082b192b080819ul, 0x08082b192b190808ul, 0x08082b2b08080808ul, 0x08082b2b08190819ul,
    0x08082b2b08191908ul, 0x08082b2b082b082bul, 0x08082b2b082b2b08ul, 0x08082b2b082b2b2bul,
    0x08082b2b19190808ul, 0x08082b2b2b192b19ul, 0x0819080808080819ul, 0x0819080808081908ul,
    0x081908080808192bul, 0x0819080808082b19ul, 0x0819080808190808ul, 0x081908080819082bul,
    0x0819080808191919ul, 0x0819080808192b08ul, 0x08190808082b0819ul, 0x08190808082b1908ul,
    0x08190808082b192bul, 0x0819080819080808ul, 0x081908081908082bul, 0x0819080819081919ul,
    0x0819080819082b08ul, 0x0819080819190819ul, 0x0819080819191908ul, 0x081908081919192bul,
    0x0819080819192b19ul, 0x08190808192b0808ul, 0x08190808192b082bul, 0x08190808192b1919ul,
    0x08190808192b2b08ul, 0x081908082b080819ul, 0x081908082b081908ul, 0x081908082b08192bul,
    0x081908082b190808ul, 0x081908082b191919ul, 0x081908082b192b08ul, 0x081908082b2b0819ul,
    0x081908082b2b1908ul, 0x0819081908080808ul, 0x081908190808082bul, 0x0819081908081919ul,
    0x0819081908082b08ul, 0x0819081908082b2bul, 0x0819081908190819ul, 0x0819081908191908ul,
    0x081908190819192bul, 0x0819081908192b19ul, 0x08190819082b0808ul, 0x08190819082b082bul,
    0x08190819082b1919ul, 0x08190819082b2b08ul, 0x0819081919080819ul, 0x0819081919081908ul,
    0x081908191908192bul, 0x0819081919082b19ul, 0x0819081919190808ul, 0x081908191919082bul,
    0x0819081919191919ul, 0x0819081919192b08ul, 0x08190819192b0819ul, 0x08190819192b1908ul,
    0x081908192b080808ul, 0x081908192b08082bul, 0x081908192b081919ul, 0x081908192b082b08ul,
    0x081908192b190819ul, 0x081908192b191908ul, 0x0819082b08080819ul, 0x0819082b08081908ul,
    0x0819082b08082b19ul, 0x0819082b08190808ul, 0x0819082b08191919ul, 0x0819082b082b0819ul,
    0x0819082b082b1908ul, 0x0819082b19080808ul, 0x0819082b19081919ul, 0x0819082b19190819ul,
    0x0819082b19191908ul, 0x0819082b2b080819ul, 0x0819082b2b081908ul, 0x0819082b2b190808ul,
    0x0819190808080808ul, 0x081919080808082bul, 0x0819190808081919ul, 0x0819190808082b08ul,
    0x0819190808190819ul, 0x0819190808191908ul, 0x081919080819192bul, 0x0819190808192b19ul,
    0x08191908082b0808ul, 0x08191908082b1919ul, 0x08191908082b2b08ul, 0x0819190819080819ul,
    0x0819190819081908ul, 0x081919081908192bul, 0x0819190819082b19ul, 0x0819190819190808ul,
    0x081919081919082bul, 0x0819190819191919ul, 0x0819190819192b08ul, 0x08191908192b0819ul,
    0x08191908192b1908ul, 0x081919082b080808ul, 0x081919082b08082bul, 0x081919082b081919ul,
    0x081919082b082b08ul, 0x081919082b190819ul, 0x081919082b191908ul, 0x081919082b2b0808ul,
    0x0819191908080819ul, 0x0819191908081908ul, 0x081919190808192bul, 0x0819191908082b19ul,
    0x0819191908190808ul, 0x081919190819082bul, 0x0819191908191919ul, 0x0819191908192b08ul,
    0x08191919082b0819ul, 0x08191919082b1908ul, 0x0819191919080808ul, 0x081919191908082bul,
    0x0819191919081919ul, 0x0819191919082b08ul, 0x0819191919190819ul, 0x0819191919191908ul,
    0x08191919192b0808ul, 0x081919192b080819ul, 0x081919192b081908ul, 0x081919192b190808ul,
    0x0819192b08080808ul, 0x0819192b08081919ul, 0x0819192b08082b08ul, 0x0819192b08190819ul,
    0x0819192b08191908ul, 0x0819192b082b0808ul, 0x0819192b19080819ul, 0x0819192b19081908ul,
    0x0819192b19190808ul, 0x0819192b2b080808ul, 0x0819192b2b2b2b2bul, 0x08192b0808080819ul,
    0x08192b0808081908ul, 0x08192b080808192bul, 0x08192b0808082b19ul, 0x08192b0808190808ul,
    0x08192b0808191919ul, 0x08192b0808192b08ul, 0x08192b08082b0819ul, 0x08192b0819080808ul,
    0x08192b081908082bul, 0x08192b0819081919ul, 0x08192b0819082b08ul, 0x08192b0819190819ul,
    0x08192b0819191908ul, 0x08192b08192b0808ul, 0x08192b082b080819ul, 0x08192b082b081908ul,
    0x08192b1908080808ul, 0x08192b190808082bul, 0x08192b1908081919ul, 0x08192b1908082b08ul,
    0x08192b1908190819ul, 0x08192b1908191908ul, 0x08192b19082b0808ul, 0x08192b1919080819ul,
    0x08192b1919081908ul, 0x08192b1919190808ul, 0x08192b19192b2b19ul, 0x08192b192b2b082bul,
    0x08192b2b08081908ul, 0x08192b2b08190808ul, 0x08192b2b19080808ul, 0x08192b2b1919192bul,
    0x082b080808080808ul, 0x082b08080808082bul, 0x082b080808081919ul, 0x082b080808082b08ul,
    0x082b080808190819ul, 0x082b080808191908ul, 0x082b08080819192bul, 0x082b080808192b19ul,
    0x082b0808082b0808ul, 0x082b0808082b1919ul, 0x082b0808082b2b2bul, 0x082b080819080819ul,
    0x082b080819081908ul, 0x082b080819190808ul, 0x082b08081919082bul, 0x082b080819191919ul,
    0x082b0808192b1908ul, 0x082b08082b080808ul, 0x082b08082b082b2bul, 0x082b08082b191908ul,
    0x082b08082b2b2b2bul, 0x082b081908080819ul, 0x082b081908081908ul, 0x082b081908190808ul,
    0x082b08190819082bul, 0x082b081908191919ul, 0x082b0819082b0819ul, 0x082b081919080808ul,
    0x082b08191908082bul, 0x082b081919081919ul, 0x082b081919190819ul, 0x082b081919191908ul,
    0x082b0819192b0808ul, 0x082b08192b080819ul, 0x082b08192b081908ul, 0x082b08192b190808ul,
    0x082b082b08080808ul, 0x082b082b08082b2bul, 0x082b082b082b082bul, 0x082b082b082b2b08ul,
    0x082b082b082b2b2bul, 0x082b082b19081908ul, 0x082b082b19190808ul, 0x082b082b2b082b08ul,
    0x082b082b2b082b2bul, 0x082b082b2b2b2b08ul, 0x082b190808080819ul, 0x082b190808081908ul,
    0x082b19080808192bul, 0x082b190808082b19ul, 0x082b190808190808ul, 0x082b190808191919ul,
    0x082b190808192b08ul, 0x082b1908082b0819ul, 0x082b1908082b1908ul, 0x082b190819080808ul,
    0x082b19081908082bul, 0x082b190819081919ul, 0x082b190819082b08ul, 0x082b190819190819ul,
    0x082b190819191908ul, 0x082b1908192b0808ul, 0x082b19082b080819ul, 0x082b19082b081908ul,
    0x082b19082b190808ul, 0x082b191908080808ul, 0x082b191908081919ul, 0x082b191908082b08ul,
    0x082b191908190819ul, 0x082b191908191908ul, 0x082b1919082b0808ul, 0x082b191919080819ul,
    0x082b191919081908ul, 0x082b191919190808ul, 0x082b1919192b192bul, 0x082b19192b080808ul,
    0x082b192b08080819ul, 0x082b192b08081908ul, 0x082b192b08190808ul, 0x082b192b19080808ul,
    0x082b192b19192b19ul, 0x082b2b0808080808ul, 0x082b2b0808081919ul, 0x082b2b0808190819ul,
    0x082b2b0808191908ul, 0x082b2b0819080819ul, 0x082b2b0819081908ul, 0x082b2b0819190808ul,
    0x082b2b082b082b2bul, 0x082b2b082b2b2b2bul, 0x082b2b1908080819ul, 0x082b2b1908081908ul,
    0x082b2b1908190808ul, 0x082b2b192b191919ul, 0x082b2b2b08082b2bul, 0x082b2b2b082b082bul,
    0x082b2b2b192b1908ul, 0x082b2b2b2b082b08ul, 0x082b2b2b2b082b2bul, 0x1908080808080819ul,
    0x1908080808081908ul, 0x190808080808192bul, 0x1908080808082b19ul, 0x1908080808190808ul,
    0x190808080819082bul, 0x1908080808191919ul, 0x1908080808192b08ul, 0x1908080808192b2bul,
    0x19080808082b0819ul, 0x19080808082b1908ul, 0x19080808082b192bul, 0x1908080819080808ul,
    0x190808081908082bul, 0x1908080819081919ul, 0x1908080819082b08ul, 0x1908080819082b2bul,
    0x1908080819190819ul, 0x1908080819191908ul, 0x190808081919192bul, 0x1908080819192b19ul,
    0x19080808192b0808ul, 0x19080808192b082bul, 0x19080808192b1919ul, 0x190808082b080819ul,
    0x190808082b081908ul, 0x190808082b190808ul, 0x190808082b191919ul, 0x190808082b192b08ul,
    0x190808082b2b0819ul, 0x190808082b2b1908ul, 0x1908081908080808ul, 0x190808190808082bul,
    0x1908081908081919ul, 0x1908081908082b08ul, 0x1908081908190819ul, 0x1908081908191908ul,
    0x190808190819192bul, 0x1908081908192b19ul, 0x19080819082b0808ul, 0x19080819082b082bul,
    0x19080819082b1919ul, 0x1908081919080819ul, 0x1908081919081908ul, 0x190808191908192bul,
    0x1908081919082b19ul, 0x1908081919190808ul, 0x190808191919082bul, 0x1908081919191919ul,
    0x1908081919192b08ul, 0x19080819192b0819ul, 0x19080819192b1908ul, 0x190808192b080808ul,
    0x190808192b08082bul, 0x190808192b081919ul, 0x190808192b082b08ul, 0x190808192b190819ul,
    0x190808192b191908ul, 0x190808192b2b0808ul, 0x1908082b08080819ul, 0x1908082b08081908ul,
    0x1908082b08190808ul, 0x1908082b0819082bul, 0x1908082b08191919ul, 0x1908082b08192b08ul,
    0x1908082b082b1908ul, 0x1908082b19080808ul, 0x1908082b19081919ul, 0x1908082b19082b08ul,
    0x1908082b19190819ul, 0x1908082b19191908ul, 0x1908082b192b0808ul, 0x1908082b2b080819ul,
    0x1908082b2b081908ul, 0x1908190808080808ul, 0x190819080808082bul, 0x1908190808081919ul,
    0x1908190808082b08ul, 0x1908190808082b2bul, 0x1908190808190819ul, 0x1908190808191908ul,
    0x190819080819192bul, 0x1908190808192b19ul, 0x19081908082b0808ul, 0x19081908082b082bul,
    0x19081908082b1919ul, 0x19081908082b2b08ul, 0x1908190819080819ul, 0x1908190819081908ul,
    0x190819081908192bul, 0x1908190819082b19ul, 0x1908190819190808ul, 0x190819081919082bul,
    0x1908190819191919ul, 0x1908190819192b08ul, 0x19081908192b0819ul, 0x19081908192b1908ul,
    0x190819082b080808ul, 0x190819082b08082bul, 0x190819082b081919ul, 0x190819082b082b08ul,
    0x190819082b190819ul, 0x190819082b191908ul, 0x190819082b2b0808ul, 0x1908191908080819ul,
    0x1908191908081908ul, 0x190819190808192bul, 0x1908191908082b19ul, 0x1908191908190808ul,
    0x190819190819082bul, 0x1908191908191919ul, 0x1908191908192b08ul, 0x19081919082b0819ul,
    0x19081919082b1908ul, 0x1908191919080808ul, 0x190819191908082bul, 0x1908191919081919ul,
    0x1908191919082b08ul, 0x1908191919190819ul, 0x1908191919191908ul, 0x19081919192b0808ul,
    0x19081919192b2b2bul, 0x190819192b080819ul, 0x190819192b081908ul, 0x190819192b190808ul,
    0x1908192b08080808ul, 0x1908192b0808082bul, 0x1908192b08081919ul, 0x1908192b08082b08ul,
    0x1908192b08190819ul, 0x1908192b08191908ul, 0x1908192b082b0808ul, 0x1908192b19080819ul,
    0x1908192b19081908ul, 0x1908192b19190808ul, 0x1908192b2b080808ul, 0x1908192b2b2b1919ul,
    0x19082b0808080819ul, 0x19082b0808081908ul, 0x19082b0808082b19ul, 0x19082b0808190808ul,
    0x19082b080819082bul, 0x19082b0808191919ul, 0x19082b0808192b08ul, 0x19082b08082b0819ul,
    0x19082b08082b1908ul, 0x19082b0819080808ul, 0x19082b081908082bul, 0x19082b0819081919ul,
    0x19082b0819082b08ul, 0x19082b0819190819ul, 0x19082b0819191908ul, 0x19082b08192b0808ul,
    0x19082b082b081908ul, 0x19082b082b190808ul, 0x19082b1908080808ul, 0x19082b190808082bul,
    0x19082b1908081919ul, 0x19082b1908082b08ul, 0x19082b1908190819ul, 0x19082b1908191908ul,
    0x19082b19082b0808ul, 0x19082b1919080819ul, 0x19082b1919081908ul, 0x19082b1919190808ul,
    0x19082b192b080808ul, 0x19082b192b19192bul, 0x19082b2b08080819ul, 0x19082b2b08081908ul,
    0x19082b2b08190808ul, 0x19082b2b19080808ul, 0x1919080808080808ul, 0x191908080808082bul,
    0x1919080808081919ul, 0x1919080808082b08ul, 0x1919080808190819ul, 0x1919080808191908ul,
    0x191908080819192bul, 0x1919080808192b19ul, 0x19190808082b0808ul, 0x19190808082b082bul,
    0x19190808082b1919ul, 0x19190808082b2b08ul, 0x1919080819080819ul, 0x1919080819081908ul,
    0x191908081908192bul, 0x1919080819082b19ul, 0x1919080819190808ul, 0x191908081919082bul,
    0x1919080819191919ul, 0x1919080819192b08ul, 0x19190808192b0819ul, 0x19190808192b1908ul,
    0x191908082b080808ul, 0x191908082b08082bul, 0x191908082b081919ul, 0x191908082b082b08ul,
    0x191908082b190819ul, 0x191908082b191908ul, 0x1919081908080819ul, 0x1919081908081908ul,
    0x191908190808192bul, 0x1919081908082b19ul, 0x1919081908190808ul, 0x191908190819082bul,
    0x1919081908191919ul, 0x1919081908192b08ul, 0x19190819082b0819ul, 0x19190819082b1908ul,
    0x1919081919080808ul, 0x191908191908082bul, 0x1919081919081919ul, 0x1919081919082b08ul,
    0x1919081919190819ul, 0x1919081919191908ul, 0x19190819192b0808ul, 0x191908192b080819ul,
    0x191908192b081908ul, 0x191908192b190808ul, 0x1919082b08080808ul, 0x1919082b08081919ul,
    0x1919082b08082b08ul, 0x1919082b08190819ul, 0x1919082b08191908ul, 0x1919082b082b0808ul,
    0x1919082b19080819ul, 0x1919082b19081908ul, 0x1919082b19190808ul, 0x1919082b192b2b19ul,
    0x1919082b2b080808ul, 0x1919190808080819ul, 0x1919190808081908ul, 0x191919080808192bul,
    0x1919190808082b19ul, 0x1919190808190808ul, 0x191919080819082bul, 0x1919190808191919ul,
    0x1919190808192b08ul, 0x19191908082b0819ul, 0x19191908082b1908ul, 0x1919190819080808ul,
    0x191919081908082bul, 0x1919190819081919ul, 0x1919190819082b08ul, 0x1919190819190819ul,
    0x1919190819191908ul, 0x19191908192b0808ul, 0x191919082b080819ul, 0x191919082b081908ul,
    0x191919082b190808ul, 0x1919191908080808ul, 0x191919190808082bul, 0x1919191908081919ul,
    0x1919191908082b08ul, 0x1919191908190819ul, 0x1919191908191908ul, 0x19191919082b0808ul,
    0x1919191919080819ul, 0x1919191919081908ul, 0x1919191919190808ul, 0x191919192b080808ul,
    0x1919192b08080819ul, 0x1919192b08081908ul, 0x1919192b08190808ul, 0x1919192b082b192bul,
    0x1919192b19080808ul, 0x19192b0808080808ul, 0x19192b080808082bul, 0x19192b0808081919ul,
    0x19192b0808082b08ul, 0x19192b0808190819ul, 0x19192b0808191908ul, 0x19192b08082b0808ul,
    0x19192b0819080819ul, 0x19192b0819081908ul, 0x19192b0819190808ul, 0x19192b0819192b2bul,
    0x19192b082b080808ul, 0x19192b1908080819ul, 0x19192b1908081908ul, 0x19192b1908190808ul,
    0x19192b1919080808ul, 0x19192b2b08080808ul, 0x19192b2b08192b19ul, 0x19192b2b2b081919ul,
    0x19192b2b2b2b2b08ul, 0x192b080808080819ul, 0x192b080808081908ul, 0x192b08080808192bul,
    0x192b080808190808ul, 0x192b08080819082bul, 0x192b080808191919ul, 0x192b080808192b08ul,
    0x192b0808082b0819ul, 0x192b0808082b1908ul, 0x192b080819080808ul, 0x192b080819081919ul,
    0x192b080819082b08ul, 0x192b080819190819ul, 0x192b080819191908ul, 0x192b0808192b0808ul,
    0x192b08082b081908ul, 0x192b08082b190808ul, 0x192b081908080808ul, 0x192b08190808082bul,
    0x192b081908081919ul, 0x192b081908082b08ul, 0x192b081908190819ul, 0x192b081908191908ul,
    0x192b0819082b0808ul, 0x192b081919080819ul, 0x192b081919081908ul, 0x192b081919190808ul,
    0x192b08192b080808ul, 0x192b08192b192b19ul, 0x192b082b08081908ul, 0x192b082b08190808ul,
    0x192b082b19080808ul, 0x192b082b1919192bul, 0x192b082b2b2b0819ul, 0x192b190808080808ul,
    0x192b190808081919ul, 0x192b190808082b08ul, 0x192b190808190819ul, 0x192b190808191908ul,
    0x192b1908082b0808ul, 0x192b190819080819ul, 0x192b190819081908ul, 0x192b190819190808ul,
    0x192b19082b080808ul, 0x192b191908080819ul, 0x192b191908081908ul, 0x192b191908190808ul,
    0x192b191919080808ul, 0x192b191919082b2bul, 0x192b1919192b2b08ul, 0x192b19192b19082bul,
    0x192b192b08080808ul, 0x192b192b2b191908ul, 0x192b2b0808080819ul, 0x192b2b0808081908ul,
    0x192b2b0808190808ul, 0x192b2b08192b1919ul, 0x192b2b082b192b08ul, 0x192b2b1908080808ul,
    0x192b2b19082b2b2bul, 0x192b2b2b1908082bul, 0x192b2b2b2b2b0819ul, 0x2b08080808080808ul,
    0x2b0808080808082bul, 0x2b08080808081919ul, 0x2b08080808082b08ul, 0x2b08080808190819ul,
    0x2b08080808191908ul, 0x2b08080808192b19ul, 0x2b080808082b0808ul, 0x2b080808082b1919ul,
    0x2b08080819080819ul, 0x2b08080819081908ul, 0x2b08080819190808ul, 0x2b0808081919082bul,
    0x2b08080819191919ul, 0x2b08080819192b08ul, 0x2b080808192b0819ul, 0x2b0808082b080808ul,
    0x2b0808082b081919ul, 0x2b0808082b190819ul, 0x2b0808082b191908ul, 0x2b08081908080819ul,
    0x2b08081908081908ul, 0x2b08081908082b19ul, 0x2b08081908190808ul, 0x2b0808190819082bul,
    0x2b08081908191919ul, 0x2b08081908192b08ul, 0x2b080819082b0819ul, 0x2b080819082b1908ul,
    0x2b08081919080808ul, 0x2b0808191908082bul, 0x2b08081919081919ul, 0x2b08081919082b08ul,
    0x2b08081919190819ul, 0x2b08081919191908ul, 0x2b0808192b080819ul, 0x2b0808192b081908ul,
    0x2b0808192b190808ul, 0x2b0808192b2b2b19ul, 0x2b08082b08080808ul, 0x2b08082b08081919ul,
    0x2b08082b08082b2bul, 0x2b08082b08190819ul, 0x2b08082b08191908ul, 0x2b08082b19080819ul,
    0x2b08082b19081908ul, 0x2b08082b19190808ul, 0x2b08190808080819ul, 0x2b08190808081908ul,
    0x2b0819080808192bul, 0x2b08190808082b19ul, 0x2b08190808190808ul, 0x2b0819080819082bul,
    0x2b08190808191919ul, 0x2b08190808192b08ul, 0x2b081908082b0819ul, 0x2b08190819080808ul,
    0x2b0819081908082bul, 0x2b08190819081919ul, 0x2b08190819082b08ul, 0x2b08190819190819ul,
    0x2b08190819191908ul, 0x2b081908192b0808ul, 0x2b0819082b080819ul, 0x2b0819082b081908ul,
    0x2b0819082b190808ul, 0x2b08191908080808ul, 0x2b0819190808082bul, 0x2b08191908081919ul,
    0x2b08191908082b08ul, 0x2b08191908190819ul, 0x2b08191908191908ul, 0x2b081919082b0808ul,
    0x2b08191919080819ul, 0x2b08191919081908ul, 0x2b08191919190808ul, 0x2b0819192b080808ul,
    0x2b0819192b082b2bul, 0x2b08192b08080819ul, 0x2b08192b08081908ul, 0x2b08192b08190808ul,
    0x2b08192b082b2b19ul, 0x2b08192b19080808ul, 0x2b082b0808080808ul, 0x2b082b0808081919ul,
    0x2b082b0808190819ul, 0x2b082b0808191908ul, 0x2b082b0819080819ul, 0x2b082b0819081908ul,
    0x2b082b0819190808ul, 0x2b082b082b2b082bul, 0x2b082b1908080819ul, 0x2b082b1908081908ul,
    0x2b082b1919080808ul, 0x2b082b19192b1919ul, 0x2b082b2b082b082bul, 0x2b082b2b19192b08ul,
    0x2b082b2b19192b2bul, 0x2b082b2b2b08082bul, 0x2b082b2b2b2b082bul, 0x2b19080808080819ul,
    0x2b19080808081908ul, 0x2b19080808082b19ul, 0x2b19080808190808ul, 0x2b1908080819082bul,
    0x2b19080808191919ul, 0x2b19080808192b08ul, 0x2b190808082b1908ul, 0x2b19080819080808ul,
    0x2b1908081908082bul, 0x2b19080819081919ul, 0x2b19080819082b08ul, 0x2b19080819190819ul,
    0x2b19080819191908ul, 0x2b190808192b0808ul, 0x2b1908082b080819ul, 0x2b1908082b081908ul,
    0x2b1908082b190808ul, 0x2b19081908080808ul, 0x2b19081908081919ul, 0x2b19081908190819ul,
    0x2b19081908191908ul, 0x2b19081919080819ul, 0x2b19081919081908ul, 0x2b19081919190808ul,
    0x2b19081919192b2bul, 0x2b19082b08080819ul, 0x2b19082b08081908ul, 0x2b19082b08190808ul,
    0x2b19082b19080808ul, 0x2b19082b2b2b192bul, 0x2b19190808080808ul, 0x2b1919080808082bul,
    0x2b19190808081919ul, 0x2b19190808082b08ul, 0x2b19190808190819ul, 0x2b19190808191908ul,
    0x2b191908082b0808ul, 0x2b19190819080819ul, 0x2b19190819081908ul, 0x2b19190819190808ul,
    0x2b1919082b080808ul, 0x2b1919082b19192bul, 0x2b19191908080819ul, 0x2b19191908081908ul,
    0x2b19191908190808ul, 0x2b19191919080808ul, 0x2b1919192b192b08ul, 0x2b1919192b2b0819ul,
    0x2b19192b08080808ul, 0x2b19192b1908192bul, 0x2b19192b192b1908ul, 0x2b192b0808080819ul,
    0x2b192b0808081908ul, 0x2b192b0808190808ul, 0x2b192b08082b192bul, 0x2b192b0819080808ul,
    0x2b192b082b2b2b19ul, 0x2b192b1908080808ul, 0x2b192b1919082b19ul, 0x2b192b191919082bul,
    0x2b192b2b2b190808ul, 0x2b2b080808080808ul, 0x2b2b080808081919ul, 0x2b2b080808082b2bul,
    0x2b2b080808191908ul, 0x2b2b0808082b082bul, 0x2b2b0808082b2b2bul, 0x2b2b080819080819ul,
    0x2b2b080819081908ul, 0x2b2b080819190808ul, 0x2b2b08082b2b082bul, 0x2b2b08082b2b2b2bul,
    0x2b2b081919080808ul, 0x2b2b0819192b1919ul, 0x2b2b082b0808082bul, 0x2b2b082b08082b2bul,
    0x2b2b082b082b082bul, 0x2b2b082b082b2b08ul, 0x2b2b082b082b2b2bul, 0x2b2b082b2b08082bul,
    0x2b2b082b2b082b08ul, 0x2b2b082b2b082b2bul, 0x2b2b082b2b2b2b08ul, 0x2b2b190808080819ul,
    0x2b2b190808081908ul, 0x2b2b190808190808ul, 0x2b2b190819080808ul, 0x2b2b19082b082b19ul,
    0x2b2b19082b2b1908ul, 0x2b2b191908080808ul, 0x2b2b191908192b19ul, 0x2b2b192b19190819ul,
    0x2b2b2b0808082b2bul, 0x2b2b2b08082b2b08ul, 0x2b2b2b082b2b082bul, 0x2b2b2b1919191908ul,
    0x2b2b2b192b08192bul, 0x2b2b2b2b08082b08ul, 0x2b2b2b2b08082b2bul, 0x2b2b2b2b082b0808ul,
    0x2b2b2b2b082b082bul, 0x2b2b2b2b082b2b08ul, 0x2b2b2b2b2b082b08ul, 0x2b2b2b2b2b2b2b2bul,
};
constant ulong iq1s_grid[2048] = {
    0xfffffffffffffffful, 0xffffffffffffff01ul, 0xffffffffffff0000ul, 0xffffffffffff01fful,
    0xffffffffffff0101ul, 0xffffffffff00ff00ul, 0xffffffffff000000ul, 0xffffffffff01fffful,
    0xffffffffff01ff01ul, 0xffffffffff0101fful, 0xffffffffff010101ul, 0xffffffff00ff0000ul,
    0xffffffff0000ff00ul, 0xffffffff000000fful, 0xffffffff00000001ul, 0xffffffff00010000ul,
    0xffffffff01fffffful, 0xffffffff01ffff01ul, 0xffffffff01ff01fful, 0xffffffff01ff0101ul,
    0xffffffff01000000ul, 0xffffffff0101fffful, 0xffffffff0101ff01ul, 0xffffffff010101fful,
    0xffffffff01010101ul, 0xffffff00ffff00fful, 0xffffff00ffff0000ul, 0xffffff00ff00ff00ul,
    0xffffff00ff0000fful, 0xffffff00ff000001ul, 0xffffff00ff000100ul, 0xffffff00ff000101ul,
    0xffffff00ff010000ul, 0xffffff0000ffff00ul, 0xffffff0000ff0001ul, 0xffffff0000ff0100ul,
    0xffffff000000ff01ul, 0xffffff0000000000ul, 0xffffff0000000101ul, 0xffffff000001ff00ul,
    0xffffff00000100fful, 0xffffff0000010001ul, 0xffffff00000101fful, 0xffffff0001ff0000ul,
    0xffffff000100ff00ul, 0xffffff00010000fful, 0xffffff0001000001ul, 0xffffff0001010000ul,
    0xffffff01fffffffful, 0xffffff01ffffff01ul, 0xffffff01ffff01fful, 0xffffff01ffff0101ul,
    0xffffff01ff000000ul, 0xffffff01ff01fffful, 0xffffff01ff01ff01ul, 0xffffff01ff0101fful,
    0xffffff01ff010101ul, 0xffffff0100ff0000ul, 0xffffff010000ff00ul, 0xffffff0100000100ul,
    0xffffff01000100fful, 0xffffff0100010100ul, 0xffffff0101fffffful, 0xffffff0101ffff01ul,
    0xffffff0101ff01fful, 0xffffff0101ff0101ul, 0xffffff010100ff00ul, 0xffffff0101000000ul,
    0xffffff0101000100ul, 0xffffff010101fffful, 0xffffff010101ff01ul, 0xffffff01010101fful,
    0xffffff0101010101ul, 0xffff00ffff00ff00ul, 0xffff00ffff0000fful, 0xffff00ffff000001ul,
    0xffff00ffff010000ul, 0xffff00ff00ffff00ul, 0xffff00ff00ff0100ul, 0xffff00ff00000000ul,
    0xffff00ff00000101ul, 0xffff00ff000100fful, 0xffff00ff00010000ul, 0xffff00ff0100ff00ul,
    0xffff00ff01000100ul, 0xffff00ff01010000ul, 0xffff0000ffffff00ul, 0xffff0000ffff00fful,
    0xffff0000ffff0000ul, 0xffff0000ffff0001ul, 0xffff0000ff000000ul, 0xffff0000ff0001fful,
    0xffff0000ff000101ul, 0xffff0000ff010100ul, 0xffff000000fffffful, 0xffff000000ff0000ul,
    0xffff000000ff0101ul, 0xffff00000000fffful, 0xffff00000000ff00ul, 0xffff0000000000fful,
    0xffff000000000000ul, 0xffff000000000001ul, 0xffff000000000100ul, 0xffff00000001fffful,
    0xffff00000001ff01ul, 0xffff000000010000ul, 0xffff0000000101fful, 0xffff000000010101ul,
    0xffff000001ffff00ul, 0xffff00000100ff00ul, 0xffff000001000000ul, 0xffff0000010001fful,
    0xffff000001000101ul, 0xffff00000101ff00ul, 0xffff0000010100fful, 0xffff000001010000ul,
    0xffff000001010001ul, 0xffff000001010100ul, 0xffff0001ff0000fful, 0xffff0001ff000100ul,
    0xffff000100ffff00ul, 0xffff000100ff00fful, 0xffff00010000fffful, 0xffff00010000ff01ul,
    0xffff000100000000ul, 0xffff0001000001fful, 0xffff00010001fffful, 0xffff00010001ff00ul,
    0xffff000100010001ul, 0xffff000100010100ul, 0xffff000101ff0000ul, 0xffff00010100ff00ul,
    0xffff0001010000fful, 0xffff000101000100ul, 0xffff01fffffffffful, 0xffff01ffffffff01ul,
    0xffff01ffffff01fful, 0xffff01ffffff0101ul, 0xffff01ffff000000ul, 0xffff01ffff01fffful,
    0xffff01ffff01ff01ul, 0xffff01ffff0101fful, 0xffff01ffff010101ul, 0xffff01ff00ff0000ul,
    0xffff01ff0000ff00ul, 0xffff01ff00000001ul, 0xffff01ff00010000ul, 0xffff01ff01fffffful,
    0xffff01ff01ffff01ul, 0xffff01ff01ff01fful, 0xffff01ff01ff0101ul, 0xffff01ff01000000ul,
    0xffff01ff0101fffful, 0xffff01ff0101ff01ul, 0xffff01ff010101fful, 0xffff01ff01010101ul,
    0xffff0100ffff0000ul, 0xffff0100ff00ff00ul, 0xffff0100ff0000fful, 0xffff0100ff000100ul,
    0xffff0100ff0100fful, 0xffff0100ff010000ul, 0xffff010000ffff00ul, 0xffff01000000fffful,
    0xffff01000000ff00ul, 0xffff010000000000ul, 0xffff01000001ff00ul, 0xffff0100000100fful,
    0xffff010000010100ul, 0xffff01000100ff00ul, 0xffff0100010000fful, 0xffff010001000001ul,
    0xffff010001000100ul, 0xffff010001010000ul, 0xffff0101fffffffful, 0xffff0101ffffff01ul,
    0xffff0101ffff01fful, 0xffff0101ffff0101ul, 0xffff0101ff000000ul, 0xffff0101ff01fffful,
    0xffff0101ff01ff01ul, 0xffff0101ff0101fful, 0xffff0101ff010101ul, 0xffff010100ff0000ul,
    0xffff01010000ff00ul, 0xffff010100000100ul, 0xffff01010001ff00ul, 0xffff010100010000ul,
    0xffff010101fffffful, 0xffff010101ffff01ul, 0xffff010101ff0000ul, 0xffff010101ff01fful,
    0xffff010101ff0101ul, 0xffff010101000000ul, 0xffff01010101fffful, 0xffff01010101ff01ul,
    0xffff0101010101fful, 0xffff010101010101ul, 0xff00ffffff00fffful, 0xff00ffffff00ff00ul,
    0xff00ffffff0000fful, 0xff00ffffff000100ul, 0xff00ffffff0100fful, 0xff00ffffff010000ul,
    0xff00ffff00ffff00ul, 0xff00ffff00ff00fful, 0xff00ffff0000fffful, 0xff00ffff00000000ul,
    0xff00ffff000001fful, 0xff00ffff0001ff00ul, 0xff00ffff000100fful, 0xff00ffff00010000ul,
    0xff00ffff00010100ul, 0xff00ffff0100ff00ul, 0xff00ffff010000fful, 0xff00ffff01000001ul,
    0xff00ffff0101ff00ul, 0xff00ffff01010000ul, 0xff00ff00ffffff00ul, 0xff00ff00ffff00fful,
    0xff00ff00ffff0001ul, 0xff00ff00ffff0100ul, 0xff00ff00ff00fffful, 0xff00ff00ff00ff01ul,
    0xff00ff00ff000000ul, 0xff00ff00ff0001fful, 0xff00ff00ff01ff00ul, 0xff00ff00ff0100fful,
    0xff00ff00ff010100ul, 0xff00ff0000ff0000ul, 0xff00ff0000ff0101ul, 0xff00ff000000fffful,
    0xff00ff000000ff00ul, 0xff00ff000000ff01ul, 0xff00ff00000000fful, 0xff00ff0000000000ul,
    0xff00ff0000000001ul, 0xff00ff0000000100ul, 0xff00ff000001fffful, 0xff00ff0000010000ul,
    0xff00ff0001ff00fful, 0xff00ff000100ff01ul, 0xff00ff0001000000ul, 0xff00ff000101ff00ul,
    0xff00ff00010100fful, 0xff00ff01ff00ff00ul, 0xff00ff01ff0000fful, 0xff00ff01ff000001ul,
    0xff00ff01ff010000ul, 0xff00ff0100fffffful, 0xff00ff0100ff0001ul, 0xff00ff0100ff0100ul,
    0xff00ff010000ff01ul, 0xff00ff0100000000ul, 0xff00ff01000001fful, 0xff00ff0100000101ul,
    0xff00ff01000100fful, 0xff00ff0100010001ul, 0xff00ff0101ff0000ul, 0xff00ff010100ff00ul,
    0xff00ff01010000fful, 0xff00ff0101000001ul, 0xff00ff0101010000ul, 0xff0000ffffffff00ul,
    0xff0000ffffff0001ul, 0xff0000ffffff0100ul, 0xff0000ffff0000fful, 0xff0000ffff000000ul,
    0xff0000ffff0001fful, 0xff0000ffff000100ul, 0xff0000ffff01ff00ul, 0xff0000ffff010001ul,
    0xff0000ff00ffff00ul, 0xff0000ff00ff0000ul, 0xff0000ff00ff0001ul, 0xff0000ff00ff01fful,
    0xff0000ff00ff0101ul, 0xff0000ff0000ff00ul, 0xff0000ff000000fful, 0xff0000ff00000000ul,
    0xff0000ff00000001ul, 0xff0000ff00000100ul, 0xff0000ff0001ff01ul, 0xff0000ff00010000ul,
    0xff0000ff000101fful, 0xff0000ff01ff00fful, 0xff0000ff01ff0100ul, 0xff0000ff0100fffful,
    0xff0000ff010000fful, 0xff0000ff01000000ul, 0xff0000ff010001fful, 0xff0000ff01000100ul,
    0xff0000ff01000101ul, 0xff0000ff0101ff00ul, 0xff0000ff010100fful, 0xff0000ff01010000ul,
    0xff0000ff01010100ul, 0xff000000ffffff01ul, 0xff000000ffff0000ul, 0xff000000ffff0101ul,
    0xff000000ff00ff00ul, 0xff000000ff0000fful, 0xff000000ff000000ul, 0xff000000ff000001ul,
    0xff000000ff000100ul, 0xff000000ff01fffful, 0xff000000ff01ff01ul, 0xff000000ff010000ul,
    0xff000000ff0101fful, 0xff000000ff010101ul, 0xff00000000ffff00ul, 0xff00000000ff00fful,
    0xff00000000ff0000ul, 0xff00000000ff0001ul, 0xff0000000000ff00ul, 0xff0000000000ff01ul,
    0xff000000000000fful, 0xff00000000000000ul, 0xff00000000000001ul, 0xff00000000000100ul,
    0xff00000000000101ul, 0xff0000000001ff00ul, 0xff000000000100fful, 0xff00000000010000ul,
    0xff00000000010001ul, 0xff00000000010100ul, 0xff00000001fffffful, 0xff00000001ffff01ul,
    0xff00000001ff00fful, 0xff00000001ff0000ul, 0xff00000001ff01fful, 0xff00000001ff0101ul,
    0xff0000000100fffful, 0xff0000000100ff00ul, 0xff000000010000fful, 0xff00000001000000ul,
    0xff00000001000001ul, 0xff00000001000100ul, 0xff00000001000101ul, 0xff0000000101fffful,
    0xff0000000101ff01ul, 0xff00000001010000ul, 0xff000001ffffff00ul, 0xff000001ffff00fful,
    0xff000001ffff0000ul, 0xff000001ffff0001ul, 0xff000001ff000000ul, 0xff000001ff000001ul,
    0xff000001ff0001fful, 0xff000001ff000101ul, 0xff000001ff01ff00ul, 0xff000001ff010001ul,
    0xff00000100fffffful, 0xff00000100ffff01ul, 0xff00000100ff00fful, 0xff00000100ff0000ul,
    0xff00000100ff01fful, 0xff00000100ff0101ul, 0xff0000010000ff00ul, 0xff00000100000000ul,
    0xff00000100000001ul, 0xff000001000001fful, 0xff00000100000100ul, 0xff0000010001ff00ul,
    0xff000001000100fful, 0xff00000100010000ul, 0xff000001000101fful, 0xff00000100010100ul,
    0xff00000100010101ul, 0xff00000101ff0001ul, 0xff00000101ff0101ul, 0xff0000010100ff01ul,
    0xff00000101000000ul, 0xff000001010100fful, 0xff00000101010100ul, 0xff0001ffff00ff00ul,
    0xff0001ffff000001ul, 0xff0001ffff010000ul, 0xff0001ff00ffff00ul, 0xff0001ff00ff00fful,
    0xff0001ff00ff0001ul, 0xff0001ff00ff0100ul, 0xff0001ff0000fffful, 0xff0001ff00000000ul,
    0xff0001ff000001fful, 0xff0001ff00000101ul, 0xff0001ff0001fffful, 0xff0001ff0001ff00ul,
    0xff0001ff000100fful, 0xff0001ff00010001ul, 0xff0001ff00010100ul, 0xff0001ff01ff0000ul,
    0xff0001ff0100ff00ul, 0xff0001ff010000fful, 0xff0001ff01010000ul, 0xff000100ff00fffful,
    0xff000100ff00ff01ul, 0xff000100ff000000ul, 0xff000100ff000101ul, 0xff000100ff01ff00ul,
    0xff000100ff010000ul, 0xff00010000ffff01ul, 0xff00010000ff00fful, 0xff00010000ff0000ul,
    0xff00010000ff01fful, 0xff0001000000ff00ul, 0xff000100000000fful, 0xff00010000000000ul,
    0xff00010000000001ul, 0xff00010000000100ul, 0xff00010000000101ul, 0xff0001000001fffful,
    0xff00010000010000ul, 0xff00010000010101ul, 0xff00010001ff0100ul, 0xff0001000100ff00ul,
    0xff0001000100ff01ul, 0xff00010001000000ul, 0xff000100010001fful, 0xff0001000101ff00ul,
    0xff00010001010001ul, 0xff00010001010100ul, 0xff000101ffff0100ul, 0xff000101ff000001ul,
    0xff000101ff0100fful, 0xff000101ff010001ul, 0xff00010100ff00fful, 0xff00010100ff0001ul,
    0xff00010100ff0100ul, 0xff0001010000fffful, 0xff0001010000ff01ul, 0xff00010100000000ul,
    0xff000101000001fful, 0xff0001010001ff00ul, 0xff00010100010001ul, 0xff00010100010100ul,
    0xff00010101ff0000ul, 0xff0001010100ff00ul, 0xff00010101000001ul, 0xff00010101000101ul,
    0xff01fffffffffffful, 0xff01ffffffffff01ul, 0xff01ffffffff01fful, 0xff01ffffffff0101ul,
    0xff01ffffff000000ul, 0xff01ffffff01fffful, 0xff01ffffff01ff01ul, 0xff01ffffff010000ul,
    0xff01ffffff0101fful, 0xff01ffffff010101ul, 0xff01ffff00ff0000ul, 0xff01ffff0000ff00ul,
    0xff01ffff00000100ul, 0xff01ffff0001ff00ul, 0xff01ffff00010000ul, 0xff01ffff01fffffful,
    0xff01ffff01ffff01ul, 0xff01ffff01ff01fful, 0xff01ffff01ff0101ul, 0xff01ffff01000000ul,
    0xff01ffff0101fffful, 0xff01ffff0101ff01ul, 0xff01ffff01010000ul, 0xff01ffff010101fful,
    0xff01ffff01010101ul, 0xff01ff00ffff0000ul, 0xff01ff00ff00ff00ul, 0xff01ff00ff0000fful,
    0xff01ff00ff000100ul, 0xff01ff00ff010000ul, 0xff01ff0000ffff01ul, 0xff01ff0000ff00fful,
    0xff01ff0000ff0100ul, 0xff01ff0000000000ul, 0xff01ff00000001fful, 0xff01ff0000000101ul,
    0xff01ff000001ff00ul, 0xff01ff00000100fful, 0xff01ff0000010000ul, 0xff01ff0000010001ul,
    0xff01ff0001ff0000ul, 0xff01ff000100fffful, 0xff01ff0001000001ul, 0xff01ff0001000100ul,
    0xff01ff0001010000ul, 0xff01ff01ffffff00ul, 0xff01ff01ffff01fful, 0xff01ff01ffff0101ul,
    0xff01ff01ff00ff00ul, 0xff01ff01ff000000ul, 0xff01ff01ff01fffful, 0xff01ff01ff01ff01ul,
    0xff01ff01ff0101fful, 0xff01ff01ff010101ul, 0xff01ff0100ff0000ul, 0xff01ff010000ff00ul,
    0xff01ff0100000001ul, 0xff01ff0100000100ul, 0xff01ff0100010000ul, 0xff01ff0101ffff00ul,
    0xff01ff0101ff01fful, 0xff01ff0101ff0101ul, 0xff01ff010100ff00ul, 0xff01ff0101000000ul,
    0xff01ff010101fffful, 0xff01ff010101ff01ul, 0xff01ff01010101fful, 0xff01ff0101010101ul,
    0xff0100ffffff0000ul, 0xff0100ffff0000fful, 0xff0100ffff000001ul, 0xff0100ffff000100ul,
    0xff0100ffff010000ul, 0xff0100ff00ff00fful, 0xff0100ff00ff0000ul, 0xff0100ff00ff0001ul,
    0xff0100ff00ff0100ul, 0xff0100ff0000ff01ul, 0xff0100ff00000000ul, 0xff0100ff000001fful,
    0xff0100ff00000101ul, 0xff0100ff00010001ul, 0xff0100ff01ff0000ul, 0xff0100ff0100ff00ul,
    0xff0100ff010000fful, 0xff0100ff01000100ul, 0xff0100ff0101ff00ul, 0xff0100ff01010000ul,
    0xff010000ffff0100ul, 0xff010000ff000000ul, 0xff010000ff01ff00ul, 0xff010000ff010100ul,
    0xff01000000fffffful, 0xff01000000ff0000ul, 0xff01000000ff01fful, 0xff0100000000ff00ul,
    0xff010000000000fful, 0xff01000000000000ul, 0xff01000000000100ul, 0xff0100000001ff01ul,
    0xff01000000010000ul, 0xff010000000101fful, 0xff01000001ff0100ul, 0xff0100000100fffful,
    0xff010000010000fful, 0xff01000001000000ul, 0xff010000010001fful, 0xff01000001000101ul,
    0xff0100000101ff00ul, 0xff010000010100fful, 0xff01000001010001ul, 0xff01000001010100ul,
    0xff010001ffff0000ul, 0xff010001ff00fffful, 0xff010001ff00ff01ul, 0xff010001ff000100ul,
    0xff010001ff010000ul, 0xff01000100ffff00ul, 0xff01000100ff0100ul, 0xff01000100000000ul,
    0xff0100010001fffful, 0xff0100010001ff00ul, 0xff01000100010100ul, 0xff01000101ff00fful,
    0xff01000101ff0001ul, 0xff0100010100fffful, 0xff01000101000101ul, 0xff0101fffffffffful,
    0xff0101ffffffff01ul, 0xff0101ffffff01fful, 0xff0101ffffff0101ul, 0xff0101ffff000000ul,
    0xff0101ffff01fffful, 0xff0101ffff01ff01ul, 0xff0101ffff0101fful, 0xff0101ffff010101ul,
    0xff0101ff00ff0000ul, 0xff0101ff0000ff00ul, 0xff0101ff000000fful, 0xff0101ff00010000ul,
    0xff0101ff01fffffful, 0xff0101ff01ffff01ul, 0xff0101ff01ff01fful, 0xff0101ff01ff0101ul,
    0xff0101ff0101fffful, 0xff0101ff0101ff01ul, 0xff0101ff010101fful, 0xff0101ff01010101ul,
    0xff010100ffff0100ul, 0xff010100ff00ff00ul, 0xff010100ff0000fful, 0xff010100ff000100ul,
    0xff010100ff010000ul, 0xff01010000ff0001ul, 0xff01010000ff0100ul, 0xff0101000000ff01ul,
    0xff01010000000000ul, 0xff0101000001ff00ul, 0xff010100000100fful, 0xff01010000010001ul,
    0xff01010000010100ul, 0xff01010001ff0000ul, 0xff0101000100fffful, 0xff01010001000001ul,
    0xff01010001000100ul, 0xff010100010100fful, 0xff01010001010000ul, 0xff010101fffffffful,
    0xff010101ffffff01ul, 0xff010101ffff01fful, 0xff010101ffff0101ul, 0xff010101ff01fffful,
    0xff010101ff01ff01ul, 0xff010101ff0101fful, 0xff010101ff010101ul, 0xff01010100ff0000ul,
    0xff0101010000ff00ul, 0xff01010100000001ul, 0xff01010100000100ul, 0xff01010100010000ul,
    0xff01010101fffffful, 0xff01010101ffff01ul, 0xff01010101ff01fful, 0xff01010101ff0101ul,
    0xff01010101000000ul, 0xff0101010101fffful, 0xff0101010101ff01ul, 0xff010101010101fful,
    0xff01010101010101ul, 0x00ffffffffff0000ul, 0x00ffffffff00ff00ul, 0x00ffffffff000001ul,
    0x00ffffffff010000ul, 0x00ffffff00ff0100ul, 0x00ffffff0000ff01ul, 0x00ffffff00000000ul,
    0x00ffffff000001fful, 0x00ffffff00000101ul, 0x00ffffff0001ff00ul, 0x00ffffff000100fful,
    0x00ffffff00010001ul, 0x00ffffff010000fful, 0x00ffffff01000100ul, 0x00ffffff0101ff00ul,
    0x00ffffff01010001ul, 0x00ffff00fffffffful, 0x00ffff00ffffff00ul, 0x00ffff00ffff00fful,
    0x00ffff00ffff0001ul, 0x00ffff00ffff0100ul, 0x00ffff00ff00ff01ul, 0x00ffff00ff000000ul,
    0x00ffff00ff000001ul, 0x00ffff00ff0001fful, 0x00ffff00ff000101ul, 0x00ffff00ff01ff00ul,
    0x00ffff00ff010001ul, 0x00ffff00ff010100ul, 0x00ffff0000ff0000ul, 0x00ffff0000ff01fful,
    0x00ffff0000ff0101ul, 0x00ffff000000ff00ul, 0x00ffff00000000fful, 0x00ffff0000000000ul,
    0x00ffff0000000001ul, 0x00ffff0000000100ul, 0x00ffff0000000101ul, 0x00ffff0000010000ul,
    0x00ffff00000101fful, 0x00ffff0000010101ul, 0x00ffff0001ffff00ul, 0x00ffff0001ff00fful,
    0x00ffff0001ff0001ul, 0x00ffff000100fffful, 0x00ffff000100ff01ul, 0x00ffff0001000000ul,
    0x00ffff000101fffful, 0x00ffff000101ff00ul, 0x00ffff000101ff01ul, 0x00ffff01ffff0000ul,
    0x00ffff01ff00ff00ul, 0x00ffff01ff0000fful, 0x00ffff01ff000001ul, 0x00ffff01ff010000ul,
    0x00ffff0100ffff00ul, 0x00ffff010000ff01ul, 0x00ffff0100000000ul, 0x00ffff0100000101ul,
    0x00ffff01000100fful, 0x00ffff0100010100ul, 0x00ffff0101ff0100ul, 0x00ffff01010000fful,
    0x00ffff0101010000ul, 0x00ff00ffffffff00ul, 0x00ff00ffff000000ul, 0x00ff00ffff000100ul,
    0x00ff00ffff010100ul, 0x00ff00ff00ff0000ul, 0x00ff00ff00ff01fful, 0x00ff00ff00ff0101ul,
    0x00ff00ff0000ff00ul, 0x00ff00ff000000fful, 0x00ff00ff00000000ul, 0x00ff00ff00000001ul,
    0x00ff00ff0001ff00ul, 0x00ff00ff0001ff01ul, 0x00ff00ff00010000ul, 0x00ff00ff000101fful,
    0x00ff00ff00010101ul, 0x00ff00ff01ffff00ul, 0x00ff00ff01ff0001ul, 0x00ff00ff01ff0100ul,
    0x00ff00ff0100fffful, 0x00ff00ff0100ff01ul, 0x00ff00ff01000000ul, 0x00ff00ff0101fffful,
    0x00ff00ff0101ff00ul, 0x00ff00ff01010100ul, 0x00ff0000ffffff00ul, 0x00ff0000ffffff01ul,
    0x00ff0000ffff0000ul, 0x00ff0000ffff0101ul, 0x00ff0000ff00ff00ul, 0x00ff0000ff0000fful,
    0x00ff0000ff000000ul, 0x00ff0000ff000001ul, 0x00ff0000ff000100ul, 0x00ff0000ff01fffful,
    0x00ff0000ff010000ul, 0x00ff0000ff010101ul, 0x00ff000000ffff00ul, 0x00ff000000ff00fful,
    0x00ff000000ff0000ul, 0x00ff000000ff0001ul, 0x00ff000000ff0100ul, 0x00ff00000000fffful,
    0x00ff00000000ff00ul, 0x00ff0000000000fful, 0x00ff000000000000ul, 0x00ff000000000001ul,
    0x00ff0000000001fful, 0x00ff000000000100ul, 0x00ff00000001ff00ul, 0x00ff0000000100fful,
    0x00ff000000010000ul, 0x00ff000000010001ul, 0x00ff000000010100ul, 0x00ff000001ffff01ul,
    0x00ff000001ff00fful, 0x00ff000001ff0000ul, 0x00ff000001ff01fful, 0x00ff00000100ff00ul,
    0x00ff0000010000fful, 0x00ff000001000000ul, 0x00ff000001000001ul, 0x00ff000001000100ul,
    0x00ff000001000101ul, 0x00ff000001010000ul, 0x00ff0000010101fful, 0x00ff000001010101ul,
    0x00ff0001ffffff00ul, 0x00ff0001ffff0000ul, 0x00ff0001ffff0100ul, 0x00ff0001ff0000fful,
    0x00ff0001ff000000ul, 0x00ff0001ff0001fful, 0x00ff0001ff000101ul, 0x00ff0001ff01ff00ul,
    0x00ff0001ff0100fful, 0x00ff0001ff010100ul, 0x00ff000100fffffful, 0x00ff000100ffff01ul,
    0x00ff000100ff0000ul, 0x00ff000100ff01fful, 0x00ff00010000fffful, 0x00ff00010000ff00ul,
    0x00ff00010000ff01ul, 0x00ff000100000000ul, 0x00ff000100000001ul, 0x00ff000100000100ul,
    0x00ff00010001ff01ul, 0x00ff000100010000ul, 0x00ff0001000101fful, 0x00ff000101ffff00ul,
    0x00ff000101ff0000ul, 0x00ff000101ff0101ul, 0x00ff0001010000fful, 0x00ff000101000000ul,
    0x00ff00010101ff00ul, 0x00ff0001010100fful, 0x00ff000101010001ul, 0x00ff01ffffff0000ul,
    0x00ff01ffff00ff00ul, 0x00ff01ffff000000ul, 0x00ff01ffff000101ul, 0x00ff01ffff010000ul,
    0x00ff01ff00ffff01ul, 0x00ff01ff00ff0100ul, 0x00ff01ff0000fffful, 0x00ff01ff00000000ul,
    0x00ff01ff000001fful, 0x00ff01ff0001ff00ul, 0x00ff01ff000100fful, 0x00ff01ff00010001ul,
    0x00ff01ff00010100ul, 0x00ff01ff01ff0000ul, 0x00ff01ff0100ff00ul, 0x00ff01ff010000fful,
    0x00ff01ff01000001ul, 0x00ff01ff01000100ul, 0x00ff01ff01010000ul, 0x00ff0100ffffff00ul,
    0x00ff0100ffff0000ul, 0x00ff0100ffff0001ul, 0x00ff0100ffff0101ul, 0x00ff0100ff00fffful,
    0x00ff0100ff0000fful, 0x00ff0100ff000000ul, 0x00ff0100ff0001fful, 0x00ff0100ff01ff00ul,
    0x00ff0100ff0100fful, 0x00ff0100ff010001ul, 0x00ff010000fffffful, 0x00ff010000ff0000ul,
    0x00ff010000ff0101ul, 0x00ff01000000ff00ul, 0x00ff01000000ff01ul, 0x00ff0100000000fful,
    0x00ff010000000000ul, 0x00ff010000000001ul, 0x00ff010000000100ul, 0x00ff01000001fffful,
    0x00ff01000001ff01ul, 0x00ff010000010000ul, 0x00ff010000010001ul, 0x00ff010000010101ul,
    0x00ff010001ff0001ul, 0x00ff010001ff0100ul, 0x00ff01000100ff01ul, 0x00ff010001000000ul,
    0x00ff010001000001ul, 0x00ff0100010001fful, 0x00ff01000101ff00ul, 0x00ff0100010100fful,
    0x00ff010001010001ul, 0x00ff010001010100ul, 0x00ff0101ff000001ul, 0x00ff010100ff00fful,
    0x00ff010100ff0001ul, 0x00ff010100ff0100ul, 0x00ff010100000000ul, 0x00ff0101000001fful,
    0x00ff010100000101ul, 0x00ff0101000100fful, 0x00ff010100010100ul, 0x00ff0101010000fful,
    0x00ff010101010000ul, 0x0000ffffffffff00ul, 0x0000ffffffff00fful, 0x0000ffffffff0000ul,
    0x0000ffffffff0001ul, 0x0000ffffffff0100ul, 0x0000ffffff00ff01ul, 0x0000ffffff000000ul,
    0x0000ffffff000101ul, 0x0000ffffff01ff00ul, 0x0000ffffff0100fful, 0x0000ffffff010100ul,
    0x0000ffff00fffffful, 0x0000ffff00ff0000ul, 0x0000ffff00ff01fful, 0x0000ffff0000ff00ul,
    0x0000ffff000000fful, 0x0000ffff00000000ul, 0x0000ffff00000001ul, 0x0000ffff00000100ul,
    0x0000ffff00010000ul, 0x0000ffff000101fful, 0x0000ffff01ff0001ul, 0x0000ffff01ff0100ul,
    0x0000ffff01000000ul, 0x0000ffff010001fful, 0x0000ffff0101fffful, 0x0000ffff0101ff00ul,
    0x0000ffff01010001ul, 0x0000ffff01010100ul, 0x0000ff00ffff0000ul, 0x0000ff00ffff01fful,
    0x0000ff00ffff0100ul, 0x0000ff00ffff0101ul, 0x0000ff00ff00ff00ul, 0x0000ff00ff0000fful,
    0x0000ff00ff000000ul, 0x0000ff00ff000001ul, 0x0000ff00ff0001fful, 0x0000ff00ff000100ul,
    0x0000ff00ff01fffful, 0x0000ff00ff010000ul, 0x0000ff00ff010001ul, 0x0000ff00ff0101fful,
    0x0000ff00ff010101ul, 0x0000ff0000ffff00ul, 0x0000ff0000ff00fful, 0x0000ff0000ff0000ul,
    0x0000ff0000ff0001ul, 0x0000ff0000ff0100ul, 0x0000ff000000fffful, 0x0000ff000000ff00ul,
    0x0000ff000000ff01ul, 0x0000ff00000000fful, 0x0000ff0000000000ul, 0x0000ff0000000001ul,
    0x0000ff00000001fful, 0x0000ff0000000100ul, 0x0000ff0000000101ul, 0x0000ff000001ff00ul,
    0x0000ff00000100fful, 0x0000ff0000010000ul, 0x0000ff0000010001ul, 0x0000ff0000010100ul,
    0x0000ff0001ffff01ul, 0x0000ff0001ff0000ul, 0x0000ff000100ff00ul, 0x0000ff00010000fful,
    0x0000ff0001000000ul, 0x0000ff0001000001ul, 0x0000ff0001000100ul, 0x0000ff000101fffful,
    0x0000ff0001010000ul, 0x0000ff0001010101ul, 0x0000ff01ffffff00ul, 0x0000ff01ffff0001ul,
    0x0000ff01ff00ff01ul, 0x0000ff01ff000000ul, 0x0000ff01ff000101ul, 0x0000ff01ff01ff00ul,
    0x0000ff01ff0100fful, 0x0000ff0100ffff01ul, 0x0000ff0100ff0000ul, 0x0000ff0100ff0101ul,
    0x0000ff010000ff00ul, 0x0000ff01000000fful, 0x0000ff0100000000ul, 0x0000ff0100000001ul,
    0x0000ff0100000100ul, 0x0000ff010001ff01ul, 0x0000ff0100010000ul, 0x0000ff0101ff0000ul,
    0x0000ff010100fffful, 0x0000ff010100ff01ul, 0x0000ff0101000000ul, 0x0000ff0101000100ul,
    0x0000ff0101000101ul, 0x0000ff01010100fful, 0x000000ffffff00fful, 0x000000ffffff0000ul,
    0x000000ffff00ff00ul, 0x000000ffff0000fful, 0x000000ffff000000ul, 0x000000ffff000001ul,
    0x000000ffff0001fful, 0x000000ffff000100ul, 0x000000ffff01ff00ul, 0x000000ffff010000ul,
    0x000000ffff0101fful, 0x000000ffff010101ul, 0x000000ff00ffff00ul, 0x000000ff00ff00fful,
    0x000000ff00ff0000ul, 0x000000ff00ff0001ul, 0x000000ff00ff0100ul, 0x000000ff00ff0101ul,
    0x000000ff0000fffful, 0x000000ff0000ff00ul, 0x000000ff000000fful, 0x000000ff00000000ul,
    0x000000ff00000001ul, 0x000000ff000001fful, 0x000000ff00000100ul, 0x000000ff00000101ul,
    0x000000ff0001ff00ul, 0x000000ff0001ff01ul, 0x000000ff000100fful, 0x000000ff00010000ul,
    0x000000ff00010001ul, 0x000000ff00010100ul, 0x000000ff01fffffful, 0x000000ff01ff01fful,
    0x000000ff01ff0101ul, 0x000000ff0100ff00ul, 0x000000ff010000fful, 0x000000ff01000000ul,
    0x000000ff01000001ul, 0x000000ff01000100ul, 0x000000ff0101ff00ul, 0x000000ff010100fful,
    0x000000ff01010000ul, 0x000000ff01010101ul, 0x00000000ffffff00ul, 0x00000000ffffff01ul,
    0x00000000ffff00fful, 0x00000000ffff0000ul, 0x00000000ffff0001ul, 0x00000000ffff0100ul,
    0x00000000ff00fffful, 0x00000000ff00ff00ul, 0x00000000ff00ff01ul, 0x00000000ff0000fful,
    0x00000000ff000000ul, 0x00000000ff000001ul, 0x00000000ff000100ul, 0x00000000ff000101ul,
    0x00000000ff01ff00ul, 0x00000000ff0100fful, 0x00000000ff010000ul, 0x00000000ff010001ul,
    0x00000000ff010100ul, 0x0000000000fffffful, 0x0000000000ffff00ul, 0x0000000000ffff01ul,
    0x0000000000ff00fful, 0x0000000000ff0000ul, 0x0000000000ff0001ul, 0x0000000000ff01fful,
    0x0000000000ff0100ul, 0x000000000000fffful, 0x000000000000ff00ul, 0x000000000000ff01ul,
    0x00000000000000fful, 0x0000000000000000ul, 0x0000000000000001ul, 0x00000000000001fful,
    0x0000000000000100ul, 0x0000000000000101ul, 0x000000000001fffful, 0x000000000001ff00ul,
    0x00000000000100fful, 0x0000000000010000ul, 0x0000000000010001ul, 0x00000000000101fful,
    0x0000000000010100ul, 0x0000000000010101ul, 0x0000000001ffff00ul, 0x0000000001ff00fful,
    0x0000000001ff0000ul, 0x0000000001ff0100ul, 0x0000000001ff0101ul, 0x000000000100fffful,
    0x000000000100ff00ul, 0x00000000010000fful, 0x0000000001000000ul, 0x0000000001000001ul,
    0x00000000010001fful, 0x0000000001000100ul, 0x000000000101ff00ul, 0x00000000010100fful,
    0x0000000001010000ul, 0x0000000001010001ul, 0x0000000001010100ul, 0x00000001fffffffful,
    0x00000001ffffff00ul, 0x00000001ffffff01ul, 0x00000001ffff00fful, 0x00000001ffff0001ul,
    0x00000001ffff01fful, 0x00000001ffff0100ul, 0x00000001ff00ff00ul, 0x00000001ff0000fful,
    0x00000001ff000000ul, 0x00000001ff0001fful, 0x00000001ff000100ul, 0x00000001ff01fffful,
    0x00000001ff01ff00ul, 0x00000001ff01ff01ul, 0x00000001ff0100fful, 0x00000001ff010000ul,
    0x00000001ff010001ul, 0x00000001ff0101fful, 0x00000001ff010100ul, 0x0000000100ffff00ul,
    0x0000000100ff0000ul, 0x0000000100ff0001ul, 0x0000000100ff01fful, 0x0000000100ff0100ul,
    0x0000000100ff0101ul, 0x000000010000fffful, 0x000000010000ff00ul, 0x000000010000ff01ul,
    0x00000001000000fful, 0x0000000100000000ul, 0x0000000100000001ul, 0x00000001000001fful,
    0x0000000100000100ul, 0x0000000100000101ul, 0x000000010001ff00ul, 0x00000001000100fful,
    0x0000000100010000ul, 0x0000000100010100ul, 0x0000000101ffff01ul, 0x0000000101ff0000ul,
    0x0000000101ff0001ul, 0x0000000101ff01fful, 0x0000000101ff0100ul, 0x0000000101ff0101ul,
    0x000000010100ff00ul, 0x0000000101000000ul, 0x0000000101000101ul, 0x000000010101ff01ul,
    0x0000000101010000ul, 0x0000000101010001ul, 0x00000001010101fful, 0x0000000101010100ul,
    0x000001ffffff00fful, 0x000001ffffff0000ul, 0x000001ffffff0001ul, 0x000001ffffff0100ul,
    0x000001ffff00fffful, 0x000001ffff000000ul, 0x000001ffff0001fful, 0x000001ffff01ff00ul,
    0x000001ffff010101ul, 0x000001ff00ff0000ul, 0x000001ff00ff01fful, 0x000001ff00ff0101ul,
    0x000001ff0000ff00ul, 0x000001ff000000fful, 0x000001ff00000000ul, 0x000001ff00000001ul,
    0x000001ff000001fful, 0x000001ff00000100ul, 0x000001ff0001fffful, 0x000001ff0001ff01ul,
    0x000001ff000100fful, 0x000001ff00010000ul, 0x000001ff01ffff01ul, 0x000001ff01ff0100ul,
    0x000001ff0100fffful, 0x000001ff0100ff01ul, 0x000001ff01000000ul, 0x000001ff010001fful,
    0x000001ff0101ff00ul, 0x000001ff01010100ul, 0x00000100ffffff00ul, 0x00000100ffffff01ul,
    0x00000100ffff0000ul, 0x00000100ffff0101ul, 0x00000100ff00ff00ul, 0x00000100ff0000fful,
    0x00000100ff000000ul, 0x00000100ff000001ul, 0x00000100ff000100ul, 0x00000100ff010000ul,
    0x0000010000ffff00ul, 0x0000010000ff00fful, 0x0000010000ff0000ul, 0x0000010000ff0001ul,
    0x0000010000ff0100ul, 0x000001000000fffful, 0x000001000000ff00ul, 0x000001000000ff01ul,
    0x00000100000000fful, 0x0000010000000000ul, 0x0000010000000001ul, 0x00000100000001fful,
    0x0000010000000100ul, 0x0000010000000101ul, 0x000001000001ff00ul, 0x00000100000100fful,
    0x0000010000010000ul, 0x0000010000010001ul, 0x0000010000010100ul, 0x0000010001ffff00ul,
    0x0000010001ff0000ul, 0x0000010001ff0100ul, 0x000001000100ff00ul, 0x00000100010000fful,
    0x0000010001000000ul, 0x0000010001000001ul, 0x00000100010001fful, 0x0000010001000100ul,
    0x0000010001010000ul, 0x00000101ffff00fful, 0x00000101ffff01fful, 0x00000101ff000000ul,
    0x00000101ff000101ul, 0x00000101ff01fffful, 0x00000101ff010000ul, 0x00000101ff010001ul,
    0x00000101ff010100ul, 0x0000010100ff0000ul, 0x0000010100ff01fful, 0x0000010100ff0100ul,
    0x000001010000ff00ul, 0x0000010100000000ul, 0x0000010100000001ul, 0x00000101000001fful,
    0x0000010100000100ul, 0x000001010001ff01ul, 0x0000010100010000ul, 0x00000101000101fful,
    0x0000010100010101ul, 0x0000010101ffff00ul, 0x0000010101ff0101ul, 0x000001010100ff01ul,
    0x0000010101000000ul, 0x0000010101000001ul, 0x00000101010001fful, 0x0000010101000101ul,
    0x000001010101ff00ul, 0x0001ffffffff0000ul, 0x0001ffffff0000fful, 0x0001ffffff000001ul,
    0x0001ffffff000100ul, 0x0001ffffff010000ul, 0x0001ffff00ff00fful, 0x0001ffff0000fffful,
    0x0001ffff00000000ul, 0x0001ffff00000001ul, 0x0001ffff000001fful, 0x0001ffff00000101ul,
    0x0001ffff0001ff00ul, 0x0001ffff000100fful, 0x0001ffff00010001ul, 0x0001ffff00010100ul,
    0x0001ffff01ffff00ul, 0x0001ffff01000001ul, 0x0001ffff01010000ul, 0x0001ff00ffffff00ul,
    0x0001ff00ffff00fful, 0x0001ff00ffff0001ul, 0x0001ff00ffff0100ul, 0x0001ff00ff00ff01ul,
    0x0001ff00ff000000ul, 0x0001ff00ff01ff00ul, 0x0001ff00ff01ff01ul, 0x0001ff00ff010001ul,
    0x0001ff00ff010100ul, 0x0001ff0000ff0000ul, 0x0001ff0000ff0100ul, 0x0001ff000000ff00ul,
    0x0001ff0000000000ul, 0x0001ff0000000001ul, 0x0001ff0000000100ul, 0x0001ff0000010000ul,
    0x0001ff0000010001ul, 0x0001ff0000010101ul, 0x0001ff0001ff00fful, 0x0001ff0001ff0101ul,
    0x0001ff000100ff01ul, 0x0001ff0001000000ul, 0x0001ff000101ff00ul, 0x0001ff0001010001ul,
    0x0001ff0001010100ul, 0x0001ff01ff00ff00ul, 0x0001ff01ff000001ul, 0x0001ff01ff000100ul,
    0x0001ff0100fffffful, 0x0001ff0100ffff00ul, 0x0001ff0100ff0001ul, 0x0001ff0100000000ul,
    0x0001ff0100000001ul, 0x0001ff01000001fful, 0x0001ff010001fffful, 0x0001ff0101ff0000ul,
    0x0001ff010100ff00ul, 0x0001ff0101000001ul, 0x0001ff0101010000ul, 0x000100ffff00ff00ul,
    0x000100ffff00ff01ul, 0x000100ffff000000ul, 0x000100ffff000001ul, 0x000100ffff000101ul,
    0x000100ffff01ff00ul, 0x000100ffff010001ul, 0x000100ffff010100ul, 0x000100ff00fffffful,
    0x000100ff00ffff01ul, 0x000100ff00ff0000ul, 0x000100ff00ff01fful, 0x000100ff00ff0101ul,
    0x000100ff0000ff00ul, 0x000100ff000000fful, 0x000100ff00000000ul, 0x000100ff00000001ul,
    0x000100ff00000100ul, 0x000100ff00000101ul, 0x000100ff0001fffful, 0x000100ff0001ff01ul,
    0x000100ff00010000ul, 0x000100ff01ff00fful, 0x000100ff01ff0000ul, 0x000100ff01ff0100ul,
    0x000100ff0100fffful, 0x000100ff0100ff01ul, 0x000100ff010000fful, 0x000100ff01000000ul,
    0x000100ff01000001ul, 0x000100ff010001fful, 0x000100ff01000101ul, 0x000100ff0101ff00ul,
    0x000100ff010100fful, 0x000100ff01010100ul, 0x00010000ffff0000ul, 0x00010000ffff01fful,
    0x00010000ffff0101ul, 0x00010000ff00ff00ul, 0x00010000ff000000ul, 0x00010000ff000001ul,
    0x00010000ff000100ul, 0x0001000000ff00fful, 0x0001000000ff0000ul, 0x0001000000ff0001ul,
    0x0001000000ff0100ul, 0x000100000000fffful, 0x000100000000ff00ul, 0x00010000000000fful,
    0x0001000000000000ul, 0x0001000000000001ul, 0x0001000000000100ul, 0x000100000001ff00ul,
    0x00010000000100fful, 0x0001000000010000ul, 0x0001000000010001ul, 0x0001000000010100ul,
    0x0001000001ff0001ul, 0x0001000001ff0100ul, 0x0001000001ff0101ul, 0x000100000100ff00ul,
    0x0001000001000000ul, 0x0001000001000001ul, 0x0001000001000100ul, 0x0001000001000101ul,
    0x000100000101ff01ul, 0x0001000001010000ul, 0x0001000001010001ul, 0x00010000010101fful,
    0x00010001ffffff01ul, 0x00010001ffff0100ul, 0x00010001ff000000ul, 0x00010001ff01fffful,
    0x00010001ff010001ul, 0x00010001ff0101fful, 0x00010001ff010100ul, 0x0001000100fffffful,
    0x0001000100ff0000ul, 0x0001000100ff01fful, 0x0001000100ff0101ul, 0x000100010000ff00ul,
    0x00010001000000fful, 0x0001000100000000ul, 0x0001000100000001ul, 0x00010001000001fful,
    0x0001000100000101ul, 0x000100010001fffful, 0x0001000100010000ul, 0x00010001000101fful,
    0x0001000101fffffful, 0x0001000101ffff01ul, 0x0001000101ff0000ul, 0x0001000101ff0101ul,
    0x00010001010000fful, 0x0001000101000001ul, 0x00010001010001fful, 0x0001000101000100ul,
    0x000100010101fffful, 0x00010001010100fful, 0x0001000101010001ul, 0x0001000101010101ul,
    0x000101ffff000001ul, 0x000101ffff000100ul, 0x000101ffff010000ul, 0x000101ff00ffff00ul,
    0x000101ff0000ff01ul, 0x000101ff00000000ul, 0x000101ff00000101ul, 0x000101ff0001ff00ul,
    0x000101ff00010100ul, 0x000101ff01ff0000ul, 0x000101ff0100ff00ul, 0x000101ff010001fful,
    0x000101ff01010001ul, 0x00010100ffffff00ul, 0x00010100ffff00fful, 0x00010100ff00fffful,
    0x00010100ff000000ul, 0x00010100ff01ff00ul, 0x00010100ff0100fful, 0x00010100ff010001ul,
    0x00010100ff010100ul, 0x0001010000fffffful, 0x0001010000ffff00ul, 0x0001010000ff0000ul,
    0x0001010000ff0001ul, 0x0001010000ff01fful, 0x000101000000ff00ul, 0x00010100000000fful,
    0x0001010000000000ul, 0x0001010000000001ul, 0x0001010000000100ul, 0x000101000001fffful,
    0x0001010000010000ul, 0x0001010000010101ul, 0x0001010001ffff01ul, 0x0001010001ff00fful,
    0x0001010001ff0101ul, 0x0001010001000000ul, 0x000101000101ff00ul, 0x00010100010100fful,
    0x0001010001010000ul, 0x0001010001010100ul, 0x00010101ff00ff00ul, 0x00010101ff000001ul,
    0x00010101ff0001fful, 0x0001010100ffff00ul, 0x0001010100ff00fful, 0x0001010100ff0100ul,
    0x000101010000fffful, 0x0001010100000000ul, 0x00010101000001fful, 0x0001010100000101ul,
    0x00010101000100fful, 0x0001010100010000ul, 0x0001010100010100ul, 0x0001010101ff0001ul,
    0x00010101010000fful, 0x00010101010001fful, 0x0001010101000101ul, 0x0001010101010001ul,
    0x01fffffffffffffful, 0x01ffffffffffff01ul, 0x01ffffffffff01fful, 0x01ffffffffff0101ul,
    0x01ffffffff01fffful, 0x01ffffffff01ff01ul, 0x01ffffffff0101fful, 0x01ffffffff010101ul,
    0x01ffffff00ff0000ul, 0x01ffffff0000fffful, 0x01ffffff0000ff00ul, 0x01ffffff000000fful,
    0x01ffffff00000001ul, 0x01ffffff00000100ul, 0x01ffffff00010000ul, 0x01ffffff01fffffful,
    0x01ffffff01ffff01ul, 0x01ffffff01ff01fful, 0x01ffffff01ff0101ul, 0x01ffffff01000000ul,
    0x01ffffff0101fffful, 0x01ffffff0101ff01ul, 0x01ffffff010101fful, 0x01ffffff01010101ul,
    0x01ffff00ffff0000ul, 0x01ffff00ff00ff00ul, 0x01ffff00ff0000fful, 0x01ffff00ff000001ul,
    0x01ffff00ff000100ul, 0x01ffff00ff010000ul, 0x01ffff0000ffff00ul, 0x01ffff0000ff00fful,
    0x01ffff0000ff0100ul, 0x01ffff000000fffful, 0x01ffff000000ff01ul, 0x01ffff0000000000ul,
    0x01ffff0000000001ul, 0x01ffff00000001fful, 0x01ffff0000000100ul, 0x01ffff00000100fful,
    0x01ffff0000010001ul, 0x01ffff0000010100ul, 0x01ffff0001ff0000ul, 0x01ffff0001ff0100ul,
    0x01ffff00010000fful, 0x01ffff0001000001ul, 0x01ffff0001000100ul, 0x01ffff0001010000ul,
    0x01ffff01fffffffful, 0x01ffff01ffffff01ul, 0x01ffff01ffff01fful, 0x01ffff01ffff0101ul,
    0x01ffff01ff000000ul, 0x01ffff01ff01fffful, 0x01ffff01ff01ff01ul, 0x01ffff01ff0101fful,
    0x01ffff01ff010101ul, 0x01ffff010000ff00ul, 0x01ffff01000000fful, 0x01ffff0100000100ul,
    0x01ffff0100010000ul, 0x01ffff0101fffffful, 0x01ffff0101ffff01ul, 0x01ffff0101ff01fful,
    0x01ffff0101ff0101ul, 0x01ffff0101000000ul, 0x01ffff010101fffful, 0x01ffff010101ff01ul,
    0x01ffff01010101fful, 0x01ffff0101010101ul, 0x01ff00ffff0000fful, 0x01ff00ffff000100ul,
    0x01ff00ff00ffff00ul, 0x01ff00ff00ff00fful, 0x01ff00ff0000ff00ul, 0x01ff00ff00000000ul,
    0x01ff00ff00000101ul, 0x01ff00ff0001ff00ul, 0x01ff00ff000100fful, 0x01ff00ff00010100ul,
    0x01ff00ff010000fful, 0x01ff00ff01000100ul, 0x01ff0000ffffff00ul, 0x01ff0000ffff0100ul,
    0x01ff0000ff00ff01ul, 0x01ff0000ff000000ul, 0x01ff0000ff000101ul, 0x01ff0000ff010001ul,
    0x01ff0000ff010100ul, 0x01ff000000fffffful, 0x01ff000000ffff00ul, 0x01ff000000ff0000ul,
    0x01ff000000ff01fful, 0x01ff00000000ff00ul, 0x01ff0000000000fful, 0x01ff000000000000ul,
    0x01ff000000000001ul, 0x01ff000000000100ul, 0x01ff000000000101ul, 0x01ff000000010000ul,
    0x01ff000000010001ul, 0x01ff0000000101fful, 0x01ff000000010101ul, 0x01ff000001ffff00ul,
    0x01ff000001ff00fful, 0x01ff000001ff0001ul, 0x01ff000001ff0100ul, 0x01ff00000100fffful,
    0x01ff00000100ff01ul, 0x01ff000001000000ul, 0x01ff0000010001fful, 0x01ff000001010001ul,
    0x01ff0001ff00ff00ul, 0x01ff0001ff000001ul, 0x01ff0001ff000100ul, 0x01ff0001ff010000ul,
    0x01ff000100ffff00ul, 0x01ff000100ff00fful, 0x01ff000100ff0100ul, 0x01ff000100ff0101ul,
    0x01ff00010000fffful, 0x01ff000100000000ul, 0x01ff000100000100ul, 0x01ff000100000101ul,
    0x01ff00010001ff00ul, 0x01ff000100010001ul, 0x01ff000100010101ul, 0x01ff000101ff0000ul,
    0x01ff00010100ff00ul, 0x01ff000101000101ul, 0x01ff0001010100fful, 0x01ff01fffffffffful,
    0x01ff01ffffffff01ul, 0x01ff01ffffff01fful, 0x01ff01ffffff0101ul, 0x01ff01ffff000000ul,
    0x01ff01ffff01fffful, 0x01ff01ffff01ff01ul, 0x01ff01ffff0101fful, 0x01ff01ffff010101ul,
    0x01ff01ff00ffff00ul, 0x01ff01ff00ff0000ul, 0x01ff01ff0000ff00ul, 0x01ff01ff000000fful,
    0x01ff01ff00000100ul, 0x01ff01ff00010000ul, 0x01ff01ff00010100ul, 0x01ff01ff01fffffful,
    0x01ff01ff01ffff01ul, 0x01ff01ff01ff01fful, 0x01ff01ff01ff0101ul, 0x01ff01ff01000000ul,
    0x01ff01ff0101fffful, 0x01ff01ff0101ff01ul, 0x01ff01ff010101fful, 0x01ff01ff01010101ul,
    0x01ff0100ffff0000ul, 0x01ff0100ffff0001ul, 0x01ff0100ff00ff00ul, 0x01ff0100ff0000fful,
    0x01ff0100ff000001ul, 0x01ff0100ff010000ul, 0x01ff010000ffff00ul, 0x01ff010000ff00fful,
    0x01ff010000ff0001ul, 0x01ff010000ff0100ul, 0x01ff01000000fffful, 0x01ff01000000ff01ul,
    0x01ff010000000000ul, 0x01ff010000000101ul, 0x01ff01000001ff00ul, 0x01ff0100000100fful,
    0x01ff010001ff0000ul, 0x01ff010001000001ul, 0x01ff010001000100ul, 0x01ff010001010000ul,
    0x01ff0101fffffffful, 0x01ff0101ffffff01ul, 0x01ff0101ffff01fful, 0x01ff0101ffff0101ul,
    0x01ff0101ff000000ul, 0x01ff0101ff01fffful, 0x01ff0101ff01ff01ul, 0x01ff0101ff0101fful,
    0x01ff0101ff010101ul, 0x01ff010100ff0000ul, 0x01ff01010000ff00ul, 0x01ff0101000000fful,
    0x01ff010100000001ul, 0x01ff010101fffffful, 0x01ff010101ffff01ul, 0x01ff010101ff01fful,
    0x01ff010101ff0101ul, 0x01ff010101000000ul, 0x01ff01010101fffful, 0x01ff01010101ff01ul,
    0x01ff0101010101fful, 0x01ff010101010101ul, 0x0100ffffffff0000ul, 0x0100ffffff00ff00ul,
    0x0100ffffff000001ul, 0x0100ffffff0001fful, 0x0100ffffff000100ul, 0x0100ffffff010000ul,
    0x0100ffff00ffff00ul, 0x0100ffff00ff0001ul, 0x0100ffff00ff0100ul, 0x0100ffff00000000ul,
    0x0100ffff000001fful, 0x0100ffff00000101ul, 0x0100ffff00010100ul, 0x0100ffff00010101ul,
    0x0100ffff01ff0000ul, 0x0100ffff0100ff00ul, 0x0100ffff010000fful, 0x0100ffff01000001ul,
    0x0100ffff01000100ul, 0x0100ffff01010000ul, 0x0100ff00ffffff00ul, 0x0100ff00ffff00fful,
    0x0100ff00ffff0001ul, 0x0100ff00ffff0100ul, 0x0100ff00ff00fffful, 0x0100ff00ff000000ul,
    0x0100ff00ff0001fful, 0x0100ff00ff000101ul, 0x0100ff00ff01ff00ul, 0x0100ff00ff0100fful,
    0x0100ff00ff010001ul, 0x0100ff00ff010100ul, 0x0100ff0000fffffful, 0x0100ff0000ff0000ul,
    0x0100ff000000fffful, 0x0100ff000000ff00ul, 0x0100ff00000000fful, 0x0100ff0000000000ul,
    0x0100ff0000000001ul, 0x0100ff0000000100ul, 0x0100ff000001ff01ul, 0x0100ff0000010000ul,
    0x0100ff0001ff00fful, 0x0100ff0001ff0001ul, 0x0100ff000100ff01ul, 0x0100ff0001000000ul,
    0x0100ff00010001fful, 0x0100ff000101ff00ul, 0x0100ff00010100fful, 0x0100ff0001010001ul,
    0x0100ff0001010100ul, 0x0100ff01ffff0000ul, 0x0100ff01ff00ff00ul, 0x0100ff01ff0000fful,
    0x0100ff01ff000100ul, 0x0100ff01ff010000ul, 0x0100ff0100ff00fful, 0x0100ff0100ff0001ul,
    0x0100ff0100ff0100ul, 0x0100ff010000fffful, 0x0100ff010000ff01ul, 0x0100ff0100000000ul,
    0x0100ff01000001fful, 0x0100ff0100010001ul, 0x0100ff0100010100ul, 0x0100ff0101ff0000ul,
    0x0100ff01010000fful, 0x0100ff0101000001ul, 0x0100ff0101010100ul, 0x010000ffffffff00ul,
    0x010000ffffff00fful, 0x010000ffffff0001ul, 0x010000ffff00fffful, 0x010000ffff000000ul,
    0x010000ffff0001fful, 0x010000ffff010001ul, 0x010000ff00fffffful, 0x010000ff00ff0101ul,
    0x010000ff0000ff00ul, 0x010000ff000000fful, 0x010000ff00000000ul, 0x010000ff00000001ul,
    0x010000ff000001fful, 0x010000ff00000100ul, 0x010000ff0001fffful, 0x010000ff0001ff00ul,
    0x010000ff0001ff01ul, 0x010000ff00010000ul, 0x010000ff01ff00fful, 0x010000ff01ff0001ul,
    0x010000ff0100ff01ul, 0x010000ff010000fful, 0x010000ff01000000ul, 0x010000ff010001fful,
    0x010000ff0101ff00ul, 0x010000ff01010100ul, 0x01000000fffffffful, 0x01000000ffff0000ul,
    0x01000000ffff01fful, 0x01000000ffff0101ul, 0x01000000ff00fffful, 0x01000000ff00ff00ul,
    0x01000000ff0000fful, 0x01000000ff000000ul, 0x01000000ff000001ul, 0x01000000ff000100ul,
    0x01000000ff01ff00ul, 0x01000000ff010000ul, 0x01000000ff010100ul, 0x01000000ff010101ul,
    0x0100000000ffff00ul, 0x0100000000ff00fful, 0x0100000000ff0000ul, 0x0100000000ff0001ul,
    0x0100000000ff0100ul, 0x010000000000fffful, 0x010000000000ff00ul, 0x010000000000ff01ul,
    0x01000000000000fful, 0x0100000000000000ul, 0x0100000000000001ul, 0x01000000000001fful,
    0x0100000000000100ul, 0x0100000000000101ul, 0x010000000001ff00ul, 0x01000000000100fful,
    0x0100000000010000ul, 0x0100000000010001ul, 0x0100000000010100ul, 0x0100000001ffff00ul,
    0x0100000001ff0000ul, 0x0100000001ff01fful, 0x010000000100ff00ul, 0x010000000100ff01ul,
    0x01000000010000fful, 0x0100000001000000ul, 0x0100000001000001ul, 0x0100000001000100ul,
    0x0100000001000101ul, 0x010000000101fffful, 0x010000000101ff01ul, 0x0100000001010000ul,
    0x01000000010101fful, 0x0100000001010101ul, 0x01000001ffffff00ul, 0x01000001ffff00fful,
    0x01000001ff00fffful, 0x01000001ff000000ul, 0x01000001ff000100ul, 0x01000001ff01fffful,
    0x01000001ff010001ul, 0x01000001ff010100ul, 0x0100000100ff0000ul, 0x0100000100ff01fful,
    0x0100000100ff0100ul, 0x010000010000ff00ul, 0x010000010000ff01ul, 0x0100000100000000ul,
    0x0100000100000001ul, 0x0100000100000100ul, 0x0100000100010000ul, 0x01000001000101fful,
    0x0100000101ffff01ul, 0x0100000101ff00fful, 0x0100000101ff0100ul, 0x0100000101ff0101ul,
    0x010000010100ff01ul, 0x01000001010000fful, 0x0100000101000000ul, 0x01000001010100fful,
    0x0100000101010001ul, 0x0100000101010100ul, 0x010001ffffff0000ul, 0x010001ffff000001ul,
    0x010001ffff000100ul, 0x010001ffff010000ul, 0x010001ff00ffff00ul, 0x010001ff00ff0001ul,
    0x010001ff0000fffful, 0x010001ff0000ff01ul, 0x010001ff00000000ul, 0x010001ff00000001ul,
    0x010001ff00000101ul, 0x010001ff000100fful, 0x010001ff00010000ul, 0x010001ff01ff0000ul,
    0x010001ff0100ff00ul, 0x010001ff01000001ul, 0x010001ff01000100ul, 0x010001ff01010000ul,
    0x01000100ffff00fful, 0x01000100ffff0001ul, 0x01000100ffff0100ul, 0x01000100ff00fffful,
    0x01000100ff00ff01ul, 0x01000100ff000000ul, 0x01000100ff0001fful, 0x01000100ff000101ul,
    0x01000100ff01fffful, 0x01000100ff01ff00ul, 0x01000100ff0100fful, 0x01000100ff010001ul,
    0x0100010000fffffful, 0x0100010000ffff01ul, 0x0100010000ff0000ul, 0x0100010000ff01fful,
    0x0100010000ff0101ul, 0x010001000000ff00ul, 0x01000100000000fful, 0x0100010000000000ul,
    0x0100010000000001ul, 0x0100010000000100ul, 0x010001000001ff01ul, 0x0100010000010000ul,
    0x0100010000010001ul, 0x0100010000010101ul, 0x0100010001ffff00ul, 0x0100010001ff00fful,
    0x010001000100fffful, 0x010001000100ff01ul, 0x0100010001000000ul, 0x0100010001000101ul,
    0x010001000101ff00ul, 0x0100010001010001ul, 0x01000101ffff0000ul, 0x01000101ff000000ul,
    0x01000101ff010000ul, 0x0100010100ff00fful, 0x0100010100ff0001ul, 0x0100010100ff0100ul,
    0x010001010000fffful, 0x0100010100000000ul, 0x01000101000001fful, 0x010001010001ff00ul,
    0x0100010101ff0000ul, 0x010001010100ff00ul, 0x01000101010000fful, 0x0100010101000000ul,
    0x0100010101000001ul, 0x0101fffffffffffful, 0x0101ffffffffff01ul, 0x0101ffffffff01fful,
    0x0101ffffffff0101ul, 0x0101ffffff000000ul, 0x0101ffffff01fffful, 0x0101ffffff01ff01ul,
    0x0101ffffff0101fful, 0x0101ffffff010101ul, 0x0101ffff00ff0000ul, 0x0101ffff0000ff00ul,
    0x0101ffff000000fful, 0x0101ffff00000001ul, 0x0101ffff00000100ul, 0x0101ffff01fffffful,
    0x0101ffff01ffff01ul, 0x0101ffff01ff01fful, 0x0101ffff01ff0101ul, 0x0101ffff01000000ul,
    0x0101ffff0101fffful, 0x0101ffff0101ff01ul, 0x0101ffff010101fful, 0x0101ffff01010101ul,
    0x0101ff00ffff0000ul, 0x0101ff00ffff0100ul, 0x0101ff00ff00ff00ul, 0x0101ff00ff0000fful,
    0x0101ff00ff000001ul, 0x0101ff00ff000100ul, 0x0101ff00ff000101ul, 0x0101ff0000ff0001ul,
    0x0101ff0000ff0100ul, 0x0101ff000000ff00ul, 0x0101ff0000000000ul, 0x0101ff00000001fful,
    0x0101ff0000000101ul, 0x0101ff000001ff00ul, 0x0101ff00000100fful, 0x0101ff0001ff0000ul,
    0x0101ff000100fffful, 0x0101ff000100ff01ul, 0x0101ff0001000001ul, 0x0101ff0001000100ul,
    0x0101ff01ffffff01ul, 0x0101ff01ffff01fful, 0x0101ff01ffff0101ul, 0x0101ff01ff00fffful,
    0x0101ff01ff000100ul, 0x0101ff01ff01ff01ul, 0x0101ff01ff0101fful, 0x0101ff01ff010101ul,
    0x0101ff0100ff0000ul, 0x0101ff010000ff00ul, 0x0101ff0100000001ul, 0x0101ff0100000100ul,
    0x0101ff0100010000ul, 0x0101ff0101fffffful, 0x0101ff0101ffff01ul, 0x0101ff0101ff01fful,
    0x0101ff0101ff0101ul, 0x0101ff0101000000ul, 0x0101ff010101fffful, 0x0101ff010101ff01ul,
    0x0101ff01010101fful, 0x0101ff0101010101ul, 0x010100ffff000100ul, 0x010100ffff010000ul,
    0x010100ff00ffff00ul, 0x010100ff00ff00fful, 0x010100ff0000fffful, 0x010100ff000000fful,
    0x010100ff00000000ul, 0x010100ff000001fful, 0x010100ff00000101ul, 0x010100ff0001ff00ul,
    0x010100ff00010000ul, 0x010100ff00010001ul, 0x010100ff000101fful, 0x010100ff00010100ul,
    0x010100ff01ff0000ul, 0x01010000ffff0001ul, 0x01010000ffff0100ul, 0x01010000ff00fffful,
    0x01010000ff00ff01ul, 0x01010000ff000000ul, 0x01010000ff0001fful, 0x01010000ff010001ul,
    0x01010000ff010100ul, 0x0101000000ffff01ul, 0x0101000000ff0000ul, 0x010100000000ff00ul,
    0x01010000000000fful, 0x0101000000000000ul, 0x0101000000000001ul, 0x0101000000000100ul,
    0x0101000000010000ul, 0x0101000000010101ul, 0x0101000001ffff00ul, 0x0101000001ff00fful,
    0x0101000001ff0000ul, 0x0101000001ff0001ul, 0x0101000001ff0100ul, 0x010100000100ff01ul,
    0x0101000001000000ul, 0x01010000010001fful, 0x01010001ffff0000ul, 0x01010001ff00ff00ul,
    0x01010001ff000001ul, 0x01010001ff000101ul, 0x01010001ff01ff00ul, 0x01010001ff010000ul,
    0x0101000100ff00fful, 0x0101000100ff0001ul, 0x0101000100ff0101ul, 0x010100010000ff01ul,
    0x0101000100000000ul, 0x0101000100000001ul, 0x01010001000001fful, 0x010100010001fffful,
    0x010100010001ff01ul, 0x0101000101ff0001ul, 0x010100010100fffful, 0x0101000101000000ul,
    0x0101000101000001ul, 0x0101000101000100ul, 0x010100010101ff00ul, 0x01010001010100fful,
    0x0101000101010001ul, 0x010101fffffffffful, 0x010101ffffffff01ul, 0x010101ffffff01fful,
    0x010101ffffff0101ul, 0x010101ffff01fffful, 0x010101ffff01ff01ul, 0x010101ffff0101fful,
    0x010101ffff010101ul, 0x010101ff0000ff00ul, 0x010101ff000000fful, 0x010101ff00000001ul,
    0x010101ff00000100ul, 0x010101ff01fffffful, 0x010101ff01ffff01ul, 0x010101ff01ff01fful,
    0x010101ff01ff0101ul, 0x010101ff01000000ul, 0x010101ff0101fffful, 0x010101ff0101ff01ul,
    0x010101ff010101fful, 0x010101ff01010101ul, 0x01010100ffff0000ul, 0x01010100ff0000fful,
    0x01010100ff000100ul, 0x01010100ff01ff00ul, 0x01010100ff010000ul, 0x0101010000ffff00ul,
    0x010101000000fffful, 0x0101010000000000ul, 0x0101010000000101ul, 0x010101000001ff00ul,
    0x0101010000010001ul, 0x0101010000010100ul, 0x010101000100fffful, 0x0101010001000001ul,
    0x01010101fffffffful, 0x01010101ffffff01ul, 0x01010101ffff01fful, 0x01010101ffff0101ul,
    0x01010101ff01fffful, 0x01010101ff01ff01ul, 0x01010101ff0101fful, 0x01010101ff010101ul,
    0x010101010000ff00ul, 0x01010101000000fful, 0x0101010100000001ul, 0x0101010101fffffful,
    0x0101010101ffff01ul, 0x0101010101ff01fful, 0x0101010101ff0101ul, 0x0101010101000000ul,
    0x010101010101fffful, 0x010101010101ff01ul, 0x01010101010101fful, 0x0101010101010101ul,
};

inline float e8m0_half(uchar e) { return e < 2 ? as_type<float>(uint(0x00200000) << e) : as_type<float>(uint(e - 1) << 23); }
inline uint u16_at(device const uchar * p) { return uint(p[0]) | uint(p[1]) << 8; }

// Q4_1: 20 bytes per 32: half d, half m, qs[16]: value = q*d + m.
struct t_q4_1 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 20 * c;
        const float d = f16_at(b), m = f16_at(b + 2);
        for (int i = 0; i < 16; i++) {
            o[i]      = float(b[4 + i] & 15) * d + m;
            o[i + 16] = float(b[4 + i] >> 4) * d + m;
        }
    }
};
// Q5_0: 22 bytes per 32: half d, uint qh (bit j: 5th bit of value j), qs[16]: value = (q-16)*d.
struct t_q5_0 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 22 * c;
        const float d = f16_at(b);
        const uint qh = u32_at(b + 2);
        for (int i = 0; i < 16; i++) {
            const int v0 = int(b[6 + i] & 15) | int((qh >> i) & 1) << 4;
            const int v1 = int(b[6 + i] >> 4) | int((qh >> (i + 16)) & 1) << 4;
            o[i] = float(v0 - 16) * d;
            o[i + 16] = float(v1 - 16) * d;
        }
    }
};
// Q5_1: 24 bytes per 32: half d, half m, uint qh, qs[16]: value = q*d + m.
struct t_q5_1 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 24 * c;
        const float d = f16_at(b), m = f16_at(b + 2);
        const uint qh = u32_at(b + 4);
        for (int i = 0; i < 16; i++) {
            const int v0 = int(b[8 + i] & 15) | int((qh >> i) & 1) << 4;
            const int v1 = int(b[8 + i] >> 4) | int((qh >> (i + 16)) & 1) << 4;
            o[i] = float(v0) * d + m;
            o[i + 16] = float(v1) * d + m;
        }
    }
};
// IQ4_NL: 18 bytes per 32: half d, qs[16] indices into kvalues_iq4nl.
struct t_iq4_nl {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 18 * c;
        const float d = f16_at(b);
        for (int i = 0; i < 16; i++) {
            o[i]      = d * float(kvalues_iq4nl[b[2 + i] & 15]);
            o[i + 16] = d * float(kvalues_iq4nl[b[2 + i] >> 4]);
        }
    }
};
// MXFP4: 17 bytes per 32: E8M0 e, qs[16] indices into kvalues_fp4 (doubled e2m1): value = 2^(e-128)*kv.
struct t_mxfp4 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 17 * c;
        const float d = e8m0_half(b[0]);
        for (int i = 0; i < 16; i++) {
            o[i]      = float(kvalues_fp4[b[1 + i] & 15]) * d;
            o[i + 16] = float(kvalues_fp4[b[1 + i] >> 4]) * d;
        }
    }
};
// TQ1_0: 54 bytes per 256: qs[48], qh[4] (5 and 4 trits a byte as fractions of 3^5), half d.
inline int tq1_trit(uchar b, uint n) {
    const uchar pow3[5] = { 1, 3, 9, 27, 81 };
    const uchar q = uchar(b * pow3[n]);
    return int((ushort(q) * 3) >> 8);
}
struct t_tq1_0 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 54 * (c / 8);
        const float d = f16_at(b + 52);
        for (uint i = 0; i < 32; i++) {
            const uint v = 32 * (c % 8) + i;
            int t;
            if (v < 160) t = tq1_trit(b[v % 32], v / 32);
            else if (v < 240) t = tq1_trit(b[32 + (v - 160) % 16], (v - 160) / 16);
            else t = tq1_trit(b[48 + (v - 240) % 4], (v - 240) / 4);
            o[i] = float(t - 1) * d;
        }
    }
};
// TQ2_0: 66 bytes per 256: qs[64] (2 bits a value, t = q-1), half d.
struct t_tq2_0 {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 66 * (c / 8);
        const float d = f16_at(b + 64);
        const uint cc = c % 8, j = (cc / 4) * 32, l = cc % 4;
        for (uint k = 0; k < 32; k++) o[k] = float(int((b[j + k] >> (2 * l)) & 3) - 1) * d;
    }
};
// IQ3_S: 110 bytes per 256: half d, qs[64] (low index bits), qh[8], signs[32], scales[4].
struct t_iq3_s {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 110 * (c / 8);
        const uint ib = c % 8;
        device const uchar * qs = b + 2 + 8 * ib;
        const uint qh = b[66 + ib];
        device const uchar * sg = b + 74 + 4 * ib;
        const float db = f16_at(b) * float(1 + 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 15));
        for (uint l = 0; l < 4; l++) {
            const uint i1 = uint(qs[2 * l]) | ((qh << (8 - 2 * l)) & 256);
            const uint i2 = uint(qs[2 * l + 1]) | ((qh << (7 - 2 * l)) & 256);
            iq_grid8(ulong(iq3s_grid[i1]) | ulong(iq3s_grid[i2]) << 32, sg[l], db, o + 8 * l);
        }
    }
};
// IQ2_S: 82 bytes per 256: half d, qs[32], signs[32], qh[8], scales[8] (two 4-bit a byte).
struct t_iq2_s {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 82 * (c / 8);
        const uint ib = c % 8;
        const float d = f16_at(b);
        device const uchar * qs = b + 2 + 4 * ib;
        device const uchar * sg = b + 34 + 4 * ib;
        const uint qh = b[66 + ib], sc = b[74 + ib];
        const float db[2] = { d * (0.5f + float(sc & 15)) * 0.25f, d * (0.5f + float(sc >> 4)) * 0.25f };
        for (uint l = 0; l < 4; l++) {
            iq_grid8(iq2s_grid[uint(qs[l]) | ((qh << (8 - 2 * l)) & 0x300)], sg[l], db[l / 2], o + 8 * l);
        }
    }
};
// IQ1_S/IQ1_M: 8 grid values in {-1, 0, 1} plus a shift of ±1/8, times dl.
inline void iq1_grid8(ulong g, float dl, float delta, thread float * o) {
    for (int k = 0; k < 8; k++) o[k] = dl * (float(char(uchar(g >> (8 * k)))) + delta);
}
// IQ1_S: 50 bytes per 256: half d, qs[32], ushort qh[8] (3 index bits per 8 values, scale, shift sign).
struct t_iq1_s {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 50 * (c / 8);
        const uint ib = c % 8;
        const uint qh = u16_at(b + 34 + 2 * ib);
        const float dl = f16_at(b) * float(2 * ((qh >> 12) & 7) + 1);
        const float delta = (qh & 0x8000) ? -0.125f : 0.125f;
        for (uint l = 0; l < 4; l++) iq1_grid8(iq1s_grid[uint(b[2 + 4 * ib + l]) | ((qh >> (3 * l)) & 7) << 8], dl, delta, o + 8 * l);
    }
};
// IQ1_M: 56 bytes per 256: qs[32], qh[16], scales[8] (3-bit scales per 16 values; the top nibbles
// of the four words are the fp16 d).
struct t_iq1_m {
    static void deq(device const uchar * row, uint c, thread float * o) {
        device const uchar * b = row + 56 * (c / 8);
        const uint ib = c % 8;
        device const uchar * sc = b + 48;
        const uint s0 = u16_at(sc), s1 = u16_at(sc + 2), s2 = u16_at(sc + 4), s3 = u16_at(sc + 6);
        const float d = float(as_type<half>(ushort((s0 >> 12) | ((s1 >> 8) & 0x00f0) | ((s2 >> 4) & 0x0f00) | (s3 & 0xf000))));
        const uint w = u16_at(sc + 2 * (ib / 2)), sh = 6 * (ib % 2);
        const float dl[2] = { d * float(2 * ((w >> sh) & 7) + 1), d * float(2 * ((w >> (sh + 3)) & 7) + 1) };
        for (uint l = 0; l < 4; l++) {
            const uint h = b[32 + 2 * ib + l / 2];
            const uint idx = uint(b[4 * ib + l]) | ((l % 2 == 0 ? h << 8 : h << 4) & 0x700);
            const bool neg = (l % 2 == 0) ? (h & 0x08) != 0 : (h & 0x80) != 0;
            iq1_grid8(iq1s_grid[idx], dl[l / 2], neg ? -0.125f : 0.125f, o + 8 * l);
        }
    }
};

kernel void kernel_mv_q4_1(MV_PARAMS) { mv_impl<t_q4_1>(MV_ARGS); }
kernel void kernel_mvl_q4_1(MVL_PARAMS) { mv_impl<t_q4_1>(MVL_ARGS); }
kernel void kernel_mm_q4_1(MM_PARAMS) { mm_impl<t_q4_1>(MM_ARGS); }
kernel void kernel_get_rows_q4_1(ROWS_PARAMS) { rows_impl<t_q4_1>(ROWS_ARGS); }
kernel void kernel_mv_q5_0(MV_PARAMS) { mv_impl<t_q5_0>(MV_ARGS); }
kernel void kernel_mvl_q5_0(MVL_PARAMS) { mv_impl<t_q5_0>(MVL_ARGS); }
kernel void kernel_mm_q5_0(MM_PARAMS) { mm_impl<t_q5_0>(MM_ARGS); }
kernel void kernel_get_rows_q5_0(ROWS_PARAMS) { rows_impl<t_q5_0>(ROWS_ARGS); }
kernel void kernel_mv_q5_1(MV_PARAMS) { mv_impl<t_q5_1>(MV_ARGS); }
kernel void kernel_mvl_q5_1(MVL_PARAMS) { mv_impl<t_q5_1>(MVL_ARGS); }
kernel void kernel_mm_q5_1(MM_PARAMS) { mm_impl<t_q5_1>(MM_ARGS); }
kernel void kernel_get_rows_q5_1(ROWS_PARAMS) { rows_impl<t_q5_1>(ROWS_ARGS); }
kernel void kernel_mv_iq4_nl(MV_PARAMS) { mv_impl<t_iq4_nl>(MV_ARGS); }
kernel void kernel_mvl_iq4_nl(MVL_PARAMS) { mv_impl<t_iq4_nl>(MVL_ARGS); }
kernel void kernel_mm_iq4_nl(MM_PARAMS) { mm_impl<t_iq4_nl>(MM_ARGS); }
kernel void kernel_get_rows_iq4_nl(ROWS_PARAMS) { rows_impl<t_iq4_nl>(ROWS_ARGS); }
kernel void kernel_mv_mxfp4(MV_PARAMS) { mv_impl<t_mxfp4>(MV_ARGS); }
kernel void kernel_mvl_mxfp4(MVL_PARAMS) { mv_impl<t_mxfp4>(MVL_ARGS); }
kernel void kernel_mm_mxfp4(MM_PARAMS) { mm_impl<t_mxfp4>(MM_ARGS); }
kernel void kernel_get_rows_mxfp4(ROWS_PARAMS) { rows_impl<t_mxfp4>(ROWS_ARGS); }
kernel void kernel_mv_tq1_0(MV_PARAMS) { mv_impl<t_tq1_0>(MV_ARGS); }
kernel void kernel_mvl_tq1_0(MVL_PARAMS) { mv_impl<t_tq1_0>(MVL_ARGS); }
kernel void kernel_mm_tq1_0(MM_PARAMS) { mm_impl<t_tq1_0>(MM_ARGS); }
kernel void kernel_get_rows_tq1_0(ROWS_PARAMS) { rows_impl<t_tq1_0>(ROWS_ARGS); }
kernel void kernel_mv_tq2_0(MV_PARAMS) { mv_impl<t_tq2_0>(MV_ARGS); }
kernel void kernel_mvl_tq2_0(MVL_PARAMS) { mv_impl<t_tq2_0>(MVL_ARGS); }
kernel void kernel_mm_tq2_0(MM_PARAMS) { mm_impl<t_tq2_0>(MM_ARGS); }
kernel void kernel_get_rows_tq2_0(ROWS_PARAMS) { rows_impl<t_tq2_0>(ROWS_ARGS); }
kernel void kernel_mv_iq3_s(MV_PARAMS) { mv_impl<t_iq3_s>(MV_ARGS); }
kernel void kernel_mvl_iq3_s(MVL_PARAMS) { mv_impl<t_iq3_s>(MVL_ARGS); }
kernel void kernel_mm_iq3_s(MM_PARAMS) { mm_impl<t_iq3_s>(MM_ARGS); }
kernel void kernel_get_rows_iq3_s(ROWS_PARAMS) { rows_impl<t_iq3_s>(ROWS_ARGS); }
kernel void kernel_mv_iq2_s(MV_PARAMS) { mv_impl<t_iq2_s>(MV_ARGS); }
kernel void kernel_mvl_iq2_s(MVL_PARAMS) { mv_impl<t_iq2_s>(MVL_ARGS); }
kernel void kernel_mm_iq2_s(MM_PARAMS) { mm_impl<t_iq2_s>(MM_ARGS); }
kernel void kernel_get_rows_iq2_s(ROWS_PARAMS) { rows_impl<t_iq2_s>(ROWS_ARGS); }
kernel void kernel_mv_iq1_s(MV_PARAMS) { mv_impl<t_iq1_s>(MV_ARGS); }
kernel void kernel_mvl_iq1_s(MVL_PARAMS) { mv_impl<t_iq1_s>(MVL_ARGS); }
kernel void kernel_mm_iq1_s(MM_PARAMS) { mm_impl<t_iq1_s>(MM_ARGS); }
kernel void kernel_get_rows_iq1_s(ROWS_PARAMS) { rows_impl<t_iq1_s>(ROWS_ARGS); }
kernel void kernel_mv_iq1_m(MV_PARAMS) { mv_impl<t_iq1_m>(MV_ARGS); }
kernel void kernel_mvl_iq1_m(MVL_PARAMS) { mv_impl<t_iq1_m>(MVL_ARGS); }
kernel void kernel_mm_iq1_m(MM_PARAMS) { mm_impl<t_iq1_m>(MM_ARGS); }
kernel void kernel_get_rows_iq1_m(ROWS_PARAMS) { rows_impl<t_iq1_m>(ROWS_ARGS); }
