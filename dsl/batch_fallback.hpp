#pragma once
// vmap's slow fallback for ops without a batching rule (functorch's per-example loop).
//
// When an op has no `batch` member, vmap still works: the op runs once per example on slices of
// the batched arguments (unbatched ones are passed whole) and the results are stacked along the
// batch dim. The first use of the fallback for an op prints a one-time warning naming it to
// stderr, on both paths. Strict mode turns a missing rule into a compile error on the static
// path, naming the op in the first line of the diagnostic:
//   #define TOWER_STRICT_VMAP            (before including tower) for every op, or
//   static constexpr bool strict_vmap = true;   in one op's struct.
// The runtime path has no compile time, so it always falls back (with the warning).
//
// Engine hook: vmap_interpreter::process (both paths) calls batch_rule_or_fallback.
#include <cstdint>
#include <iostream>
#include <type_traits>
#include <utility>
#include <vector>

#include "dsl/layout.hpp"
#include "tower/core/op_traits.hpp"

namespace tower {

namespace detail {

/// Instantiated only to fail: the op's type appears in the diagnostic's first line.
template <class Op>
struct op_has_no_batching_rule_and_vmap_is_strict {
  static_assert(
      sizeof(Op) == 0,
      "tower: vmap: this op has no batching rule, and strict vmap (TOWER_STRICT_VMAP or Op::strict_vmap) forbids the "
      "per-example fallback; give the op a batch(batch_size, bval...) member");
  static constexpr bool value = false;
};

template <class Op>
void warn_batch_fallback_once() {
  static const bool warned = [] {
    std::cerr << "tower: warning: op '" << Op::name
              << "' has no batching rule; vmap runs it once per example (slow fallback)\n";
    return true;
  }();
  (void)warned;
}

/// Example b of a batching-rule argument (the whole value when it is not batched).
template <class P, class B>
auto example_of(const bval<P, B>& x, std::int64_t b) {
  auto select = [&] {
    shape_t s = shape(x.value);
    s.erase(s.begin());
    return call_op(reshape_op{s}, call_op(narrow_op{0, b, 1}, x.value));
  };
  if constexpr (std::is_same_v<B, std::true_type>) return select();
  else if constexpr (std::is_same_v<B, std::false_type>) return x.value;
  else return x.batched ? select() : x.value;
}

/// The per-example loop: op on each example, results stacked along a new dim 0.
template <class Op, class BS, class... B>
auto batch_fallback(const Op& op, BS batch_size, const B&... x) {
  warn_batch_fallback_once<Op>();
  const auto n = static_cast<std::int64_t>(batch_size);
  using R = decltype(call_op(op, example_of(x, 0)...));
  std::vector<decltype(call_op(reshape_op{}, std::declval<R>()))> rows;
  rows.reserve(static_cast<std::size_t>(n));
  for (std::int64_t b = 0; b < n; ++b) {
    R r = call_op(op, example_of(x, b)...);
    shape_t s = shape(r);
    s.insert(s.begin(), 1);
    rows.push_back(call_op(reshape_op{s}, r));
  }
  if (rows.empty()) throw error(std::string("vmap: op '") + Op::name + "' has no batching rule and the batch is empty");
  return cat_range(rows.data(), rows.size(), 0);
}

/// What vmap_interpreter::process runs: the op's batching rule, or the per-example fallback.
template <class Op, class BS, class... B>
auto batch_rule_or_fallback(const Op& op, BS batch_size, const B&... x) {
  if constexpr (has_batch_rule_v<Op, BS, B...>) {
    return op.batch(batch_size, x...);
  } else {
    constexpr bool runtime_path = (std::is_same_v<decltype(x.batched), bool> || ...);
    constexpr bool strict = strict_vmap_v<Op> && !runtime_path;
    if constexpr (strict) {
      static_assert(op_has_no_batching_rule_and_vmap_is_strict<Op>::value);
    }
    return batch_fallback(op, batch_size, x...);
  }
}

}  // namespace detail
}  // namespace tower
