#pragma once
// A thread-local cache of tensor buffers of 1 KiB and up: every batched op makes a batch-sized
// tensor and frees it a few ops later, and glibc's malloc/free of such blocks (consolidation, bin
// searches) cost as much as a small op's arithmetic: a fifth of jacrev on a 64 x 64 map, a tenth
// of vmap's packets of 256 examples (2 KiB per value). Below 1 KiB glibc's per-thread cache
// (tcache) does the same. A freed buffer waits in a size class of its thread for the next request
// of that class. Classes are four per power of two (a request gets at most 25% more than it asked
// for); each class keeps at most `max_blocks(c)` buffers (8, or as many as fill 256 KiB: a
// backward pass over a packet frees dozens of its small values at once, and each one turned away
// would be a malloc again in the next packet), a thread at most `max_bytes` in all, and a
// thread's cache is released when it exits. Buffers above 896 MiB are not cached.
// Under AddressSanitizer a cached buffer is poisoned (a use after free is still reported); with
// TOWER_NO_BUFFER_CACHE defined every buffer goes straight to operator new/delete (for
// valgrind's uninitialised-read checks, which a recycled buffer would hide).
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>

#include "tower/memory/pool_allocator.hpp"  // TOWER_POOL_POISON / TOWER_POOL_UNPOISON

namespace tower::detail {

class buffer_pool : per_thread<buffer_pool> {
 public:
  static constexpr std::size_t min_shift = 10;
  static constexpr std::size_t min_bytes = std::size_t{1} << min_shift;
  static constexpr std::size_t max_bytes = std::size_t{1} << 28;
  static constexpr std::align_val_t alignment{64};  // a cache line, and AVX-512's vector width
#if defined(TOWER_NO_BUFFER_CACHE)
  static constexpr bool enabled = false;
#else
  static constexpr bool enabled = true;
#endif

  /// Whether a request of this many bytes goes through the pool (else the caller's allocator).
  static constexpr bool pooled(std::size_t bytes) { return bytes >= min_bytes; }

  static void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (c < classes && enabled && !dead()) {
      buffer_pool& l = local();
      if (entry*& head = l.heads[c]; head) {
        entry* e = head;
        TOWER_POOL_UNPOISON(e, class_bytes(c));
        head = e->next;
        --l.counts[c];
        l.cached -= class_bytes(c);
        return e;
      }
    }
    return ::operator new(c < classes ? class_bytes(c) : bytes, alignment);
  }

  static void deallocate(void* p, std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    if (c < classes && enabled && !dead()) {
      buffer_pool& l = local();
      if (l.counts[c] < max_blocks(c) && l.cached + class_bytes(c) <= max_bytes) {
        l.heads[c] = ::new (p) entry{l.heads[c]};
        ++l.counts[c];
        l.cached += class_bytes(c);
        TOWER_POOL_POISON(static_cast<char*>(p) + sizeof(entry), class_bytes(c) - sizeof(entry));
        return;
      }
    }
    ::operator delete(p, alignment);
  }

  ~buffer_pool() {
    dead() = true;  // frees after this go straight to operator delete
    for (std::size_t c = 0; c < classes; ++c)
      while (entry* e = heads[c]) {
        TOWER_POOL_UNPOISON(e, class_bytes(c));
        heads[c] = e->next;
        ::operator delete(e, alignment);
      }
  }

 private:
  struct entry {
    entry* next;
  };

 public:
  // Class c holds blocks of (4 + c % 4) * 2^(c / 4 + min_shift - 2) bytes: 1 KiB, 1.25 KiB,
  // 1.5 KiB, 1.75 KiB, 2 KiB, 2.5 KiB, ..., 896 MiB. Larger requests (c >= classes) are not cached.
  static constexpr std::size_t classes = 4 * (30 - min_shift);
  static constexpr std::size_t class_bytes(std::size_t c) { return (4 + c % 4) << (c / 4 + min_shift - 2); }
  static constexpr std::size_t max_blocks(std::size_t c) {
    return std::max<std::size_t>(8, (std::size_t{1} << 18) / class_bytes(c));
  }
  /// The smallest class whose blocks hold `bytes`: with 2^(g+min_shift) < bytes <= 2^(g+min_shift+1),
  /// the class is 4g + (bytes / 2^(g+min_shift-2) rounded up) - 4.
  static constexpr std::size_t class_of(std::size_t bytes) {
    if (bytes <= min_bytes) return 0;
    const std::size_t g = static_cast<std::size_t>(std::bit_width(bytes - 1)) - (min_shift + 1);
    const std::size_t unit = std::size_t{1} << (g + min_shift - 2);
    return 4 * g + (bytes + unit - 1) / unit - 4;
  }

 private:
  std::array<entry*, classes> heads{};
  std::array<std::size_t, classes> counts{};
  std::size_t cached = 0;
};

static_assert(buffer_pool::class_of(1024) == 0 && buffer_pool::class_of(1025) == 1 &&
              buffer_pool::class_of(2048) == 4 && buffer_pool::class_of(2049) == 5 &&
              buffer_pool::class_bytes(buffer_pool::classes - 1) == std::size_t{896} << 20 &&
              buffer_pool::class_bytes(buffer_pool::class_of(1000000)) >= 1000000 &&
              buffer_pool::class_bytes(buffer_pool::class_of(1000000) - 1) < 1000000);

}  // namespace tower::detail
