// mslemu runtime API: executes MSL compute kernels (compiled as C++) on the CPU.
// Threadgroups run on a pool of OS threads; the threads of one threadgroup run as fibers
// on one OS thread and are switched at threadgroup_barrier / simdgroup operations.
// This header must stay free of the MSL keyword macros (see shim.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace mslemu {

constexpr int kMaxBind = 31;      // Metal: 31 buffer slots
constexpr int kSimdWidth = 32;    // Apple GPUs
constexpr int kSlotBytes = 64;    // largest value a simd_* op can exchange

struct Builtins {
  uint32_t tpitg[3], tgpig[3], tptg[3], tgpg[3], tpig[3];
  uint32_t tiitg, tiisg, sgitg, sgptg;
};

struct Launch {
  void *buf[kMaxBind] = {};         // setBuffer / setBytes
  size_t tgmem_len[kMaxBind] = {};  // setThreadgroupMemoryLength
};

using Thunk = void (*)(const Launch &, const Builtins &, void *const *tgmem);

struct Options {
  int workers = 0;            // OS threads (0 = hardware_concurrency)
  int order = 0;              // lane scheduling order: 0 forward, 1 reverse, 2 shuffled
  bool strict_barrier = true; // error if some lanes returned while others wait at a barrier
  size_t stack_bytes = 256 << 10;
};

// Runs grid.x*grid.y*grid.z threadgroups of tptg threads (dispatchThreadgroups semantics).
// Returns 0, or prints a diagnostic and returns non-zero (divergent barrier, deadlock).
int dispatch(Thunk k, const Launch &L, const uint32_t grid[3], const uint32_t tptg[3], const Options &o);

// The diagnostic of the last failed dispatch.
std::string last_error();

// Kernel registry (filled by generated glue).
void register_kernel(const char *name, Thunk t);
Thunk find_kernel(const char *name);

// Function constants: values come from env MSLEMU_FC="index=value,index=value".
// kind: 0 signed int, 1 unsigned int, 2 float, 3 half, 4 bool
void fc_register_raw(void *addr, int kind, size_t size, int index);
bool fc_defined(const volatile void *addr);

// ---- called from inside kernels (lane side) ----
void tg_barrier();
void sg_barrier();
// Deposit `sz` bytes for this lane, wait for the simdgroup, and return all lanes' slots.
struct SgView { const unsigned char *slots; uint32_t active; uint32_t lane; };
SgView sg_exchange(const void *mine, size_t sz);

} // namespace mslemu
