#pragma once
// elementwise_jet<T, N>: what f sees as x when hessian runs on a tw::fixed<T, N> (jacobian_rows.hpp).
//
// Forward over forward mode carries, for every element of every value, the n first and n^2 second
// derivatives: on R^8, x * x alone costs 8 x 81 numbers. But as long as a value is x through
// elementwise ops, its element i depends on x_i only, so one first and one second derivative per
// element describe it exactly. elementwise_jet stores that, by component: element i's value,
// d/dx_i and d^2/dx_i^2 of its own x_i.
//   - an elementwise op on jets, numbers and fixed values of numbers (of size N or 1) runs once
//     for all elements, on lanes: a dual of a dual (scalar_dual.hpp) whose value is the vector of
//     the elements' values, both levels in the direction of each element's own input. The op's own
//     rules run on whole vectors (a transcendental a packet at a time): 3 numbers per element
//     instead of 81, and no rule written for jets;
//   - sum of all elements gives the dense value, jet2<T, N> (jet2.hpp), with gradient d_i and
//     Hessian diag(d2_i);
//   - everything else (indexing, dot, broadcasting against a dense value, ...) first turns each
//     element into that dense type (the elements then no longer share one input) and runs there.
// So every op gives the numbers forward over forward mode gives, and f never sees the lanes (an
// element's derivatives mean something only at its position).
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tower/core/force_inline.hpp"
#include "tower/tensor/fixed.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/static/jet2.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/scalar_dual.hpp"

