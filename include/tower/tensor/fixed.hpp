#pragma once
// tw::fixed<T, N>: a 1-D tensor of N elements whose size is a compile-time constant, stored
// inline (no heap). fixed<fixed<T, M>, N> is an [N, M] tensor, row-major.
//
//   tw::fixed<double, 3> r{1.0, 2.0, 2.0};
//   double e = tw::sum(r * r);                      // 9
//   tw::fixed<double, 3> g = tw::grad([](auto r) TOWER_INLINE_LAMBDA { return tw::sum(r * r); })(r);   // {2, 4, 4}
//
// Elementwise ops (broadcasting numbers, and a size-1 or lower-rank fixed, against it), sum,
// dot and vecdot run element by element at compile time (fixed_ops.hpp): the code is what one
// writes by hand for a 3-vector. Where the size is known, this is how f gets it to the compiler:
//   - grad of a function of numbers and fixed vectors runs without a tape, forward mode, one
//     direction per element (grad.hpp, scalar_dual.hpp), and returns fixed gradients;
//   - vmap's in_dims entry tw::fixed_rows<N> hands f each row of a [B, N] tensor as a
//     fixed<T, N> (fused_fixed.hpp), so vmap(grad(f)) is one loop over examples of straight-line
//     code. The result is the same as with in_dims entry 0.
// Other ops (reshape, matmul, ...) do not take fixed values: their result is dual_unsupported, and
// grad and vmap then tell the user (or vmap runs f on tensors instead).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "tower/core/error.hpp"
#include "tower/core/force_inline.hpp"
#include "tower/tensor/tensor.hpp"

namespace tower {

struct dual_unsupported;  // scalar_dual.hpp

namespace detail {
/// A variable of a tape-free form (a tw::fixed, scalar_dual or jet value) assigned the result of
/// an op that form cannot run (dual_unsupported): its type cannot say so, so it raises where it
/// runs, and vmap's per-example loop, which catches tower::error, runs batching rules instead.
[[noreturn]] inline void assigned_unsupported() {
  throw error(
      "f assigned the result of an op that does not run on tw::fixed values (nor on grad's forward-mode numbers) to "
      "a variable that held one; convert the value with tw::to_tensor");
}
}  // namespace detail

/// A 1-D tensor of N elements whose size the compiler knows, stored inline; fixed<fixed<T, M>, N>
/// is an [N, M] tensor. Elementwise ops, sum, dot and vecdot unroll on it, and grad, jacrev,
/// jacfwd and hessian of a function of fixed values run forward mode without a tape.
/// \code
/// tw::fixed<double, 3> r{{1.0, 2.0, 3.0}};
/// auto g = tw::grad([](auto x) { return tw::sum(x * x); })(r);   // 2 r, without a tape
/// if (g[2] != 6.0 || tw::to_tensor(r)(1) != 2.0) throw std::runtime_error("fixed");
/// if (tw::to_fixed<tw::fixed<double, 3>>(tw::to_tensor(r))[0] != 1.0 || tw::fixed_shape<decltype(r)>() != tw::shape_t{3})
///   throw std::runtime_error("to_fixed");
/// \endcode
template <class T, int N>
struct fixed {
  static_assert(N >= 1, "tw::fixed: the size must be at least 1");
  using value_type = T;
  static constexpr int size = N;
  std::array<T, static_cast<std::size_t>(N)> e;

