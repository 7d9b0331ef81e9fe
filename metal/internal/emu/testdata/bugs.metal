// Deliberately wrong kernels: the emulator must flag each of them.
#include <metal_stdlib>
using namespace metal;

// 1. missing threadgroup_barrier between the write and the cross-lane read
kernel void k_reverse_nobarrier(device const float * in [[buffer(0)]], device float * out [[buffer(1)]],
                                threadgroup float * sh [[threadgroup(0)]],
                                uint tid [[thread_position_in_threadgroup]], uint ntg [[threads_per_threadgroup]],
                                uint tg [[threadgroup_position_in_grid]]) {
    sh[tid] = in[tg * ntg + tid];
    out[tg * ntg + tid] = sh[ntg - 1 - tid];
}
// 1b. same with the barrier (correct)
kernel void k_reverse(device const float * in [[buffer(0)]], device float * out [[buffer(1)]],
                      threadgroup float * sh [[threadgroup(0)]],
                      uint tid [[thread_position_in_threadgroup]], uint ntg [[threads_per_threadgroup]],
                      uint tg [[threadgroup_position_in_grid]]) {
    sh[tid] = in[tg * ntg + tid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tg * ntg + tid] = sh[ntg - 1 - tid];
}
// 2. early return before a barrier
kernel void k_early_return(device const float * in [[buffer(0)]], device float * out [[buffer(1)]],
                           threadgroup float * sh [[threadgroup(0)]],
                           uint tid [[thread_position_in_threadgroup]], uint ntg [[threads_per_threadgroup]]) {
    if (tid >= ntg - 3) return;
    sh[tid] = in[tid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = sh[tid ^ 1];
}
// 3. simd_sum under divergent control flow while the other lanes sit at a barrier
kernel void k_divergent_simd(device float * out [[buffer(1)]], ushort tiisg [[thread_index_in_simdgroup]]) {
    float v = 1.0f;
    if (tiisg < 16) v = simd_sum(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tiisg] = v;
}
// 4. off-by-one read past the end of a device buffer
kernel void k_oob(device const float * in [[buffer(0)]], device float * out [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
    out[gid] = in[gid + 1];
}
// 5. shuffled lanes: a correct simd reduction and broadcast
kernel void k_simd(device const float * in [[buffer(0)]], device float * out [[buffer(1)]],
                   uint tid [[thread_position_in_threadgroup]], ushort tiisg [[thread_index_in_simdgroup]],
                   ushort sgitg [[simdgroup_index_in_threadgroup]]) {
    const float s = simd_sum(in[tid]);
    const float m = simd_max(in[tid]);
    const float b = simd_broadcast(in[tid], 3);
    const float x = simd_shuffle_xor(in[tid], 1);
    if (tiisg == 0) { out[sgitg * 3] = s; out[sgitg * 3 + 1] = m; out[sgitg * 3 + 2] = b; }
    out[64 + tid] = x;
}
// 6. function constant with a default
constant int FC_scale [[function_constant(7)]];
constant int SCALE = is_function_constant_defined(FC_scale) ? FC_scale : 2;
kernel void k_fc(device int * out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
    out[gid] = SCALE * int(gid);
}
// 7. misaligned vector load (UBSan)
kernel void k_misaligned(device const char * in [[buffer(0)]], device float * out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]]) {
    out[gid] = ((device const float *)(in + 1))[gid];
}
// 8. a kernel that never ends
kernel void k_forever(device volatile int * out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
    while (out[0] == 0) { out[1] = out[1] + 1; }
}
