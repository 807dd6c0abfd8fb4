#pragma once
// The gradient of f on a tw::fixed<T, n> argument, differentiated along the identity directions
// of that argument: what the outer transform of a Hessian (jacfwd(jacrev(f)), jacrev(grad(f)),
// hessian(f), ...) asks its function for. f runs once on an elementwise_jet (elementwise_jet.hpp)
// instead of forward over forward mode with n + n^2 derivatives on every element.
//
//   tw::fixed<double, 8> x = ...;
//   tw::fixed<tw::fixed<double, 8>, 8> H = tw::hessian(f)(x);
//   auto Hs = tw::vmap(tw::hessian(f), tw::in_dims(tw::fixed_rows<8>))(X);   // X: [B, 8] -> [B, 8, 8]
//
// A protocol between two tape-free transforms, not a recognised composition: forward_jacobian
// (the outer one) asks its function F for `jacobian_rows_ok<K, A...>()`; a first-order transform
// of one argument (jacrev, jacfwd, grad) says yes when it differentiates that same argument K, f
// is a plain function (not a transform, not type-erased) that returns a number of x's floating
// type or the dense second-order value, and every argument is a number or a fixed of numbers (the
// outer transform is not nested in another tape-free one). It then returns the Jacobian of its own
// result in argument K, which is the outer transform's result. Otherwise forward over forward
// runs. Both give the same numbers up to rounding (tests/hessian_forward_test.cpp).
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/core/force_inline.hpp"
#include "tower/static/elementwise_jet.hpp"
#include "tower/static/jet2.hpp"
#include "tower/tensor/fixed.hpp"
#include "tower/static/scalar_dual.hpp"
#include "tower/core/transform_options.hpp"
#include "tower/core/runtime_function.hpp"

namespace tower {

namespace detail {

/// Argument J of a... for a transform of argument K: a_J itself, or seed(a_K) when J == K.
template <int K, std::size_t J, class Seed, class... A>
TOWER_ALWAYS_INLINE decltype(auto) seeded_arg(const Seed& seed, const A&... a) {
  const auto& x = std::get<J>(std::tie(a...));
  if constexpr (J != static_cast<std::size_t>(K)) return (x);
  else return seed(x);
}

template <class G, int K>
struct rows_on_jets {
  template <class... A>
  using arg_t = std::remove_cvref_t<std::tuple_element_t<static_cast<std::size_t>(K), std::tuple<A...>>>;

  /// x as elementwise jets: element i with d/dx_i = 1.
  template <class X>
  static TOWER_ALWAYS_INLINE auto seed(const X& x) {
    using T = typename X::value_type;
    elementwise_jet<T, X::size> r;
    for (std::size_t i = 0; i < static_cast<std::size_t>(X::size); ++i) r.e.v[i] = x.e[i];
    r.e.g.fill(T(1));
    r.e.h.fill(T(0));
    return r;
  }
  template <std::size_t J, class... A>
  static decltype(auto) seeded(const A&... a) {
    return seeded_arg<K, J>([](const auto& x) TOWER_INLINE_LAMBDA { return seed(x); }, a...);
  }

  template <class... A>
  static TOWER_ALWAYS_INLINE auto call(const G& g, const A&... a) {
    return [&]<std::size_t... J>(std::index_sequence<J...>)
               TOWER_INLINE_LAMBDA { return g(seeded<J>(a...)...); }(std::index_sequence_for<A...>{});
  }

  /// Whether this path takes these arguments (see the header comment).
  template <class... A>
  static constexpr bool ok() {
    if constexpr (K < 0 || K >= static_cast<int>(sizeof...(A)) || is_runtime_function_v<G> ||
                  requires { G::forward_path; }) {
      return false;
    } else if constexpr (!((std::is_arithmetic_v<fixeds::scalar_t<A>> && (!is_fixed_v<A> || fixeds::rank<A>() == 1)) &&
                           ...)) {
      return false;
    } else if constexpr (!is_fixed_v<arg_t<A...>>) {
      return false;  // argument K is a number: forward_jacobian's duals
    } else if constexpr (!std::is_floating_point_v<fixeds::scalar_t<arg_t<A...>>> || arg_t<A...>::size > 32) {
      return false;
    } else {
      using T = typename arg_t<A...>::value_type;
      using S = typename decltype([]<std::size_t... J>(std::index_sequence<J...>) TOWER_INLINE_LAMBDA {
        return std::type_identity<
            std::tuple<std::remove_cvref_t<decltype(seeded<J>(std::declval<const A&>()...))>...>>{};
      }(std::index_sequence_for<A...>{}))::type;
      constexpr bool invocable = []<class... Sd>(std::type_identity<std::tuple<Sd...>>) TOWER_INLINE_LAMBDA {
        return std::is_invocable_v<const G&, const Sd&...>;
      }(std::type_identity<S>{});
      if constexpr (!invocable) return false;
      else {
        using R = std::remove_cvref_t<decltype(call(std::declval<const G&>(), std::declval<const A&>()...))>;
        return std::is_same_v<R, jets::dense_t<T, arg_t<A...>::size>> || std::is_same_v<R, T>;
      }
    }
  }

  /// The Jacobian of g's gradient in argument K, as fixed<fixed<T, n>, n>: row j is the
  /// derivative of dg/dx_j.
  template <class... A>
  static TOWER_ALWAYS_INLINE auto run(const G& g, const A&... a) {
    using X = arg_t<A...>;
    using T = typename X::value_type;
    const auto out = call(g, a...);
    constexpr std::size_t n = static_cast<std::size_t>(X::size);
    fixed<X, X::size> h;  // a loop, not fixeds::generate: n^2 instantiations per size cost compile time
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(out)>, T>) h[j][k] = T(0);
        else h[j][k] = out.h[j * n + k];
      }
    return h;
  }
};

}  // namespace detail
}  // namespace tower
