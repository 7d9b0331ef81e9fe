// mslemu runtime: fiber scheduler for MSL compute dispatches. Build WITHOUT shim.h.
#include "mslemu_rt.h"
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(MSLEMU_UCONTEXT)
#define MSLEMU_ASM 1
// void mslemu_swap(void **save_sp, void *to_sp): save callee-saved regs on this stack, switch.
asm(R"(
.text
.globl mslemu_swap
.type mslemu_swap,@function
mslemu_swap:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
.size mslemu_swap,.-mslemu_swap
)");
extern "C" void mslemu_swap(void **save, void *to);
#else
#define MSLEMU_ASM 0
#include <ucontext.h>
#endif

namespace mslemu {
namespace {

enum State : uint8_t { RUN, WAIT_TG, WAIT_SG, DONE };

struct Lane {
  State st;
  uint32_t seq;   // simd ops executed so far
  Builtins b;
  char *stack;    // usable stack (above guard page)
#if MSLEMU_ASM
  void *sp;
#else
  ucontext_t uc;
#endif
};

struct Worker {
  std::vector<Lane> lanes;
  size_t stack_bytes = 0;
  uint32_t n = 0, nsg = 0;
  std::vector<unsigned char> sgbuf;   // [nsg][2][32][kSlotBytes]
  std::vector<uint32_t> sgmask;       // [nsg][2]
  std::vector<unsigned char> tgmem[kMaxBind];
  void *tgptr[kMaxBind] = {};
  const Launch *L = nullptr;
  Thunk k = nullptr;
  uint32_t cur = 0;
#if MSLEMU_ASM
  void *sched_sp = nullptr;
#else
  ucontext_t sched_uc;
#endif
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  std::vector<uint32_t> perm;
  ~Worker() {
    for (auto &l : lanes) if (l.stack) munmap(l.stack - getpagesize(), stack_bytes + getpagesize());
  }
};

thread_local Worker *tw = nullptr;

inline void to_sched(Lane &l) {
#if MSLEMU_ASM
  mslemu_swap(&l.sp, tw->sched_sp);
#else
  swapcontext(&l.uc, &tw->sched_uc);
#endif
}

void lane_entry() {
  Worker *w = tw;
  Lane &l = w->lanes[w->cur];
  w->k(*w->L, l.b, w->tgptr);
  l.st = DONE;
  to_sched(w->lanes[tw->cur]);
  __builtin_unreachable();
}

void init_lane_ctx(Worker &w, Lane &l) {
#if MSLEMU_ASM
  uintptr_t top = (uintptr_t)(l.stack + w.stack_bytes) & ~(uintptr_t)15;
  void **sp = (void **)(top - 64);
  for (int i = 0; i < 6; i++) sp[i] = nullptr;   // r15 r14 r13 r12 rbx rbp
  sp[6] = (void *)&lane_entry;                    // "return" address
  sp[7] = nullptr;
  l.sp = sp;
#else
  getcontext(&l.uc);
  l.uc.uc_stack.ss_sp = l.stack;
  l.uc.uc_stack.ss_size = w.stack_bytes;
  l.uc.uc_link = nullptr;
  makecontext(&l.uc, (void (*)())lane_entry, 0);
#endif
}

void ensure_lanes(Worker &w, uint32_t n, size_t stack_bytes) {
  if (w.lanes.size() >= n && w.stack_bytes == stack_bytes) return;
  for (auto &l : w.lanes) if (l.stack) munmap(l.stack - getpagesize(), w.stack_bytes + getpagesize());
  w.lanes.assign(n, Lane{});
  w.stack_bytes = stack_bytes;
  size_t pg = getpagesize();
  for (auto &l : w.lanes) {
    char *m = (char *)mmap(nullptr, stack_bytes + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); exit(70); }
    mprotect(m, pg, PROT_NONE);   // guard page below the stack
    l.stack = m + pg;
  }
}

std::mutex err_mu;
std::string err_text;

void set_error(const std::string &m) {
  std::lock_guard<std::mutex> g(err_mu);
  if (err_text.empty()) err_text = m;
}

bool fail(const uint32_t tg[3], const char *msg, int lane) {
  char buf[320];
  snprintf(buf, sizeof buf, "threadgroup (%u,%u,%u) lane %d: %s", tg[0], tg[1], tg[2], lane, msg);
  set_error(buf);
  return false;
}

bool run_tg(Worker &w, const uint32_t tg[3], const uint32_t grid[3], const uint32_t tptg[3], const Options &o) {
  const uint32_t n = w.n;
  for (int i = 0; i < kMaxBind; i++)
    if (!w.tgmem[i].empty()) memset(w.tgmem[i].data(), 0xFF, w.tgmem[i].size());  // poison: NaN / -1
  for (uint32_t i = 0; i < n; i++) {
    Lane &l = w.lanes[i];
    l.st = RUN; l.seq = 0;
    Builtins &b = l.b;
    b.tpitg[0] = i % tptg[0]; b.tpitg[1] = (i / tptg[0]) % tptg[1]; b.tpitg[2] = i / (tptg[0] * tptg[1]);
    for (int d = 0; d < 3; d++) {
      b.tgpig[d] = tg[d]; b.tptg[d] = tptg[d]; b.tgpg[d] = grid[d];
      b.tpig[d] = tg[d] * tptg[d] + b.tpitg[d];
    }
    b.tiitg = i; b.tiisg = i % kSimdWidth; b.sgitg = i / kSimdWidth; b.sgptg = w.nsg;
    init_lane_ctx(w, l);
  }
  w.perm.resize(n);
  for (uint32_t i = 0; i < n; i++) w.perm[i] = o.order == 1 ? n - 1 - i : i;
  if (o.order == 2)
    for (uint32_t i = n - 1; i > 0; i--) {
      w.rng ^= w.rng << 13; w.rng ^= w.rng >> 7; w.rng ^= w.rng << 17;
      std::swap(w.perm[i], w.perm[w.rng % (i + 1)]);
    }
  for (;;) {
    for (uint32_t j = 0; j < n; j++) {
      uint32_t i = w.perm[j];
      Lane &l = w.lanes[i];
      if (l.st != RUN) continue;
      w.cur = i;
#if MSLEMU_ASM
      mslemu_swap(&w.sched_sp, l.sp);
#else
      swapcontext(&w.sched_uc, &l.uc);
#endif
    }
    bool released = false;
    uint32_t ndone = 0;
    for (uint32_t s = 0; s < w.nsg; s++) {
      uint32_t lo = s * kSimdWidth, hi = std::min(n, lo + kSimdWidth);
      uint32_t nsgw = 0, ntg = 0, seq = ~0u, mask = 0;
      for (uint32_t i = lo; i < hi; i++) {
        Lane &l = w.lanes[i];
        if (l.st == WAIT_SG) {
          if (nsgw && l.seq != seq) return fail(tg, "divergent simdgroup operations (lanes at different simd_* calls)", i);
          seq = l.seq; nsgw++; mask |= 1u << (i - lo);
        } else if (l.st == WAIT_TG) ntg++;
        else if (l.st == DONE) ndone++;
      }
      if (nsgw) {
        if (ntg) return fail(tg, "simd_* op in divergent control flow: other lanes of the simdgroup wait at threadgroup_barrier", lo);
        w.sgmask[s * 2 + (seq & 1)] = mask;
        for (uint32_t i = lo; i < hi; i++) if (w.lanes[i].st == WAIT_SG) w.lanes[i].st = RUN;
        released = true;
      }
    }
    if (released) continue;
    if (ndone == n) return true;
    if (ndone && o.strict_barrier) {
      char msg[160];
      snprintf(msg, sizeof msg, "threadgroup_barrier reached while %u of %u threads already returned (UB in Metal)", ndone, n);
      return fail(tg, msg, -1);
    }
    for (uint32_t i = 0; i < n; i++) if (w.lanes[i].st == WAIT_TG) w.lanes[i].st = RUN;
  }
}

std::mutex reg_mu;
std::map<std::string, Thunk> &kernels() { static std::map<std::string, Thunk> m; return m; }
std::map<const volatile void *, bool> &fcs() { static std::map<const volatile void *, bool> m; return m; }

} // namespace

