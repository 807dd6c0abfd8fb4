#pragma once
// scalar_dual<T, N>: a number with its derivatives along N directions. grad's tape-free path
// (grad.hpp, `forward`) runs a function of a few numbers on these, one direction per
// differentiated argument, and reads the gradient off the result.
//
// An op on scalar_duals runs its kernel on the values and its VJP rule with a unit cotangent,
// which gives the op's local partial derivatives, then pushes the N tangents through them:
//   out.d[k] = sum_i (d out / d x_i) x_i.d[k]
// On numbers (first order) the tangents are stored scaled, s * d[k], and an op with one argument
// carrying tangents multiplies s only: a chain of unary ops after a dot product costs one product
// per op, not N, as in hand-written code (which forms the scalar factor first). grad's tape-free
// path also shares one d between operands that store the same one (Share, below).
// Everything is straight-line code on numbers with no tape and no allocation, so once inlined the
// compiler keeps it in registers and vectorises a loop of it over examples (vmap's fused form).
// T may itself be a scalar_dual: grad(grad(f)) on numbers is forward over forward, and a value of
// an enclosing grad (a shallower scalar_dual) is a constant inside a nested one.
//
// Only numbers: an op mixing a scalar_dual with a tensor, a transform's value or a runtime value
// returns dual_unsupported, and a function whose result is dual_unsupported takes grad's general
// path (the tape) instead; grad checks that at compile time.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/core/error.hpp"
#include "tower/tensor/fixed.hpp"
#include "tower/core/force_inline.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/values.hpp"

