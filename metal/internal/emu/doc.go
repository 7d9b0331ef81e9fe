// Package emu runs Metal compute kernels on the CPU so that they can be
// tested where there is no Mac: the same .metal bytes are compiled as C++
// (clang 16) against a shim of metal_stdlib, and executed with the
// threadgroups on OS threads and the lanes of a threadgroup as fibers
// switched at barriers and simd_* calls, in a chosen lane order.
//
// What it catches: missing barriers (lane orders forward, reverse and
// shuffled give different results; threadgroup memory starts poisoned),
// returns before a barrier, simd_* under divergent control flow,
// out-of-bounds buffer accesses and undefined behaviour (the sanitized
// build), and, by Lint, code whose meaning would silently differ here.
// What it cannot show: that Apple's compiler accepts a file, the GPU's
// numerics (fast math, reduction order), its limits and its speed: its
// timings are not a speed figure for any GPU.
//
// Programs are cached by content hash under os.UserCacheDir()/strata/mslemu.
package emu