void tg_barrier() {
  Lane &l = tw->lanes[tw->cur];
  l.st = WAIT_TG;
  to_sched(l);
}

SgView sg_exchange(const void *mine, size_t sz) {
  Worker *w = tw;
  uint32_t lane = w->cur;
  Lane &l = w->lanes[lane];
  uint32_t s = lane / kSimdWidth, p = l.seq & 1;
  unsigned char *slots = &w->sgbuf[((size_t)(s * 2 + p) * kSimdWidth) * kSlotBytes];
  if (sz) memcpy(slots + (lane % kSimdWidth) * kSlotBytes, mine, sz);
  l.st = WAIT_SG;
  to_sched(l);
  Lane &l2 = tw->lanes[lane];
  l2.seq++;
  return SgView{slots, tw->sgmask[s * 2 + p], lane % kSimdWidth};
}

void sg_barrier() { (void)sg_exchange(nullptr, 0); }

int dispatch(Thunk k, const Launch &L, const uint32_t grid[3], const uint32_t tptg[3], const Options &o) {
  const uint64_t ntg = (uint64_t)grid[0] * grid[1] * grid[2];
  const uint32_t n = tptg[0] * tptg[1] * tptg[2];
  { std::lock_guard<std::mutex> g(err_mu); err_text.clear(); }
  if (n == 0 || n > 1024) { set_error("threadgroup of " + std::to_string(n) + " threads (Metal allows 1..1024)"); return 2; }
  if (ntg == 0) return 0;
  int nw = o.workers > 0 ? o.workers : (int)std::thread::hardware_concurrency();
  if ((uint64_t)nw > ntg) nw = (int)ntg;
  std::atomic<uint64_t> next{0};
  std::atomic<int> err{0};
  auto body = [&](int wid) {
    Worker w;
    tw = &w;
    w.rng += wid * 0x1234567ull;
    w.n = n; w.nsg = (n + kSimdWidth - 1) / kSimdWidth;
    ensure_lanes(w, n, o.stack_bytes);
    w.sgbuf.assign((size_t)w.nsg * 2 * kSimdWidth * kSlotBytes, 0);
    w.sgmask.assign(w.nsg * 2, 0);
    for (int i = 0; i < kMaxBind; i++) {
      w.tgmem[i].assign(L.tgmem_len[i], 0);
      w.tgptr[i] = L.tgmem_len[i] ? w.tgmem[i].data() : nullptr;
    }
    w.L = &L; w.k = k;
    for (;;) {
      uint64_t t = next.fetch_add(1);
      if (t >= ntg || err.load()) break;
      uint32_t tg[3] = {(uint32_t)(t % grid[0]), (uint32_t)((t / grid[0]) % grid[1]), (uint32_t)(t / ((uint64_t)grid[0] * grid[1]))};
      if (!run_tg(w, tg, grid, tptg, o)) { err = 1; break; }
    }
    tw = nullptr;
  };
  if (nw <= 1) body(0);
  else {
    std::vector<std::thread> th;
    for (int i = 0; i < nw; i++) th.emplace_back(body, i);
    for (auto &t : th) t.join();
  }
  return err.load() ? 3 : 0;
}

