#pragma once
// The live interpreter stack (functorch's DynamicLayerStack), one per thread.
//
// Every transform call, static or runtime, pushes one entry for as long as it runs. The runtime
// path dispatches by peeking it; the static path uses it only to check, once per transform call,
// that the level its types predict is above every live level (transforms/static/level.hpp), and to
// tell live wrappers from escaped ("dead") ones by their serial.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "tower/core/error.hpp"
#include "tower/core/transform_type.hpp"

namespace tower {

/// One live transform: its key, level and per-transform metadata.
/// vmap's policy for random ops (torch.func's randomness=).
enum class randomness_kind : int { error = 0, same = 1, different = 2 };

struct interpreter_entry {
  transform_type key;
  int level;
  std::uint64_t serial;                                 // unique per transform call in the process: wrappers carry it
  std::int64_t batch_size = 0;                          // vmap
  randomness_kind randomness = randomness_kind::error;  // vmap
  bool prev_grad_mode = true;      // grad: the grad mode in force when it was entered (no_grad_below_guard)
  bool prev_fwd_grad_mode = true;  // jvp: the forward-mode counterpart (fwd_grad_scope)
  void* state = nullptr;           // per-transform runtime state (the grad tape)
};

namespace detail {
// The stack holds pointers: each entry lives in its interpreter_scope (one per transform call),
// so lowering pops and pushes a pointer, and an interpreter's entry never moves while it lives.
struct interpreter_stack_state {
  std::vector<interpreter_entry*> entries;
  std::uint64_t next_serial = 0, serial_end = 0;  // this thread's block of serials: [next, end)
};
inline interpreter_stack_state& interpreter_stack() {
  thread_local interpreter_stack_state s;
  return s;
}
/// A fresh transform serial, never 0, unique in the process: a value that escaped a transform on
/// one thread never matches a live transform on another (it is dead there). Each thread takes
/// blocks of serials from one atomic counter, so a transform call costs no atomic operation.
inline std::uint64_t next_serial(interpreter_stack_state& s) {
  constexpr std::uint64_t block = std::uint64_t{1} << 16;
  static std::atomic<std::uint64_t> blocks{0};
  if (s.next_serial == s.serial_end) [[unlikely]] {
    s.next_serial = blocks.fetch_add(1, std::memory_order_relaxed) * block + 1;
    s.serial_end = s.next_serial + block - 1;
  }
  return s.next_serial++;
}
}  // namespace detail

/// The live entries, bottom to top.
inline const std::vector<interpreter_entry*>& interpreter_stack_entries() {
  return detail::interpreter_stack().entries;
}

/// The number of live transforms on this thread's runtime interpreter stack (0 outside any).
inline std::size_t interpreter_stack_depth() { return detail::interpreter_stack().entries.size(); }

/// Highest live level (0 when no transform is live).
inline int top_live_level() {
  const auto& e = detail::interpreter_stack().entries;
  return e.empty() ? 0 : e.back()->level;
}

/// The top of the stack; tower::error when no transform is live.
inline const interpreter_entry& retrieve_current_interpreter() {
  const auto& e = detail::interpreter_stack().entries;
  if (e.empty()) throw error("retrieve_current_interpreter: no transform is active");
  return *e.back();
}

/// The live entry with this serial, or nullptr when its transform has returned.
inline const interpreter_entry* find_live_interpreter(std::uint64_t serial) {
  const auto& e = detail::interpreter_stack().entries;
  for (auto it = e.rbegin(); it != e.rend(); ++it)
    if ((*it)->serial == serial) return *it;
  return nullptr;
}

inline const interpreter_entry* find_live_level(int level) {
  const auto& e = detail::interpreter_stack().entries;
  for (auto it = e.rbegin(); it != e.rend(); ++it)
    if ((*it)->level == level) return *it;
  return nullptr;
}

/// RAII: pushes a fresh entry for a transform call and pops it on exit, exceptions included.
class interpreter_scope {
 public:
  interpreter_scope(transform_type key, int level) : entry_{key, level, 0} {
    auto& s = detail::interpreter_stack();
    if (!s.entries.empty() && level <= s.entries.back()->level)
      throw error(to_string(key) + ": level " + std::to_string(level) + " is not above the live level " +
                  std::to_string(s.entries.back()->level));
    entry_.serial = detail::next_serial(s);
    s.entries.push_back(&entry_);
    depth_ = s.entries.size();
  }
  ~interpreter_scope() {
    auto& e = detail::interpreter_stack().entries;
    if (e.size() >= depth_) e.resize(depth_ - 1);
  }
  interpreter_scope(const interpreter_scope&) = delete;
  interpreter_scope& operator=(const interpreter_scope&) = delete;

  interpreter_entry& entry() { return entry_; }

 private:
  interpreter_entry entry_;
  std::size_t depth_;
};

/// RAII: takes the live entries at `level` and above off the stack for the scope and puts them
/// back on exit, exceptions included. For a static transform whose function holds no values
/// (transforms/static/level.hpp): nothing of those transforms can reach it, so it runs at the level its
/// arguments predict, below them. Allocates only when there is something to hide.
class hide_live_levels {
 public:
  explicit hide_live_levels(int level) : entries_(detail::interpreter_stack().entries) {
    while (!entries_.empty() && entries_.back()->level >= level) {
      hidden_.push_back(entries_.back());
      entries_.pop_back();
    }
  }
  ~hide_live_levels() { entries_.insert(entries_.end(), hidden_.rbegin(), hidden_.rend()); }
  hide_live_levels(const hide_live_levels&) = delete;
  hide_live_levels& operator=(const hide_live_levels&) = delete;

 private:
  std::vector<interpreter_entry*>& entries_;  // this thread's stack
  std::vector<interpreter_entry*> hidden_;    // top first
};

/// RAII: pops the top entry for the scope and pushes it back on exit, exceptions included
/// (functorch's temporarilyPopInterpreterStack, used by lowering on the runtime path).
class temporarily_pop_interpreter_stack {
 public:
  temporarily_pop_interpreter_stack() : entries_(detail::interpreter_stack().entries) {
    if (entries_.empty()) [[unlikely]]
      none_active();
    saved_ = entries_.back();
    entries_.pop_back();
  }
  ~temporarily_pop_interpreter_stack() { entries_.push_back(saved_); }
  temporarily_pop_interpreter_stack(const temporarily_pop_interpreter_stack&) = delete;
  temporarily_pop_interpreter_stack& operator=(const temporarily_pop_interpreter_stack&) = delete;

 private:
  [[noreturn, gnu::cold, gnu::noinline]] static void none_active() {
    throw error("temporarily_pop_interpreter_stack: no transform is active");
  }
  std::vector<interpreter_entry*>& entries_;  // this thread's stack (one thread-local lookup)
  interpreter_entry* saved_ = nullptr;
};

}  // namespace tower
