#pragma once
// Ops on tw::fixed values (fixed.hpp): call_op routes here when an argument is fixed.
//
// An elementwise op runs once per element, through call_op again, so elements that are
// scalar_duals (grad's tape-free path) take their own rule. Arguments of lower rank, numbers and
// size-1 dims broadcast as in NumPy. Other ops give their rule in detail::fixed_rule<Op> (sum in
// reduce.hpp, vecdot in linalg.hpp); an op without one gives dual_unsupported (grad and vmap
// then do not take the fixed path). A fixed of numbers mixed with a tensor (or a transform's
// tensor) is converted to a tensor, so f compiles for vmap's tensor path too.
#include <cstddef>
#include <type_traits>
#include <utility>

#include "tower/tensor/fixed.hpp"
#include "tower/kernels/vector_math.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/jet2.hpp"
#include "tower/static/scalar_dual.hpp"

namespace tower {

template <class Op, class... A>
auto call_op(const Op& op, const A&... a);  // op.hpp

namespace detail {

/// An op's rule for fixed arguments: run(op, a...) gives the result.
template <class Op>
struct fixed_rule {};

namespace fixeds {

/// A value an elementwise op on fixed values accepts: a number, a scalar_dual, a fixed, or a
/// transform's value of a number (a fixed built inside f from numbers it was given).
template <class X>
inline constexpr bool element_like_v = std::is_arithmetic_v<std::remove_cvref_t<X>> || is_scalar_dual_v<X> ||
                                       is_jet2_v<X> || is_fixed_v<X> || (is_static_wrapper_v<X> && is_scalar_type_v<X>);

template <class X>
constexpr int size() {
  if constexpr (is_fixed_v<X>) return std::remove_cvref_t<X>::size;
  else return 1;
}

/// Element j of x along the outermost dim of rank R: x itself when it has a lower rank
/// (broadcast), element 0 of a size-1 dim.
template <int R, std::size_t J, class X>
TOWER_ALWAYS_INLINE decltype(auto) element(const X& x) {
  if constexpr (rank<X>() < R) return (x);
  else if constexpr (size<X>() == 1) return (x.e[0]);
  else return (x.e[J]);
}

/// The size of the outermost dim among the arguments of rank R, or -1 when they disagree.
template <int R, class... A>
constexpr int common_size() {
  int n = 1;
  bool ok = true;
  ((rank<A>() == R && size<A>() != 1
        ? (n == 1 || n == size<A>() ? static_cast<void>(n = size<A>()) : static_cast<void>(ok = false))
        : static_cast<void>(0)),
   ...);
  return ok ? n : -1;
}

/// Whether x is a vector of floating-point numbers (a transcendental's argument, a packet at a time).
template <class X>
constexpr bool float_vector() {
  if constexpr (!is_fixed_v<X>) return false;
  else return std::is_floating_point_v<typename std::remove_cvref_t<X>::value_type>;
}

/// op element by element, through call_op on the elements.
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto elementwise_each(const Op& op, const A&... a) {
  constexpr int R = std::max({rank<A>()...});
  constexpr int N = common_size<R, A...>();
  // On numbers a size mismatch is the caller's bug. On grad's tape-free values it gives way
  // (dual_unsupported): vmap's automatic fixed rows instantiate f for several sizes, and f may
  // be written for one of them.
  static_assert(N > 0 || !(std::is_arithmetic_v<fixeds::scalar_t<A>> && ...),
                "tw::fixed: an elementwise op got fixed sizes that do not broadcast");
  using E = decltype(call_op(op, element<R, 0>(a)...));
  if constexpr (N <= 0 || is_dual_unsupported_v<E> || !std::is_same_v<E, std::remove_cvref_t<E>>) {
    return dual_unsupported{};
  } else {
    auto at = [&]<std::size_t J>(std::integral_constant<std::size_t, J>)
                  TOWER_INLINE_LAMBDA { return call_op(op, element<R, J>(a)...); };
    return [&]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
      return fixed<E, N>{{at(std::integral_constant<std::size_t, J>{})...}};
    }(std::make_index_sequence<static_cast<std::size_t>(N)>{});
  }
}

/// op on fixed values: element by element, or a transcendental of a vector of numbers at once.
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto elementwise(const Op& op, const A&... a) {
  if constexpr (sizeof...(A) == 1 && (float_vector<A>() && ...) && requires { typename Op::vmath_fn; }) {
    // A transcendental of a vector: libmvec a packet at a time, as on a tensor (kernels/vector_math.hpp).
    return [](const auto& x) TOWER_INLINE_LAMBDA {
      std::remove_cvref_t<decltype(x)> r;
      kernels::vmath::apply<typename Op::vmath_fn>(x.e.data(), r.e.data(), static_cast<std::int64_t>(x.e.size()));
      return r;
    }(a...);
  } else {
    return elementwise_each(op, a...);
  }
}

/// The element type of the first fixed of numbers among A (void if none): a number beside it
/// takes that type, as a number beside a tensor<float> does (1.0 - y on floats stays float).
template <class... A>
struct numbers_of_fixed {
  using type = void;
};
template <class A, class... R>
struct numbers_of_fixed<A, R...> : std::conditional_t<is_fixed_v<A> && std::is_arithmetic_v<scalar_t<A>>,
                                                      std::type_identity<scalar_t<A>>, numbers_of_fixed<R...>> {};
template <class S, class X>
TOWER_ALWAYS_INLINE decltype(auto) adopt(const X& x) {
  if constexpr (!std::is_void_v<S> && std::is_floating_point_v<X>) return static_cast<S>(x);
  else return (x);
}

/// x as a tensor if it is a fixed of numbers, else x.
template <class X>
decltype(auto) tensor_if_fixed(const X& x) {
  if constexpr (is_fixed_v<X>) return to_tensor(x);
  else return (x);
}

}  // namespace fixeds

/// An op with a fixed argument (call_op).
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto fixed_call(const Op& op, const A&... a) {
  if constexpr (!(fixeds::element_like_v<A> && ...)) {
    // Mixed with a tensor or a transform's tensor: a fixed of numbers is a tensor to it.
    if constexpr (((!is_fixed_v<A> || std::is_arithmetic_v<fixeds::scalar_t<A>>) && ...))
      return call_op(op, fixeds::tensor_if_fixed(a)...);
    else return dual_unsupported{};
  } else if constexpr (requires { fixed_rule<Op>::run(op, a...); }) return fixed_rule<Op>::run(op, a...);
  else if constexpr (is_elementwise_v<Op> && (fixeds::element_like_v<A> && ...))
    return fixeds::elementwise(op,
                               fixeds::adopt<typename fixeds::numbers_of_fixed<std::remove_cvref_t<A>...>::type>(a)...);
  else return dual_unsupported{};
}

}  // namespace detail

}  // namespace tower
