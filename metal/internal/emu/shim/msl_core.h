// msl_core.h: the part of a metal_stdlib replacement that is plain C++ (types, math, simd_*,
// barriers, atomics). No keyword macros here; shim.h adds them. Needs clang >= 15 (_Float16 on x86).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include "mslemu_rt.h"

// ---------------- scalar and vector types (global, as in MSL) ----------------
typedef _Float16 half;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;
typedef unsigned long ulong;

#define MSLEMU_VEC(T, name)                                                             \
  typedef T name##2 __attribute__((ext_vector_type(2)));                                \
  typedef T name##3 __attribute__((ext_vector_type(3)));                                \
  typedef T name##4 __attribute__((ext_vector_type(4)));                                \
  typedef T packed_##name##2 __attribute__((ext_vector_type(2), aligned(alignof(T))));  \
  typedef T packed_##name##4 __attribute__((ext_vector_type(4), aligned(alignof(T))));
MSLEMU_VEC(float, float)
MSLEMU_VEC(half, half)
MSLEMU_VEC(int, int)
MSLEMU_VEC(uint, uint)
MSLEMU_VEC(short, short)
MSLEMU_VEC(ushort, ushort)
MSLEMU_VEC(char, char)
MSLEMU_VEC(uchar, uchar)
MSLEMU_VEC(long, long)
MSLEMU_VEC(ulong, ulong)
#undef MSLEMU_VEC

#ifndef INFINITY
#define INFINITY __builtin_inff()
#endif
#ifndef NAN
#define NAN __builtin_nanf("")
#endif
#ifndef FLT_MAX
#define FLT_MAX __FLT_MAX__
#endif

namespace metal {
template <class T, int N> using vec = T __attribute__((ext_vector_type(N)));

enum class mem_flags : uint { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8 };
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint(a) | uint(b)); }

namespace detail {
template <class V> struct vinfo { using E = V; static constexpr int N = 1; static constexpr bool is_vec = false; };
template <class T, int N_> struct vinfo<vec<T, N_>> { using E = T; static constexpr int N = N_; static constexpr bool is_vec = true; };
template <class V> using vi = vinfo<std::remove_cv_t<std::remove_reference_t<V>>>;
template <class T> constexpr bool is_fp = std::is_same_v<T, float> || std::is_same_v<T, half>;

template <class V, class A> inline void put(V &r, int &k, A a) {
  using E = typename vinfo<V>::E;
  if constexpr (vi<A>::is_vec) { for (int i = 0; i < vi<A>::N; i++) r[k++] = (E)a[i]; }
  else r[k++] = (E)a;
}
// float4(...), half4(x), float4(a.xy, b.zw), float4(char4) ...: MSL constructor syntax
template <class V> inline V make() { return V{}; }
template <class V, class A> inline V make(A a) {
  using E = typename vinfo<V>::E;
  V r{};
  if constexpr (vi<A>::is_vec) { static_assert(vi<A>::N == vinfo<V>::N, "vector size mismatch"); for (int i = 0; i < vinfo<V>::N; i++) r[i] = (E)a[i]; }
  else for (int i = 0; i < vinfo<V>::N; i++) r[i] = (E)a;
  return r;
}
template <class V, class A, class B, class... R> inline V make(A a, B b, R... r) {
  V v{}; int k = 0;
  put(v, k, a); put(v, k, b); (put(v, k, r), ...);
  return v;
}
template <class T, class F> inline T map1(T x, F f) {
  if constexpr (vinfo<T>::is_vec) { T r; for (int i = 0; i < vinfo<T>::N; i++) r[i] = f(x[i]); return r; }
  else return f(x);
}
template <class T, class F> inline T map2(T x, T y, F f) {
  if constexpr (vinfo<T>::is_vec) { T r; for (int i = 0; i < vinfo<T>::N; i++) r[i] = f(x[i], y[i]); return r; }
  else return f(x, y);
}
template <class T, class F> inline T map3(T x, T y, T z, F f) {
  if constexpr (vinfo<T>::is_vec) { T r; for (int i = 0; i < vinfo<T>::N; i++) r[i] = f(x[i], y[i], z[i]); return r; }
  else return f(x, y, z);
}
} // namespace detail

// ---------------- math ----------------
#define MSLEMU_F1(name, expr)                                                             \
  template <class T, std::enable_if_t<detail::is_fp<typename detail::vinfo<T>::E>, int> = 0> \
  inline T name(T x) { return detail::map1(x, [](auto e) { using E = decltype(e); float f = (float)e; return (E)(expr); }); }
