#pragma once
// Random ops and vmap's randomness= policy (torch.func semantics).
//
//   tw::manual_seed(7);
//   auto noisy = [](auto x) { return x + tw::randn_like(x) * 0.1; };
//   tw::vmap(noisy, tw::randomness::different)(X);   // independent noise per example
//   tw::vmap(noisy, tw::randomness::same)(X);        // the same noise for every example
//   tw::vmap(noisy)(X);                              // tower::error: randomness is 'error'
//
// randn_like(x) draws standard normal values of x's logical shape from a thread-local generator.
// Under grad it is a constant; under vmap its batching rule follows the vmap's randomness.
#include <cmath>
#include <cstdint>
#include <random>

#include "dsl/pointwise.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/interpreter_stack.hpp"
#include "tower/kernels.hpp"
#include "tower/op.hpp"

namespace tower {

namespace detail {
inline std::mt19937_64& generator() {
  thread_local std::mt19937_64 g{0x5eed};
  return g;
}
}  // namespace detail

/// Seeds this thread's generator.
inline void manual_seed(std::uint64_t seed) { detail::generator().seed(seed); }

/// The op of tw::randn_like: vmap's randomness option decides what each example draws.
struct randn_like_op {
  static constexpr const char* name = "randn_like";
  static constexpr bool differentiable = false;
  template <class X> auto base(const X& x) const {
    std::normal_distribution<double> n;
    return kernels::map(x, [&](auto) { return n(detail::generator()); });
  }
  template <class BS, class X>
  auto batch_with_entry(const interpreter_entry& e, BS bs, const X& x) const {
    switch (e.randomness) {
      case randomness_kind::different:
        return call_op(*this, x.value);
      case randomness_kind::same: {
        // One draw of the logical shape, the same for every example.
        (void)bs;
        shape_t one = logical_shape(x);
        one.insert(one.begin(), 1);
        using P = std::remove_cvref_t<decltype(x.value)>;
        using T = typename std::conditional_t<is_dyn_v<P>, std::type_identity<double>, kernels::element_of<base_type_t<P>>>::type;
        const tensor<T> draw = base(zeros<T>(one));
        return call_op(add_op{}, call_op(zeros_like_op{}, x.value), draw);
      }
      case randomness_kind::error:
        break;
    }
    throw error("vmap: random op 'randn_like' called inside vmap with randomness='error'; "
                "pass tw::randomness::same or tw::randomness::different to vmap");
  }
};

/// Standard normal values with x's shape (see the randomness note above).
inline constexpr op_fn<randn_like_op> randn_like{};

}  // namespace tower