namespace tower {

template <class Op, class... A>
auto call_op(const Op& op, const A&... a);  // op.hpp

namespace detail::jets {
/// A value with n first and n^2 second derivatives.
template <class T, int N>
using dense_t = jet2<T, N>;

/// Element i (value v, d/dx_i g, d^2/dx_i^2 h) as a value of all n inputs (the first derivatives
/// at both levels and the second at (i, i); the rest structural zeros).
template <class T, int N>
TOWER_ALWAYS_INLINE dense_t<T, N> dense(T v, T g, T h, std::size_t i) {
  dense_t<T, N> r;
  r.v = v;
  r.g.fill(T(0));
  r.h.fill(T(0));
  r.g[i] = g;
  r.h[i * static_cast<std::size_t>(N) + i] = h;
  return r;
}

/// All elements of jets of n elements at once: a dual of a dual whose value is the vector of the
/// elements' values (is_lanes_dual_v), both levels in the direction of each element's own input.
template <class T, int N>
using lanes_t = scalar_dual<scalar_dual<fixed<T, N>, 1>, 1>;
}  // namespace detail::jets

/// The elements of an elementwise_jet, stored by component (values, first, second derivatives:
/// an op on all elements reads and writes whole vectors). Reading one gives it as a value of all
/// n inputs.
template <class T, int N>
struct jet_elements {
  using numbers = std::array<T, static_cast<std::size_t>(N)>;
  numbers v, g, h;  // element i: value, d/dx_i, d^2/dx_i^2 (tower's, not f's: see the header comment)
  detail::jets::dense_t<T, N> operator[](std::size_t i) const { return detail::jets::dense<T, N>(v[i], g[i], h[i], i); }
  static constexpr std::size_t size() { return static_cast<std::size_t>(N); }
};

template <class T, int N>
struct elementwise_jet {
  static_assert(N >= 1 && N <= 32, "elementwise_jet: 1 to 32 elements");
  using value_type = detail::jets::dense_t<T, N>;  // what reading an element gives
  using scalar_type = T;
  static constexpr int size = N;
  jet_elements<T, N> e;
  detail::jets::dense_t<T, N> operator[](std::size_t i) const { return e[i]; }
  /// `x = op(...)` where op cannot run on jets raises (detail::assigned_unsupported, fixed.hpp).
  template <class U>
    requires std::is_same_v<U, dual_unsupported>
  elementwise_jet& operator=(const U&) {
    detail::assigned_unsupported();
  }
};

namespace detail {

namespace jets {

/// x's elements as dense values (a fixed of them); anything else as it is.
template <class X>
TOWER_ALWAYS_INLINE auto dense_if_jet(const X& x) {
  if constexpr (is_elementwise_jet_v<X>) {
    using T = typename X::scalar_type;
    return [&]<std::size_t... I>(std::index_sequence<I...>) TOWER_INLINE_LAMBDA {
      return fixed<dense_t<T, X::size>, X::size>{{x.e[I]...}};
    }(std::make_index_sequence<static_cast<std::size_t>(X::size)>{});
  } else {
    return x;
  }
}

/// Whether an argument lines up element by element with jets J: J itself, a number, or a
/// 1-D fixed of numbers of size N or 1.
template <class A, class J>
constexpr bool aligned() {
  using X = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<X, J> || std::is_arithmetic_v<X>) return true;
  else if constexpr (is_fixed_v<X>)
    return fixeds::rank<X>() == 1 && std::is_arithmetic_v<typename X::value_type> &&
           (X::size == J::size || X::size == 1);
  else return false;
}

/// Argument x of an op on all elements of jets J at once: a jet as lanes (lanes_t), a fixed of
/// numbers as the vector of its lanes (a constant), a number as it is.
template <class J, class X>
TOWER_ALWAYS_INLINE auto as_lanes(const X& x) {
  using T = typename J::scalar_type;
  using V = fixed<T, J::size>;
  if constexpr (is_elementwise_jet_v<X>) {
    const V g{x.e.g};
    return lanes_t<T, J::size>{{V{x.e.v}, {g}}, {scalar_dual<V, 1>{g, {V{x.e.h}}}}};
  } else if constexpr (is_fixed_v<X>) {
    V r;
    for (std::size_t i = 0; i < r.e.size(); ++i) r.e[i] = static_cast<T>(x.e[X::size == 1 ? 0 : i]);
    return r;
  } else {
    return x;
  }
}

template <class... A>
struct first_jet;
template <class A, class... R>
struct first_jet<A, R...>
    : std::conditional_t<is_elementwise_jet_v<A>, std::type_identity<std::remove_cvref_t<A>>, first_jet<R...>> {};

/// op on all elements at once (every argument aligned with jets J): the op's own rules on lanes
/// (duals of duals of vectors, so a transcendental costs a few packet calls for all elements); a
/// fixed of numbers for a comparison; or, when the lanes do not carry the result, the op on dense
/// values.
template <class J, class Op, class... A>
TOWER_ALWAYS_INLINE auto on_lanes(const Op& op, const A&... a) {
  using T = typename J::scalar_type;
  using R = std::remove_cvref_t<decltype(call_op(op, as_lanes<J>(a)...))>;
  if constexpr (std::is_same_v<R, lanes_t<T, J::size>>) {
    const R out = call_op(op, as_lanes<J>(a)...);
    J r;
    r.e.v = out.v.v.e;
    r.e.g = duals::tangent<0>(out.v).e;
    r.e.h = duals::tangent<0>(duals::tangent<0>(out)).e;
    return r;
  } else if constexpr (is_fixed_v<R> && std::is_arithmetic_v<fixeds::scalar_t<R>>) {
    return call_op(op, as_lanes<J>(a)...);  // a comparison: plain values
  } else {
    return call_op(op, dense_if_jet(a)...);
  }
}

/// Whether op on jets a... is a linear op whose value on the elements is one number.
template <class Op, class... A>
constexpr bool is_linear_reduction() {
  if constexpr (sizeof...(A) != 1 || !is_linear_v<Op>) {
    return false;
  } else {
    using J = typename first_jet<A...>::type;
    using T = typename J::scalar_type;
    return std::is_same_v<decltype(call_op(std::declval<const Op&>(), std::declval<const fixed<T, J::size>&>())), T>;
  }
}

/// A linear op whose value on the elements is one number (a reduction: sum), out = sum_i w_i x_i:
/// gradient w_i d_i and Hessian diag(w_i d2_i), each weight w_i the op on the unit vector e_i (a
/// constant the compiler folds: for sum, the gradient is the elements' first derivatives).
template <class Op, class J>
TOWER_ALWAYS_INLINE auto linear_reduction(const Op& op, const J& x) {
  using T = typename J::scalar_type;
  using V = fixed<T, J::size>;
  constexpr std::size_t n = static_cast<std::size_t>(J::size);
  dense_t<T, J::size> r;
  r.v = call_op(op, V{x.e.v});
  const bool on = is_grad_enabled();  // under tw::no_grad, a constant (as a sum of the elements is)
  if (on) {
    // Whole rows written at once (a select per row), not a zero fill and then scalar stores on
    // the diagonal, which the next op's vector loads of those rows would stall on.
    [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
      auto row = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) TOWER_INLINE_LAMBDA {
        V unit;
        unit.e.fill(T(0));
        unit.e[k] = T(1);
        const T w = call_op(op, unit);
        r.g[k] = w * x.e.g[k];
        for (std::size_t j = 0; j < n; ++j) r.h[k * n + j] = j == k ? w * x.e.h[j] : T(0);
      };
      (row(std::integral_constant<std::size_t, K>{}), ...);
    }(std::make_index_sequence<n>{});
  } else {
    r.g.fill(T(0));
    r.h.fill(T(0));
  }
  return r;
}
}  // namespace jets

/// An op with an elementwise_jet argument (call_op routes here): on all elements at once if it is
/// elementwise, from its weights if it is a linear reduction, else on dense values.
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto jet_call(const Op& op, const A&... a) {
  using J = typename jets::first_jet<A...>::type;
  if constexpr (jets::is_linear_reduction<Op, A...>()) {
    return jets::linear_reduction(op, a...);
  } else if constexpr (is_elementwise_v<Op> && (jets::aligned<A, J>() && ...)) {
    return jets::on_lanes<J>(op, a...);
  } else {
    return call_op(op, jets::dense_if_jet(a)...);
  }
}

}  // namespace detail

}  // namespace tower