MSLEMU_F1(sqrt, __builtin_sqrtf(f))
MSLEMU_F1(rsqrt, 1.0f / __builtin_sqrtf(f))
MSLEMU_F1(exp, __builtin_expf(f))
MSLEMU_F1(exp2, __builtin_exp2f(f))
MSLEMU_F1(log, __builtin_logf(f))
MSLEMU_F1(log2, __builtin_log2f(f))
MSLEMU_F1(tanh, __builtin_tanhf(f))
MSLEMU_F1(sin, __builtin_sinf(f))
MSLEMU_F1(cos, __builtin_cosf(f))
MSLEMU_F1(floor, __builtin_floorf(f))
MSLEMU_F1(ceil, __builtin_ceilf(f))
MSLEMU_F1(round, __builtin_roundf(f))
MSLEMU_F1(rint, __builtin_rintf(f))
MSLEMU_F1(trunc, __builtin_truncf(f))
MSLEMU_F1(fabs, __builtin_fabsf(f))
#undef MSLEMU_F1
template <class T, std::enable_if_t<detail::is_fp<typename detail::vinfo<T>::E>, int> = 0>
inline T pow(T x, T y) { return detail::map2(x, y, [](auto a, auto b) { using E = decltype(a); return (E)__builtin_powf((float)a, (float)b); }); }
template <class T> inline T abs(T x) { return detail::map1(x, [](auto e) { return e < 0 ? (decltype(e))-e : e; }); }
template <class T> inline T fma(T a, T b, T c) {
  return detail::map3(a, b, c, [](auto x, auto y, auto z) { using E = decltype(x); return (E)__builtin_fmaf((float)x, (float)y, (float)z); });
}
template <class T> inline T min(T a, T b) { return detail::map2(a, b, [](auto x, auto y) { return y < x ? y : x; }); }
template <class T> inline T max(T a, T b) { return detail::map2(a, b, [](auto x, auto y) { return x < y ? y : x; }); }
template <class A, class B, std::enable_if_t<!std::is_same_v<A, B> && std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
inline auto min(A a, B b) { using C = std::common_type_t<A, B>; return min<C>(a, b); }   // laxer than metal
template <class A, class B, std::enable_if_t<!std::is_same_v<A, B> && std::is_arithmetic_v<A> && std::is_arithmetic_v<B>, int> = 0>
inline auto max(A a, B b) { using C = std::common_type_t<A, B>; return max<C>(a, b); }
template <class T> inline T fmin(T a, T b) { return min(a, b); }
template <class T> inline T fmax(T a, T b) { return max(a, b); }
template <class T, class L> inline T clamp(T x, L lo, L hi) { return min(max(x, T(lo)), T(hi)); }
template <class T> inline T mix(T x, T y, T a) { return x + (y - x) * a; }
template <class T, class C> inline T select(T a, T b, C c) {
  if constexpr (detail::vinfo<T>::is_vec) { T r; for (int i = 0; i < detail::vinfo<T>::N; i++) r[i] = c[i] ? b[i] : a[i]; return r; }
  else return c ? b : a;
}
template <class T, int N> inline T dot(vec<T, N> a, vec<T, N> b) { T s = a[0] * b[0]; for (int i = 1; i < N; i++) s += a[i] * b[i]; return s; }
template <class T> inline bool isnan(T x) { return x != x; }
template <class T> inline bool isinf(T x) { return x == (T)__builtin_inff() || x == -(T)__builtin_inff(); }
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0> inline T popcount(T x) { return (T)__builtin_popcountll((unsigned long long)(std::make_unsigned_t<T>)x); }
namespace precise { using metal::sqrt; using metal::exp; using metal::tanh; using metal::log; using metal::rsqrt; }
namespace fast { using metal::sqrt; using metal::exp; using metal::tanh; using metal::log; using metal::rsqrt; }

template <class T, class U> inline T as_type(const U &u) {
  static_assert(sizeof(T) == sizeof(U), "as_type: size mismatch");
  return __builtin_bit_cast(T, (std::remove_cv_t<U>)u);
}

// ---------------- barriers ----------------
// All lanes of a threadgroup run on one OS thread, so memory is always coherent inside a
// threadgroup: every mem_flags value behaves like a full fence (mem_none is not checked).
inline void threadgroup_barrier(mem_flags) { mslemu::tg_barrier(); }
inline void simdgroup_barrier(mem_flags) { mslemu::sg_barrier(); }