std::string last_error() { std::lock_guard<std::mutex> g(err_mu); return err_text; }

void register_kernel(const char *name, Thunk t) { std::lock_guard<std::mutex> g(reg_mu); kernels()[name] = t; }
Thunk find_kernel(const char *name) {
  std::lock_guard<std::mutex> g(reg_mu);
  auto it = kernels().find(name);
  return it == kernels().end() ? nullptr : it->second;
}

void fc_register_raw(void *addr, int kind, size_t size, int index) {
  const char *env = getenv("MSLEMU_FC");
  bool defined = false;
  if (env) {
    std::string s(env);
    size_t pos = 0;
    while (pos < s.size()) {
      size_t end = s.find(',', pos);
      if (end == std::string::npos) end = s.size();
      std::string item = s.substr(pos, end - pos);
      pos = end + 1;
      size_t eq = item.find('=');
      if (eq == std::string::npos || atoi(item.substr(0, eq).c_str()) != index) continue;
      std::string v = item.substr(eq + 1);
      defined = true;
      long long iv = (v == "true") ? 1 : (v == "false") ? 0 : strtoll(v.c_str(), nullptr, 0);
      double dv = strtod(v.c_str(), nullptr);
      switch (kind) {
      case 0: case 1: memcpy(addr, &iv, size); break;   // little-endian truncation
      case 2: { float f = (float)dv; memcpy(addr, &f, 4); break; }
      case 3: { _Float16 h = (_Float16)dv; memcpy(addr, &h, 2); break; }
      case 4: { bool b = iv != 0; memcpy(addr, &b, 1); break; }
      }
    }
  }
  std::lock_guard<std::mutex> g(reg_mu);
  fcs()[addr] = defined;
}

bool fc_defined(const volatile void *addr) {
  std::lock_guard<std::mutex> g(reg_mu);
  auto it = fcs().find(addr);
  return it != fcs().end() && it->second;
}

} // namespace mslemu
