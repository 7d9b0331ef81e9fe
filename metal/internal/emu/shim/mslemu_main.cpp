// mslemu server: runs dispatches sent on stdin against buffers that live in a
// file shared with the Go process (as a Mac's GPU shares memory with its CPU).
//   mslemu-run SHARED_FILE            (function constants: env MSLEMU_FC, fixed per process)
// Commands, one per line; every command is answered by one line, "ok" or "err MESSAGE":
//   buf ID OFFSET LENGTH          map bytes [OFFSET, OFFSET+LENGTH) of the file as buffer ID
//   run KERNEL GX GY GZ TX TY TZ ORDER WORKERS ARG...
//       ARG: b:IDX:ID:OFF (buffer ID at byte OFF bound at [[buffer(IDX)]]),
//            c:IDX:HEX (setBytes: a private copy of exactly these bytes),
//            t:IDX:LEN (threadgroup memory length for [[threadgroup(IDX)]])
// Each buffer is mapped on its own, between two inaccessible guard pages; built with
// ASan, the bytes between its end and the next page are poisoned too, so an
// out-of-bounds access fails like a read past a Metal buffer should.
#include "mslemu_rt.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define MSLEMU_ASAN 1
#endif
#endif

namespace {
struct Buf { unsigned char *p; size_t n; };
std::map<long, Buf> bufs;
int fd = -1;
const size_t pg = (size_t)sysconf(_SC_PAGESIZE);

std::string map_buf(long id, size_t off, size_t n) {
  if (off % pg) return "offset not page-aligned";
  size_t len = (n + pg - 1) / pg * pg;
  if (len == 0) len = pg;
  void *r = mmap(nullptr, len + 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) return "mmap reserve failed";
  unsigned char *p = (unsigned char *)r + pg;
  if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)off) == MAP_FAILED) return "mmap failed";
#ifdef MSLEMU_ASAN
  ASAN_POISON_MEMORY_REGION(p + n, len - n);
#endif
  bufs[id] = Buf{p, n};
  return "";
}

int hexval(char c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

std::string run(std::istringstream &in) {
  std::string name;
  uint32_t grid[3], tg[3];
  mslemu::Options o;
  in >> name >> grid[0] >> grid[1] >> grid[2] >> tg[0] >> tg[1] >> tg[2] >> o.order >> o.workers;
  if (!in) return "malformed run command";
  mslemu::Thunk k = mslemu::find_kernel(name.c_str());
  if (!k) return "no kernel " + name;
  mslemu::Launch L;
  std::vector<void *> priv;
  std::string a, err;
  while (in >> a) {
    int idx = atoi(a.c_str() + 2);
    if (idx < 0 || idx >= mslemu::kMaxBind) { err = "bad index in " + a; break; }
    size_t c2 = a.find(':', 2);
    std::string rest = c2 == std::string::npos ? "" : a.substr(c2 + 1);
    if (a[0] == 'b') {
      long id = atol(rest.c_str());
      size_t off = strtoull(rest.substr(rest.find(':') + 1).c_str(), nullptr, 10);
      auto it = bufs.find(id);
      if (it == bufs.end()) { err = "unknown buffer " + std::to_string(id); break; }
      if (off > it->second.n) { err = "buffer offset past its end"; break; }
      L.buf[idx] = it->second.p + off;
    } else if (a[0] == 'c') {
      size_t n = rest.size() / 2;
      unsigned char *p = (unsigned char *)malloc(n ? n : 1);
      for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(hexval(rest[2 * i]) << 4 | hexval(rest[2 * i + 1]));
      priv.push_back(p);
      L.buf[idx] = p;
    } else if (a[0] == 't') {
      L.tgmem_len[idx] = strtoull(rest.c_str(), nullptr, 10);
    } else { err = "bad argument " + a; break; }
  }
  if (err.empty() && mslemu::dispatch(k, L, grid, tg, o) != 0) err = name + ": " + mslemu::last_error();
  for (void *p : priv) free(p);
  return err;
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: mslemu-run SHARED_FILE\n"); return 64; }
  fd = open(argv[1], O_RDWR);
  if (fd < 0) { perror(argv[1]); return 64; }
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, err;
    in >> cmd;
    if (cmd == "buf") {
      long id; size_t off, n;
      in >> id >> off >> n;
      err = in ? map_buf(id, off, n) : "malformed buf command";
    } else if (cmd == "run") {
      err = run(in);
    } else {
      err = "unknown command " + cmd;
    }
    for (char &c : err) if (c == '\n') c = ' ';
    if (err.empty()) std::cout << "ok" << std::endl;
    else std::cout << "err " << err << std::endl;
  }
  return 0;
}