// ---------------- SIMD-group functions (32 lanes, inactive = returned lanes) ----------------
namespace detail {
template <class T> struct sg_vals { T v[mslemu::kSimdWidth]; uint32_t active; uint32_t lane; };
template <class T> inline sg_vals<T> sg_gather(T x) {
  static_assert(sizeof(T) <= mslemu::kSlotBytes, "simd op on too large a type");
  mslemu::SgView w = mslemu::sg_exchange(&x, sizeof(T));
  sg_vals<T> r;
  r.active = w.active; r.lane = w.lane;
  for (int i = 0; i < mslemu::kSimdWidth; i++) memcpy((void *)&r.v[i], w.slots + i * mslemu::kSlotBytes, sizeof(T));
  return r;
}
// butterfly (xor 16,8,4,2,1) tree: every lane gets the bitwise-identical result
template <class T, class F> inline T sg_tree(sg_vals<T> &a, T identity, F op) {
  for (int i = 0; i < mslemu::kSimdWidth; i++) if (!(a.active >> i & 1)) a.v[i] = identity;
  for (int w = mslemu::kSimdWidth / 2; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) a.v[i] = op(a.v[i], a.v[i + w]);
  return a.v[0];
}
template <class T> inline T lowest() { using E = typename vinfo<T>::E; if constexpr (is_fp<E>) return T(-__builtin_inff()); else return T(std::numeric_limits<E>::lowest()); }
template <class T> inline T highest() { using E = typename vinfo<T>::E; if constexpr (is_fp<E>) return T(__builtin_inff()); else return T(std::numeric_limits<E>::max()); }
} // namespace detail

template <class T> inline T simd_sum(T x) { auto a = detail::sg_gather(x); return detail::sg_tree(a, T(0), [](T p, T q) { return p + q; }); }
template <class T> inline T simd_product(T x) { auto a = detail::sg_gather(x); return detail::sg_tree(a, T(1), [](T p, T q) { return p * q; }); }
template <class T> inline T simd_max(T x) { auto a = detail::sg_gather(x); return detail::sg_tree(a, detail::lowest<T>(), [](T p, T q) { return max(p, q); }); }
template <class T> inline T simd_min(T x) { auto a = detail::sg_gather(x); return detail::sg_tree(a, detail::highest<T>(), [](T p, T q) { return min(p, q); }); }
template <class T> inline T simd_shuffle(T x, ushort l) { auto a = detail::sg_gather(x); return a.v[l % 32]; }
template <class T> inline T simd_shuffle_xor(T x, ushort m) { auto a = detail::sg_gather(x); return a.v[(a.lane ^ m) % 32]; }
template <class T> inline T simd_shuffle_down(T x, ushort d) { auto a = detail::sg_gather(x); return a.lane + d < 32 ? a.v[a.lane + d] : x; }
template <class T> inline T simd_shuffle_up(T x, ushort d) { auto a = detail::sg_gather(x); return a.lane >= d ? a.v[a.lane - d] : x; }
template <class T> inline T simd_broadcast(T x, ushort l) { return simd_shuffle(x, l); }
template <class T> inline T simd_broadcast_first(T x) { auto a = detail::sg_gather(x); return a.v[__builtin_ctz(a.active)]; }
inline bool simd_is_first() { auto a = detail::sg_gather(0); return a.lane == (uint32_t)__builtin_ctz(a.active); }
inline bool simd_all(bool b) { auto a = detail::sg_gather(b); for (int i = 0; i < 32; i++) if ((a.active >> i & 1) && !a.v[i]) return false; return true; }
inline bool simd_any(bool b) { auto a = detail::sg_gather(b); for (int i = 0; i < 32; i++) if ((a.active >> i & 1) && a.v[i]) return true; return false; }
template <class T> inline T simd_prefix_exclusive_sum(T x) { auto a = detail::sg_gather(x); T s = T(0); for (uint32_t i = 0; i < a.lane; i++) if (a.active >> i & 1) s += a.v[i]; return s; }
template <class T> inline T simd_prefix_inclusive_sum(T x) { return simd_prefix_exclusive_sum(x) + x; }

// ---------------- atomics (device memory is shared between OS threads) ----------------
enum memory_order { memory_order_relaxed = __ATOMIC_RELAXED };
template <class T> struct _atomic { T v; };
typedef _atomic<int> atomic_int;
typedef _atomic<uint> atomic_uint;
typedef _atomic<float> atomic_float;
template <class A, class T> inline auto atomic_fetch_add_explicit(A *o, T v, memory_order) {
  using V = decltype(o->v);
  V *p = (V *)&o->v;
  if constexpr (std::is_same_v<V, float>) {
    V old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old + (V)v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return old;
  } else return __atomic_fetch_add(p, (V)v, __ATOMIC_RELAXED);
}
template <class A, class T> inline auto atomic_fetch_max_explicit(A *o, T v, memory_order) {
  using V = decltype(o->v);
  V *p = (V *)&o->v;
  V old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < (V)v && !__atomic_compare_exchange_n(p, &old, (V)v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  return old;
}
template <class A> inline auto atomic_load_explicit(A *o, memory_order) { return __atomic_load_n((decltype(o->v) *)&o->v, __ATOMIC_RELAXED); }
template <class A, class T> inline void atomic_store_explicit(A *o, T v, memory_order) { __atomic_store_n((decltype(o->v) *)&o->v, (decltype(o->v))v, __ATOMIC_RELAXED); }

#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wuser-defined-literals"
constexpr half operator""h(long double v) { return (half)v; }
#pragma clang diagnostic pop
} // namespace metal

