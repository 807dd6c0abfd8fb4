#pragma once
// The random generator and vmap's randomness= policy, as the engine sees them (the random ops
// themselves are in dsl/random.hpp).
//
// Each thread draws from its own std::mt19937_64 (tw::manual_seed seeds it). vmap applies its
// policy in three places:
// - error (the default): while such a vmap runs on this thread, in any of its forms, a random op
//   raises (randomness_guard, check_randomness), whether or not its argument is batched: a count
//   on the thread, so a vmap that pushes no interpreter (the fused and fixed-rows forms) or that
//   a nested transform hides is still seen.
// - same: the batching rules draw one value of the logical shape for every example, and a
//   vmap that runs in chunks or packets restores the generator before each (same_draws), as
//   torch.func does, so chunk_size does not change the numbers.
// - different: vmap runs f one example at a time (a random factory such as tw::randn({3}) has
//   no argument whose type could carry a batch), so every draw is per example, in example order,
//   and chunk_size does not change the numbers either.
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "tower/core/error.hpp"
#include "tower/core/interpreter_stack.hpp"

namespace tower {

namespace detail {
inline std::mt19937_64& generator() {
  thread_local std::mt19937_64 g{0x5eed};
  return g;
}

/// A uniform draw in [0, 1) from 53 random bits (the same numbers with every standard library).
inline double uniform01() { return static_cast<double>(detail::generator()() >> 11) * 0x1.0p-53; }

/// How many vmaps with randomness=error are running on this thread.
inline int& random_error_vmaps() {
  thread_local int n = 0;
  return n;
}
}  // namespace detail

/// Seeds this thread's generator: the same seed gives the same draws.
/// \code
/// tw::manual_seed(7);
/// const tw::tensor<double> a = tw::randn<double>({4});
/// tw::manual_seed(7);
/// const tw::tensor<double> b = tw::randn<double>({4});
/// for (int i = 0; i < 4; ++i)
///   if (a.data()[i] != b.data()[i]) throw std::runtime_error("manual_seed");
/// \endcode
inline void manual_seed(std::uint64_t seed) { detail::generator().seed(seed); }

namespace detail {

/// RAII, for a vmap call: with randomness=error, random ops raise until it returns.
class randomness_guard {
 public:
  explicit randomness_guard(randomness_kind k) : on_(k == randomness_kind::error) {
    if (on_) ++random_error_vmaps();
  }
  ~randomness_guard() {
    if (on_) --random_error_vmaps();
  }
  randomness_guard(const randomness_guard&) = delete;
  randomness_guard& operator=(const randomness_guard&) = delete;

 private:
  bool on_;
};

[[noreturn, gnu::cold, gnu::noinline]] inline void random_in_error_mode(const char* op) {
  throw error(std::string("vmap: called random operation '") + op +
              "' while in randomness error mode; pass tw::randomness::same or tw::randomness::different to vmap, "
              "or draw outside vmap");
}

/// Called by every random op before it draws: raises while a vmap with randomness=error runs.
inline void check_randomness(const char* op) {
  if (random_error_vmaps() != 0) [[unlikely]]
    random_in_error_mode(op);
}

/// For a vmap that runs its batch in parts (chunks, packets): with randomness=same, each part
/// starts from the generator state the vmap started with, so every part draws the same values
/// as the whole batch at once. Call next() before each part.
class same_draws {
 public:
  explicit same_draws(randomness_kind k) {
    if (k == randomness_kind::same) saved_.emplace(generator());
  }
  void next() const {
    if (saved_) generator() = *saved_;
  }

 private:
  std::optional<std::mt19937_64> saved_;
};

/// The chunk size a vmap runs with: one example at a time under randomness=different.
inline std::int64_t chunk_for(randomness_kind k, std::int64_t chunk_size) {
  return k == randomness_kind::different ? 1 : chunk_size;
}

}  // namespace detail

}  // namespace tower
