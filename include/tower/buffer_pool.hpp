#pragma once
// A thread-local cache of large tensor buffers (4 KiB and up): every batched op makes a
// batch-sized tensor and frees it a few ops later, and glibc's malloc/free of such blocks
// (consolidation, bin searches) cost as much as a small op's arithmetic: a fifth of jacrev on a
// 64 x 64 map. A freed buffer waits in a size class of its thread for the next request of that
// class. Classes are four per power of two (a request gets at most 25% more than it asked
// for); each class keeps at most `max_blocks` buffers and a thread at most `max_bytes` in all,
// and a thread's cache is released when it exits. Buffers above 896 MiB are not cached.
// Under AddressSanitizer a cached buffer is poisoned (a use after free is still reported); with
// TOWER_NO_BUFFER_CACHE defined every buffer goes straight to operator new/delete (for
// valgrind's uninitialised-read checks, which a recycled buffer would hide).
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <new>

#include "tower/pool_allocator.hpp"  // TOWER_POOL_POISON / TOWER_POOL_UNPOISON

namespace tower::detail {

class buffer_pool : per_thread<buffer_pool> {
 public:
  static constexpr std::size_t min_bytes = std::size_t{1} << 12;
  static constexpr std::size_t max_blocks = 8;
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
      if (l.counts[c] < max_blocks && l.cached + class_bytes(c) <= max_bytes) {
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
  // Class c holds blocks of (4 + c % 4) * 2^(c / 4 + 10) bytes: 4 KiB, 5 KiB, 6 KiB, 7 KiB,
  // 8 KiB, 10 KiB, ..., 896 MiB. Larger requests (c >= classes) are not cached.
  static constexpr std::size_t classes = 72;
  static constexpr std::size_t class_bytes(std::size_t c) { return (4 + c % 4) << (c / 4 + 10); }
  /// The smallest class whose blocks hold `bytes`: with 2^(g+12) < bytes <= 2^(g+13), the class
  /// is 4g + (bytes / 2^(g+10) rounded up) - 4.
  static constexpr std::size_t class_of(std::size_t bytes) {
    if (bytes <= min_bytes) return 0;
    const std::size_t g = static_cast<std::size_t>(std::bit_width(bytes - 1)) - 13;
    const std::size_t unit = std::size_t{1} << (g + 10);
    return 4 * g + (bytes + unit - 1) / unit - 4;
  }
 private:

  std::array<entry*, classes> heads{};
  std::array<std::size_t, classes> counts{};
  std::size_t cached = 0;
};

static_assert(buffer_pool::class_of(4096) == 0 && buffer_pool::class_of(4097) == 1 && buffer_pool::class_of(8192) == 4 &&
              buffer_pool::class_of(8193) == 5 && buffer_pool::class_bytes(buffer_pool::class_of(1000000)) >= 1000000 &&
              buffer_pool::class_bytes(buffer_pool::class_of(1000000) - 1) < 1000000);

}  // namespace tower::detail