// Function constants (see mslemu_rt.h): registration is emitted by the glue generator.
namespace mslemu {
template <class T> void fc_register(T *addr, int index) {
  int kind = std::is_same_v<T, bool> ? 4 : std::is_same_v<T, half> ? 3 : std::is_same_v<T, float> ? 2 : std::is_signed_v<T> ? 0 : 1;
  fc_register_raw((void *)addr, kind, sizeof(T), index);
}
// Argument proxies used by generated thunks: convert to whatever the kernel parameter type is.
struct BufArg { void *p; template <class T> operator T *() const { return (T *)p; } template <class T> operator T &() const { return *(T *)p; } };
struct BuiltinArg {
  const uint32_t *v;
  template <class T> operator T() const {
    if constexpr (metal::detail::vinfo<T>::is_vec) { T r{}; for (int i = 0; i < metal::detail::vinfo<T>::N; i++) r[i] = (typename metal::detail::vinfo<T>::E)v[i]; return r; }
    else return (T)v[0];
  }
};
inline BufArg buf(const Launch &L, int i) { return BufArg{L.buf[i]}; }
inline BufArg tgmem(void *const *tg, int i) { return BufArg{tg[i]}; }
inline BuiltinArg bi(const uint32_t *v) { return BuiltinArg{v}; }
inline BuiltinArg bi(const uint32_t &v) { return BuiltinArg{&v}; }
struct KernelReg { KernelReg(const char *n, Thunk t) { register_kernel(n, t); } };
} // namespace mslemu

// ---------------- simdgroup matrices (emulated: every lane holds the whole 8x8 tile) ----------------
namespace metal {
template <class T, int Cols, int Rows> struct simdgroup_matrix { T m[Rows][Cols]; };
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
namespace detail {
inline void sg_uniform(const volatile void *p, const char *what) {   // collective op: all lanes, same pointer
  auto a = sg_gather((uintptr_t)p);
  for (int i = 0; i < mslemu::kSimdWidth; i++)
    if ((a.active >> i & 1) && a.v[i] != (uintptr_t)p) { __builtin_printf("mslemu: %s with a non-uniform pointer\n", what); __builtin_trap(); }
}
}
template <class T, int C, int R> inline simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T v) {
  simdgroup_matrix<T, C, R> r; for (int i = 0; i < R; i++) for (int j = 0; j < C; j++) r.m[i][j] = v; return r;
}
template <class T, int C, int R, class P>
inline void simdgroup_load(simdgroup_matrix<T, C, R> &d, P *src, ulong elements_per_row = C, ulong2 origin = 0, bool transpose = false) {
  detail::sg_uniform(src, "simdgroup_load");
  for (int r = 0; r < R; r++) for (int c = 0; c < C; c++)
    d.m[r][c] = (T)(transpose ? src[(origin.y + c) * elements_per_row + origin.x + r] : src[(origin.y + r) * elements_per_row + origin.x + c]);
}
template <class T, int C, int R, class P>
inline void simdgroup_store(const simdgroup_matrix<T, C, R> &a, P *dst, ulong elements_per_row = C, ulong2 origin = 0, bool transpose = false) {
  detail::sg_uniform(dst, "simdgroup_store");
  if (__builtin_ctz(detail::sg_gather(0).active) != (int)(detail::sg_gather(0).lane)) return;   // one lane writes
  for (int r = 0; r < R; r++) for (int c = 0; c < C; c++)
    (transpose ? dst[(origin.y + c) * elements_per_row + origin.x + r] : dst[(origin.y + r) * elements_per_row + origin.x + c]) = (std::remove_cv_t<P>)a.m[r][c];
}
// d = a * b + c, accumulated in float
template <class TD, class TA, class TB, class TC, int C, int R, int K>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, C, R> &d, const simdgroup_matrix<TA, K, R> &a,
                                          const simdgroup_matrix<TB, C, K> &b, const simdgroup_matrix<TC, C, R> &c) {
  simdgroup_matrix<TD, C, R> t;
  for (int i = 0; i < R; i++) for (int j = 0; j < C; j++) {
    float s = (float)c.m[i][j];
    for (int k = 0; k < K; k++) s += (float)a.m[i][k] * (float)b.m[k][j];
    t.m[i][j] = (TD)s;
  }
  d = t;
}
} // namespace metal