namespace tower {

template <class Op, class... A>
auto call_op(const Op& op, const A&... a);  // op.hpp

namespace detail::duals {
/// The scale of a scalar_dual of numbers; nested scalar_duals keep their tangents unscaled.
struct unit_scale {
  constexpr unit_scale() = default;
  constexpr explicit unit_scale(double) {}
};
template <class T>
using scale_t = std::conditional_t<std::is_arithmetic_v<T>, T, unit_scale>;
}  // namespace detail::duals

/// Share: an op whose operands all store the same d (s * s, s3 * s3 - s3 after a dot product)
/// keeps that d and scales it, instead of summing N products per operand (push_tangents). grad's
/// tape-free path on numbers turns it on; nested duals (jet2's hyper-duals, forward over forward)
/// leave it off, since there the test rarely folds and costs N compares and selects per op.
template <class T, int N, bool Share = false>
struct scalar_dual {
  static_assert(N >= 1 && N <= 32, "scalar_dual: 1 to 32 directions");
  using value_type = T;
  static constexpr int directions = N;
  static constexpr bool shares = Share;
  T v;
  std::array<T, static_cast<std::size_t>(N)> d;
  /// Bit k clear: d[k] is a structural zero (stored as -0.0). A run-time value, so the type stays
  /// the same through loops; in straight-line code it is a constant after inlining, and the
  /// products with structural zeros fold away (a seed x with tangent e_k costs one product, not N).
  std::uint32_t nonzero = ~std::uint32_t{0};
  /// Tangent k is s * d[k] (see the header comment); read it with duals::tangent<k>.
  [[no_unique_address]] detail::duals::scale_t<T> s = detail::duals::scale_t<T>(1.0);
  /// `x = op(...)` where op cannot run on these numbers raises (detail::assigned_unsupported, fixed.hpp).
  template <class U>
    requires std::is_same_v<U, dual_unsupported>
  scalar_dual& operator=(const U&) {
    detail::assigned_unsupported();
  }
};

template <class X>
struct is_scalar_dual : std::false_type {};
template <class T, int N, bool S>
struct is_scalar_dual<scalar_dual<T, N, S>> : std::true_type {};
template <class X>
inline constexpr bool is_scalar_dual_v = is_scalar_dual<std::remove_cvref_t<X>>::value;

// A scalar_dual is a scalar at every level (is_scalar_type_v): shape rules treat it as a number.
template <class T, int N, bool S>
struct base_type<scalar_dual<T, N, S>> : base_type<T> {};

/// The result of an op the tape-free path cannot carry (see the header comment). Every op on it
/// gives it again; using it as a truth value throws, since grad never runs such a function on
/// scalar_duals.
///
/// A tape-free value converts to it, so where f puts one beside a dual_unsupported in a construct
/// of one type (a conditional expression, a braced list to tw::stack or tw::cat) the result is
/// dual_unsupported too, and the tape-free form declines instead of f failing to compile. A
/// variable of a tape-free type assigned one raises where that runs (their operator=), and vmap's
/// loop declines then. What C++ cannot let through stays a compile error: a braced std::vector of
/// both (its element type is deduced), a lambda returning both.
struct dual_unsupported {
  using scalar_type = double;  // constants an op builds beside it (trace's identity) are doubles
  dual_unsupported() = default;
  template <class X>
    requires(is_scalar_dual_v<X> || is_fixed_v<X> || is_jet2_v<X> || is_elementwise_jet_v<X>)
  dual_unsupported(const X&) {}
  explicit operator bool() const { throw error("grad: internal: a function of numbers mixed them with other values"); }
};
template <class X>
inline constexpr bool is_dual_unsupported_v = std::is_same_v<std::remove_cvref_t<X>, dual_unsupported>;

namespace detail::duals {
/// The value under every level of X's type.
template <class X>
struct innermost {
  using type = std::remove_cvref_t<X>;
};
template <class T, int N, bool S>
struct innermost<scalar_dual<T, N, S>> : innermost<T> {};
}  // namespace detail::duals

/// Whether X is a scalar_dual of lanes: its value under every level is a tw::fixed vector of
/// numbers, one per lane, each lane with the same tangent directions. elementwise_jet.hpp runs an
/// elementwise op on all of a jet's elements at once this way, the op's own rules on whole vectors
/// (transcendentals a packet at a time). Ops on lanes go to dual_call, where that fixed vector
/// type is a constant (lane_constant_v).
template <class X>
inline constexpr bool is_lanes_dual_v =
    is_scalar_dual_v<X> && is_fixed_v<typename detail::duals::innermost<std::remove_cvref_t<X>>::type>;
template <class X, class... A>
inline constexpr bool lane_constant_v =
    is_fixed_v<X> && (std::is_same_v<std::remove_cvref_t<X>, typename detail::duals::innermost<A>::type> || ...);

namespace detail {
/// The result type of a composite op whose branches (chosen at run time) return R...: the first,
/// or dual_unsupported when a branch cannot run on the tape-free values, so that the composite
/// gives way on them as a primitive without a rule does, instead of failing to compile.
template <class... R>
using branch_result_t =
    std::conditional_t<(is_dual_unsupported_v<R> || ...), dual_unsupported, std::tuple_element_t<0, std::tuple<R...>>>;
/// A branch's value as the composite's result type R (see branch_result_t). Branches may give
/// different types for arguments the composite rejects at run time anyway: numbers where it needs
/// tensors (cross_entropy's class-index branch gathers, which makes a tensor of a number). vmap's
/// per-example form compiles f for numbers too (fused_vmap.hpp), so such a branch compiles and
/// raises here instead of failing the user's build.
template <class R, class X>
R as_branch(X&& x) {
  if constexpr (is_dual_unsupported_v<R>) return dual_unsupported{};
  else if constexpr (!std::is_convertible_v<X&&, R>)
    throw error("a composite op's branches give different types for these arguments");
  else return std::forward<X>(x);
}
}  // namespace detail

namespace detail::duals {

template <class X>
constexpr int depth() {
  if constexpr (is_scalar_dual_v<X>) return 1 + depth<typename std::remove_cvref_t<X>::value_type>();
  else return 0;
}

/// x as a T: a number or a shallower scalar_dual is a constant (zero tangents) at T's levels.
template <class T, class X>
TOWER_ALWAYS_INLINE T lift(const X& x) {
  if constexpr (std::is_same_v<T, std::remove_cvref_t<X>>) {
    return x;
  } else if constexpr (is_scalar_dual_v<T>) {
    using U = typename T::value_type;
    return [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
      return T{lift<U>(x), {(static_cast<void>(K), lift<U>(-0.0))...}, 0u};
    }(std::make_index_sequence<static_cast<std::size_t>(T::directions)>{});
  } else if constexpr (is_fixed_v<T>) {  // a number for every lane (is_lanes_dual_v)
    T r;
    r.e.fill(static_cast<typename T::value_type>(x));
    return r;
  } else {
    return static_cast<T>(x);
  }
}

/// Tangent K of x: s * d[K], or the structural zero -0.0 when bit K of the mask is clear (not
/// s * -0.0, which is NaN when s is infinite: sqrt at 0 has no effect on an unrelated input).
template <std::size_t K, class T, int N, bool S>
TOWER_ALWAYS_INLINE T tangent(const scalar_dual<T, N, S>& x) {
  if constexpr (std::is_arithmetic_v<T>) return (x.nonzero >> K) & 1u ? x.s * x.d[K] : T(-0.0);
  else return x.d[K];
}

/// A T-valued scalar_dual with tangent e_Own: an argument's element seeded in its own direction.
template <class T, int N, std::size_t Own, bool Share = false>
TOWER_ALWAYS_INLINE scalar_dual<T, N, Share> seed(const T& v) {
  return [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
    return scalar_dual<T, N, Share>{v, {lift<T>(K == Own ? 1.0 : -0.0)...}, std::uint32_t{1} << Own};
  }(std::make_index_sequence<static_cast<std::size_t>(N)>{});
}

/// The number under every level of x.
template <class X>
TOWER_ALWAYS_INLINE auto base_value(const X& x) {
  if constexpr (is_scalar_dual_v<X>) return base_value(x.v);
  else return x;
}

/// Whether a result (a value, or a std::tuple / std::pair of them) holds a dual_unsupported.
template <class X>
constexpr bool contains_unsupported() {
  if constexpr (is_dual_unsupported_v<X>) return true;
  else if constexpr (requires {
                       typename std::tuple_size<X>::type;
                       std::get<0>(std::declval<X>());
                     })
    return []<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
      return (false || ... || contains_unsupported<std::remove_cvref_t<std::tuple_element_t<K, X>>>());
    }(std::make_index_sequence<std::tuple_size_v<X>>{});
  else return false;
}

/// The deepest scalar_dual among A: the result type of an op on them.
template <class... A>
struct deepest;
template <class A>
struct deepest<A> {
  using type = std::remove_cvref_t<A>;
};
template <class A, class B, class... R>
struct deepest<A, B, R...> : deepest<std::conditional_t<(depth<A>() >= depth<B>()), A, B>, R...> {};

/// The numbers a tape-free transform seeds (the X of its scalar_dual<X, N>), given the
/// differentiated argument's numbers Own and every argument's numbers S...: the deepest of S, so
/// that the seeds sit above every enclosing tape-free level any argument carries, whichever
/// argument is differentiated (its numbers are lifted to X: constants at those levels). Seeding
/// Own when another argument carries an enclosing level would put both at one level and mix
/// their derivatives. With plain numbers only, Own.
template <class Own, class... S>
using seed_number_t = std::conditional_t<((depth<S>() == 0) && ...), Own, typename deepest<S...>::type>;

template <class X, class D>
constexpr bool carries() {
  return std::is_same_v<std::remove_cvref_t<X>, D>;
}

template <class D, class... A>
constexpr auto carried_positions() {
  std::array<std::size_t, sizeof...(A)> pos{};
  std::size_t n = 0, i = 0;
  ((carries<A, D>() ? (pos[n++] = i++) : i++), ...);
  return std::make_pair(pos, n);
}

}  // namespace detail::duals

