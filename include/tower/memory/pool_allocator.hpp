#pragma once
// A thread-local free-list allocator for the runtime path's small, short-lived objects: the
// control blocks of dyn::value wrappers and runtime grad nodes (std::allocate_shared).
//
// Every op on the runtime path makes one or two of them, and a grad call frees them all when it
// returns, so recycling blocks of the same size makes the steady state free of heap
// allocations (the runtime tape's arena). Blocks are sized in 16-byte classes up to 512 bytes;
// larger requests go to operator new. A block freed on another thread joins that thread's list
// (memory migrates, nothing breaks); each list keeps at most `max_cached` blocks and frees the
// rest, and a thread's lists are released when the thread exits. Under AddressSanitizer a
// cached block is poisoned, so a use after free of a pooled object is still reported.
#include <array>
#include <cstddef>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define TOWER_POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TOWER_POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TOWER_POOL_POISON(p, n) ((void)(p), (void)(n))
#define TOWER_POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace tower::detail {

/// The per-thread instance of a cache (block_pool, buffer_pool) and its thread's "destroyed" flag.
/// The flag is trivially destructible, so it stays readable while other thread_locals are
/// destroyed: frees that arrive after the thread's cache is gone go straight to the heap. Each
/// Cache type has its own instance and flag.
template <class Cache>
struct per_thread {
  static Cache& local() {
    thread_local Cache c;
    return c;
  }
  static bool& dead() {
    thread_local bool d = false;
    return d;
  }
};

class block_pool : per_thread<block_pool> {
 public:
  static constexpr std::size_t granule = 16;
  static constexpr std::size_t classes = 32;  // up to 512 bytes
  static constexpr std::size_t max_cached = 1 << 14;

  static void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (c < classes && !dead())
      if (node*& head = local().heads[c]; head) {
        node* n = head;
        TOWER_POOL_UNPOISON(n, (c + 1) * granule);
        head = n->next;
        --local().counts[c];
        return n;
      }
    return ::operator new(c < classes ? (c + 1) * granule : bytes);
  }

  static void deallocate(void* p, std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    if (c < classes && !dead()) {
      block_pool& l = local();
      if (l.counts[c] < max_cached) {
        l.heads[c] = ::new (p) node{l.heads[c]};
        ++l.counts[c];
        TOWER_POOL_POISON(static_cast<char*>(p) + sizeof(node), (c + 1) * granule - sizeof(node));
        return;
      }
    }
    ::operator delete(p);
  }

  ~block_pool() {
    dead() = true;  // frees after this go straight to operator delete
    for (std::size_t c = 0; c < classes; ++c)
      while (node* n = heads[c]) {
        TOWER_POOL_UNPOISON(n, (c + 1) * granule);
        heads[c] = n->next;
        ::operator delete(n);
      }
  }

 private:
  struct node {
    node* next;
  };
  static std::size_t class_of(std::size_t bytes) { return (bytes + granule - 1) / granule - 1; }

  std::array<node*, classes> heads{};
  std::array<std::size_t, classes> counts{};
};

/// std::allocator-compatible front end of block_pool (for std::allocate_shared).
template <class T>
struct pool_allocator {
  using value_type = T;
  pool_allocator() = default;
  template <class U>
  pool_allocator(const pool_allocator<U>&) noexcept {}  // NOLINT: rebinding converts implicitly
  T* allocate(std::size_t n) { return static_cast<T*>(block_pool::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { block_pool::deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const pool_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace tower::detail