  constexpr T& operator[](std::size_t i) TOWER_INLINE_LAMBDA { return e[i]; }
  constexpr const T& operator[](std::size_t i) const { return e[i]; }
  /// `x = op(...)` where op cannot run on fixed values raises (detail::assigned_unsupported).
  template <class U>
    requires std::is_same_v<U, dual_unsupported>
  fixed& operator=(const U&) {
    detail::assigned_unsupported();
  }
};

// Values a per-example Hessian hands f (elementwise_jet.hpp, jet2.hpp); declared here so that
// shape() and the other layers below the ops know them.
template <class T, int N>
struct elementwise_jet;
template <class T, int N>
struct jet2;
template <class X>
struct is_elementwise_jet : std::false_type {};
template <class T, int N>
struct is_elementwise_jet<elementwise_jet<T, N>> : std::true_type {};
template <class X>
inline constexpr bool is_elementwise_jet_v = is_elementwise_jet<std::remove_cvref_t<X>>::value;
template <class X>
struct is_jet2 : std::false_type {};
template <class T, int N>
struct is_jet2<jet2<T, N>> : std::true_type {};
template <class X>
inline constexpr bool is_jet2_v = is_jet2<std::remove_cvref_t<X>>::value;

/// Whether X is a tw::fixed<T, N>.
template <class X>
struct is_fixed : std::false_type {};
template <class T, int N>
struct is_fixed<fixed<T, N>> : std::true_type {};
/// Whether X is a tw::fixed (references and const ignored).
/// \code
/// static_assert(tw::is_fixed_v<const tw::fixed<double, 3>&> && !tw::is_fixed_v<double>);
/// \endcode
template <class X>
inline constexpr bool is_fixed_v = is_fixed<std::remove_cvref_t<X>>::value;

namespace detail::fixeds {

/// Rank of a value: a fixed's nesting depth, 0 for anything else.
template <class X>
constexpr int rank() {
  if constexpr (is_fixed_v<X>) return 1 + rank<typename std::remove_cvref_t<X>::value_type>();
  else return 0;
}
/// The element under every fixed level.
template <class X>
struct scalar {
  using type = std::remove_cvref_t<X>;
};
template <class T, int N>
struct scalar<fixed<T, N>> : scalar<T> {};
template <class X>
using scalar_t = typename scalar<std::remove_cvref_t<X>>::type;

/// Number of elements.
template <class X>
constexpr std::int64_t numel() {
  if constexpr (is_fixed_v<X>)
    return std::remove_cvref_t<X>::size * numel<typename std::remove_cvref_t<X>::value_type>();
  else return 1;
}

template <class X>
void append_shape(shape_t& s) {
  if constexpr (is_fixed_v<X>) {
    s.push_back(std::remove_cvref_t<X>::size);
    append_shape<typename std::remove_cvref_t<X>::value_type>(s);
  }
}

/// Calls f(element) on every element in row-major order.
template <class X, class F>
TOWER_ALWAYS_INLINE constexpr void for_each(const X& x, F&& f) {
  if constexpr (is_fixed_v<X>)
    for (const auto& y : x.e) for_each(y, f);
  else f(x);
}

/// term(0) + ... + term(N - 1) as a balanced tree of additions: log2(N) dependent adds instead
/// of N, so a sum of a few numbers is not one long latency chain (and rounds more evenly).
template <std::size_t Lo, std::size_t N, class Term>
TOWER_ALWAYS_INLINE constexpr auto tree_sum(const Term& term) {
  if constexpr (N == 1) return term(std::integral_constant<std::size_t, Lo>{});
  else return tree_sum<Lo, N / 2>(term) + tree_sum<Lo + N / 2, N - N / 2>(term);
}

/// Element K of x in row-major order.
template <std::size_t K, class X>
TOWER_ALWAYS_INLINE constexpr const auto& flat(const X& x) {
  if constexpr (!is_fixed_v<X>) {
    return x;
  } else {
    constexpr auto inner = static_cast<std::size_t>(numel<typename X::value_type>());
    return flat<K % inner>(x.e[K / inner]);
  }
}

/// The fixed of shape X whose elements are g(0), g(1), ... in row-major order.
template <class X, class G, std::size_t Offset = 0>
TOWER_ALWAYS_INLINE constexpr auto generate(const G& g) {
  if constexpr (is_fixed_v<X>) {
    using E = typename X::value_type;
    return [&]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
      using R = decltype(generate<E, G, Offset>(g));
      return fixed<R, X::size>{{generate<E, G, Offset + J* static_cast<std::size_t>(numel<E>())>(g)...}};
    }(std::make_index_sequence<static_cast<std::size_t>(X::size)>{});
  } else {
    return g(std::integral_constant<std::size_t, Offset>{});
  }
}

}  // namespace detail::fixeds

/// The shape of a fixed value: {N}, or {N, M} for fixed<fixed<T, M>, N>.
template <class X>
  requires is_fixed_v<X>
shape_t fixed_shape() {
  shape_t s;
  detail::fixeds::append_shape<X>(s);
  return s;
}

/// A tensor with x's shape and elements.
template <class T, int N>
tensor<detail::fixeds::scalar_t<T>> to_tensor(const fixed<T, N>& x) {
  buffer<detail::fixeds::scalar_t<T>> data;
  data.reserve(static_cast<std::size_t>(detail::fixeds::numel<fixed<T, N>>()));
  detail::fixeds::for_each(x, [&](const auto& v) TOWER_INLINE_LAMBDA { data.push_back(v); });
  return tensor<detail::fixeds::scalar_t<T>>(fixed_shape<fixed<T, N>>(), std::move(data));
}

/// x as a fixed value of type X; a tower::error when the shapes differ.
template <class X, class T>
  requires is_fixed_v<X>
X to_fixed(const tensor<T>& x) {
  if (x.shape() != fixed_shape<X>())
    throw error("to_fixed: expected a tensor of shape " + detail::shape_str(fixed_shape<X>()) + ", got " +
                detail::shape_str(x.shape()));
  const T* p = x.data();
  return detail::fixeds::generate<X>(
      [&](auto k) TOWER_INLINE_LAMBDA { return static_cast<detail::fixeds::scalar_t<X>>(p[decltype(k)::value]); });
}

}  // namespace tower
