#pragma once
// Second-order rules of the transcendental functions on elementwise jets (elementwise_jet.hpp),
// the values f sees in a per-example Hessian on a tw::fixed (hessian_forward.hpp).
//
// The generic rule runs each element on hyper-duals, which calls <cmath> about twice per element
// (sin and cos of it). These rules take all elements at once: the function and each transcendental
// its derivatives need, one libmvec call per packet of elements (kernels/vector_math.hpp), then
//   f(x),  f'(x) g,  f'(x) h + f''(x) g^2    per element (value, first, second derivative).
// On R^8 that is 2 packet calls for sin instead of 16 scalar ones. f' is the op's own derivative
// (pointwise.hpp); the op checker's fixed forms (tests/op_checker.hpp) check every rule against
// central differences of the tape's gradient, and exp and tanh against the tensor path exactly.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "dsl/pointwise.hpp"
#include "tower/force_inline.hpp"
#include "tower/elementwise_jet.hpp"
#include "tower/grad_mode.hpp"
#include "tower/kernels/vector_math.hpp"

namespace tower::detail {
namespace jets {

template <class T, std::size_t n>
using numbers = std::array<T, n>;

/// Fn (a vmath function) of every number of x, a packet at a time.
template <class Fn, class T, std::size_t n>
TOWER_ALWAYS_INLINE numbers<T, n> packet_map(const numbers<T, n>& x) {
  numbers<T, n> r;
  kernels::vmath::apply<Fn>(x.data(), r.data(), static_cast<std::int64_t>(n));
  return r;
}

/// The rule of a unary function Fn whose derivatives Derivatives::run(x, f, d1, d2) fills from
/// the elements' values x and f = Fn(x).
template <class Fn, class Derivatives>
struct math_rule {
  template <class Op, class T, int N>
  TOWER_ALWAYS_INLINE static elementwise_jet<T, N> run(const Op&, const elementwise_jet<T, N>& x) {
    constexpr std::size_t n = static_cast<std::size_t>(N);
    const auto& in = x.e;
    elementwise_jet<T, N> r;
    r.e.v = packet_map<Fn>(in.v);
    if (!is_grad_enabled()) {  // under tw::no_grad, constants
      r.e.g.fill(T(0));
      r.e.h.fill(T(0));
      return r;
    }
    numbers<T, n> d1, d2;
    Derivatives::run(in.v, r.e.v, d1, d2);
    for (std::size_t i = 0; i < n; ++i) {
      r.e.g[i] = d1[i] * in.g[i];
      r.e.h[i] = d1[i] * in.h[i] + d2[i] * in.g[i] * in.g[i];
    }
    return r;
  }
};

}  // namespace jets

// One rule per function: its vmath tag, and the body that sets d1 (f') and d2 (f'') from x and f
// (arrays of n numbers; `each` runs a statement per element i).
#define TOWER_JET_MATH_RULE(NAME, BODY)                                                             \
  namespace jets {                                                                                  \
  struct NAME##_derivatives {                                                                       \
    template <class T, std::size_t n>                                                               \
    TOWER_ALWAYS_INLINE static void run([[maybe_unused]] const numbers<T, n>& x,                    \
                                        [[maybe_unused]] const numbers<T, n>& f, numbers<T, n>& d1, \
                                        numbers<T, n>& d2) {                                        \
      [[maybe_unused]] auto each = [](auto&& body) TOWER_INLINE_LAMBDA {                            \
        for (std::size_t i = 0; i < n; ++i) body(i);                                                \
      };                                                                                            \
      BODY                                                                                          \
    }                                                                                               \
  };                                                                                                \
  }                                                                                                 \
  template <>                                                                                       \
  struct jet_rule<NAME##_op> : jets::math_rule<kernels::vmath::NAME##_fn, jets::NAME##_derivatives> {};

namespace vm = kernels::vmath;
// clang-format off
TOWER_JET_MATH_RULE(exp,   d1 = f; d2 = f;)
TOWER_JET_MATH_RULE(expm1, each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = f[i] + T(1); }); d2 = d1;)
TOWER_JET_MATH_RULE(log,   each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = T(1) / x[i]; d2[i] = -(d1[i] * d1[i]); });)
TOWER_JET_MATH_RULE(log1p, each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = T(1) / (x[i] + T(1)); d2[i] = -(d1[i] * d1[i]); });)
TOWER_JET_MATH_RULE(sin,   d1 = packet_map<vm::cos_fn>(x); each([&](std::size_t i) TOWER_INLINE_LAMBDA { d2[i] = -f[i]; });)
TOWER_JET_MATH_RULE(cos,   d1 = packet_map<vm::sin_fn>(x); each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = -d1[i]; d2[i] = -f[i]; });)
TOWER_JET_MATH_RULE(tan,   each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = f[i] * f[i] + T(1); d2[i] = T(2) * f[i] * d1[i]; });)
TOWER_JET_MATH_RULE(tanh,  each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = T(1) - f[i] * f[i]; d2[i] = T(-2) * f[i] * d1[i]; });)
TOWER_JET_MATH_RULE(sinh,  d1 = packet_map<vm::cosh_fn>(x); d2 = f;)
TOWER_JET_MATH_RULE(cosh,  d1 = packet_map<vm::sinh_fn>(x); d2 = f;)
TOWER_JET_MATH_RULE(asin,  each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = T(1) / std::sqrt(T(1) - x[i] * x[i]); d2[i] = x[i] * d1[i] * d1[i] * d1[i]; });)
TOWER_JET_MATH_RULE(acos,  each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = T(-1) / std::sqrt(T(1) - x[i] * x[i]); d2[i] = x[i] * d1[i] * d1[i] * d1[i]; });)
TOWER_JET_MATH_RULE(atan,  each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = T(1) / (x[i] * x[i] + T(1)); d2[i] = T(-2) * x[i] * d1[i] * d1[i]; });)
TOWER_JET_MATH_RULE(erf,
  each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] = -(x[i] * x[i]); });
  d1 = packet_map<vm::exp_fn>(d1);
  each([&](std::size_t i) TOWER_INLINE_LAMBDA { d1[i] *= T(1.1283791670955126); d2[i] = T(-2) * x[i] * d1[i]; });)
// clang-format on
#undef TOWER_JET_MATH_RULE

}  // namespace tower::detail
