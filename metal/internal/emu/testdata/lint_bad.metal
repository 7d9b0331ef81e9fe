#include <metal_stdlib>
#include "other.h"
using namespace metal;

device float * g_ptr;
float g_counter = 0;

kernel void k_tg_local(device float * out [[buffer(0)]], uint tid [[thread_position_in_threadgroup]]) {
    threadgroup float sh[32];
    static int calls = 0;
    sh[tid] = 1;
    out[tid] = sh[tid] + calls;
}

kernel void k_texture(texture2d<float> t [[texture(0)]]) {}