namespace detail {

/// D from an op's value and its local partials: out.d[k] = sum over the arguments carrying D's
/// tangents of partial_i * x_i.d[k], unrolled (a loop here would stop vmap's fused loop from
/// vectorising). With one such argument on numbers, out keeps its d and scales s instead.
/// Under tw::no_grad the tangents are zeros, chosen without a branch (a branch would make the
/// fused loop's loads conditional); the mask stays the union of the arguments' masks, a constant
/// after inlining, so that reading a tangent (duals::tangent) never branches either.
template <class D, class T, class P, class... A>
TOWER_ALWAYS_INLINE D push_tangents(const T& out, const P& partials, const A&... a) {
  constexpr auto carried = duals::carried_positions<D, A...>();
  constexpr auto directions = std::make_index_sequence<static_cast<std::size_t>(D::directions)>{};
  const auto args = std::forward_as_tuple(a...);
  const bool on = is_grad_enabled();
  // -0.0 is the structural zero: x + (-0.0) is x for every x, so the compiler drops those sums.
  const T zero = duals::lift<T>(-0.0);
  const std::uint32_t nonzero = [&]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
    return (0u | ... | std::get<carried.first[J]>(args).nonzero);
  }(std::make_index_sequence<carried.second>{});
  // The factor argument J's stored d is multiplied by: its partial, times its scale on numbers.
  auto factor = [&]<std::size_t J>(std::integral_constant<std::size_t, J>) TOWER_INLINE_LAMBDA -> T {
    const auto& x = std::get<carried.first[J]>(args);
    if constexpr (std::is_arithmetic_v<T>) return std::get<carried.first[J]>(partials) * x.s;
    else return duals::lift<T>(std::get<carried.first[J]>(partials));  // a constant partial (sign's zeros) too
  };
  auto term = [&]<std::size_t K, std::size_t J>(std::integral_constant<std::size_t, K>,
                                                std::integral_constant<std::size_t, J> j) TOWER_INLINE_LAMBDA {
    const auto& x = std::get<carried.first[J]>(args);
    return (x.nonzero >> K) & 1u ? T(factor(j) * x.d[K]) : zero;
  };
  auto tangent =
      [&]<std::size_t K, std::size_t... J>(std::integral_constant<std::size_t, K> k, std::index_sequence<J...>)
          TOWER_INLINE_LAMBDA { return (... + term(k, std::integral_constant<std::size_t, J>{})); };
  auto summed = [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
    return D{out,
             {(on ? tangent(std::integral_constant<std::size_t, K>{}, std::make_index_sequence<carried.second>{})
                  : zero)...},
             nonzero};
  };
  if constexpr (std::is_arithmetic_v<T> && carried.second == 1) {
    const auto& x = std::get<carried.first[0]>(args);
    return [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
      D r{out, {(on ? x.d[K] : zero)...}, nonzero};
      r.s = on ? factor(std::integral_constant<std::size_t, 0>{}) : T(1);
      return r;
    }(directions);
  } else if constexpr (std::is_arithmetic_v<T> && D::shares) {
    // Arguments whose stored d are the same bits (s * s, or s3 * s3 - s3 after a dot product: one
    // d scaled differently) share it, and out scales it by sum_i partial_i * s_i: one product
    // per op instead of N. The test compares bit patterns, so the compiler folds it to true when
    // the d are the same values (one d copied through the chain) and to false when the masks
    // differ (x * y of two seeds); otherwise both forms are computed and one chosen per example,
    // no branch. Both forms are exact derivatives; they differ in rounding only.
    using bits_t = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    const auto& x0 = std::get<carried.first[0]>(args);
    // The differing bits of the masks and the d of each argument against the first, OR-ed.
    const bits_t differ = [&]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
      auto against_first = [&](const D& x) TOWER_INLINE_LAMBDA {
        return [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
          return bits_t(x.nonzero ^ x0.nonzero) |
                 (... | (std::bit_cast<bits_t>(x.d[K]) ^ std::bit_cast<bits_t>(x0.d[K])));
        }(directions);
      };
      return (bits_t(0) | ... | against_first(std::get<carried.first[J + 1]>(args)));
    }(std::make_index_sequence<carried.second - 1>{});
    const bool shared = differ == 0;
    const T scale = [&]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
      return (... + factor(std::integral_constant<std::size_t, J>{}));
    }(std::make_index_sequence<carried.second>{});
    const D full = summed(directions);
    return [&]<std::size_t... K>(std::index_sequence<K...>) TOWER_INLINE_LAMBDA {
      D r{out, {(shared ? (on ? x0.d[K] : zero) : full.d[K])...}, nonzero};
      r.s = shared && on ? scale : T(1);
      return r;
    }(directions);
  } else {
    return summed(directions);
  }
}

