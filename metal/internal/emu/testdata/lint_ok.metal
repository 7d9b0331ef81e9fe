#include <metal_stdlib>
using namespace metal;

typedef struct { half d; char qs[32]; } blk;
constant float kTable[4] = { 1.0f, 2.0f, 3.0f, 4.0f };
constant short FC_n [[function_constant(0)]];
constant short N = is_function_constant_defined(FC_n) ? FC_n : 4;
struct args { int n; float eps; };

static inline float twice(float x) { return 2 * x; }

template <typename T> inline T id(T x) { return x; }

kernel void k_ok(device const float * in [[buffer(0)]], device float * out [[buffer(1)]],
                 threadgroup float * sh [[threadgroup(0)]],
                 uint tid [[thread_position_in_threadgroup]]) {
    threadgroup float * p = sh + tid;
    threadgroup const float4 * q = (threadgroup const float4 *) sh;
    float acc[2] = { 0.0f, 0.0f };
    for (int i = 0; i < 2; i++) { acc[i] = kTable[i]; }
    *p = twice(in[tid]) + acc[0] + id(acc[1]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = sh[N - 1 - tid % N] + q[0].x;
}