/// Whether Op's kernel takes the numbers under every level (false for an op of tensors only).
template <class Op, class... A>
constexpr bool has_number_kernel() {
  using I = typename duals::innermost<typename duals::deepest<A...>::type>::type;
  if constexpr (std::is_arithmetic_v<I>) return has_base_kernel_v<Op, std::conditional_t<true, I, A>...>;
  else return true;
}

/// An op on scalar_duals (call_op routes here): the kernel on the values, the local partials from
/// the VJP rule with a unit cotangent, the tangents through them.
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto dual_call(const Op& op, const A&... a) {
  namespace du = duals;
  if constexpr (((!is_scalar_dual_v<A> && !std::is_arithmetic_v<A> && !lane_constant_v<A, A...>) || ...)) {
    return dual_unsupported{};
  } else if constexpr (!has_number_kernel<Op, A...>()) {
    return dual_unsupported{};  // an op of tensors only (movedim): the tape's job
  } else {
    using D = typename du::deepest<A...>::type;
    using T = typename D::value_type;
    // Arguments of type D carry tangents; everything else is a constant at D's level.
    auto value = [](const auto& x) TOWER_INLINE_LAMBDA -> T {
      if constexpr (du::carries<decltype(x), D>()) return x.v;
      else return du::lift<T>(x);
    };
    auto out = call_op(op, value(a)...);
    if constexpr (!is_differentiable_v<Op>) {
      return out;  // comparisons and other piecewise-constant ops: plain values
    } else if constexpr (!std::is_same_v<decltype(out), T>) {
      return dual_unsupported{};  // a number in, a tensor out (reshape): the tape's job
    } else {
      // The VJP rule on numbers takes no input mask (dsl/pointwise.hpp's is_number_value_v), so
      // nothing here reads thread-local state.
      return push_tangents<D>(out, op.vjp(du::lift<T>(1.0), out, value(a)...), a...);
    }
  }
}

}  // namespace detail

}  // namespace tower
