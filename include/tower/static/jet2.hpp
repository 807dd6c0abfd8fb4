#pragma once
// jet2<T, N>: a number with its gradient and Hessian along N inputs, the dense value of a
// per-example Hessian (transforms/static/jacobian_rows.hpp, elementwise_jet.hpp).
//
// An op on jet2 values gets its own first and second partial derivatives by running once on
// hyper-dual numbers (scalar_dual<scalar_dual<T, C>, C>, C = the number of jet2 arguments: the
// op's kernel and VJP rules, nothing written per op) and applies the chain rule of second order:
//   g = sum_c phi_c g_c,   H = sum_c phi_c H_c + sum_{c,d} phi_cd g_c g_d^T.
// That is N + N^2 multiply-adds per partial on contiguous arrays, which the compiler vectorises,
// where forward over forward mode pushes N inner duals through every product. Partials that are
// structural zeros (an add's phi_cd) are skipped.
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tower/core/force_inline.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/scalar_dual.hpp"

namespace tower {

template <class Op, class... A>
auto call_op(const Op& op, const A&... a);  // op.hpp

template <class T, int N>
struct jet2 {
  static_assert(N >= 1 && N <= 32, "jet2: 1 to 32 inputs");
  using value_type = T;
  static constexpr int inputs = N;
  T v;
  std::array<T, static_cast<std::size_t>(N)> g;     // d v / d x_i
  std::array<T, static_cast<std::size_t>(N* N)> h;  // d^2 v / d x_i d x_j, row-major
  /// `x = op(...)` where op cannot run on jets raises (detail::assigned_unsupported, fixed.hpp).
  template <class U>
    requires std::is_same_v<U, dual_unsupported>
  jet2& operator=(const U&) {
    detail::assigned_unsupported();
  }
};

// A jet2 is a scalar at every level (is_scalar_type_v): shape rules treat it as a number.
template <class T, int N>
struct base_type<jet2<T, N>> : base_type<T> {};

namespace detail {

namespace jet2s {
template <class... A>
struct first;
template <class A, class... R>
struct first<A, R...> : std::conditional_t<is_jet2_v<A>, std::type_identity<std::remove_cvref_t<A>>, first<R...>> {};

/// The positions of the arguments of type J, and how many there are.
template <class J, class... A>
constexpr auto positions() {
  std::array<std::size_t, sizeof...(A)> pos{};
  std::size_t n = 0, i = 0;
  ((std::is_same_v<std::remove_cvref_t<A>, J> ? (pos[n++] = i++) : i++), ...);
  return std::make_pair(pos, n);
}
/// Which of the arguments of type J argument I is.
template <class J, std::size_t I, class... A>
constexpr std::size_t rank_among() {
  constexpr auto p = positions<J, A...>();
  std::size_t k = 0;
  while (p.first[k] != I) ++k;
  return k;
}
/// op on a..., the c-th argument of type J as a hyper-dual seeded in direction c (numbers as
/// they are): its value and first and second partials.
template <class J, class Op, class... A>
TOWER_ALWAYS_INLINE auto run_seeded(const Op& op, const A&... a) {
  using T = typename J::value_type;
  constexpr int C = static_cast<int>(positions<J, A...>().second);
  const auto args = std::forward_as_tuple(a...);
  auto seeded = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) TOWER_INLINE_LAMBDA {
    const auto& x = std::get<I>(args);
    if constexpr (!std::is_same_v<std::remove_cvref_t<decltype(x)>, J>) {
      return x;
    } else {
      constexpr std::size_t c = rank_among<J, I, A...>();
      return duals::seed<scalar_dual<T, C>, C, c>(duals::seed<T, C, c>(x.v));
    }
  };
  return [&]<std::size_t... I>(std::index_sequence<I...>) TOWER_INLINE_LAMBDA {
    return call_op(op, seeded(std::integral_constant<std::size_t, I>{})...);
  }(std::index_sequence_for<A...>{});
}

/// The jet2 result of op on a... (jet2_call, when the hyper-dual run gives a hyper-dual). A
/// function of its own with one return: GCC builds r in the caller's storage only then (with
/// discarded `if constexpr` returns beside it, it copies the 600 bytes of a jet2 on R^8).
template <class J, class Op, class... A>
TOWER_ALWAYS_INLINE J chain(const Op& op, const A&... a) {
  using T = typename J::value_type;
  constexpr std::size_t N = static_cast<std::size_t>(J::inputs);
  constexpr auto carried = positions<J, A...>();
  constexpr std::size_t C = carried.second;
  const auto args = std::forward_as_tuple(a...);
  auto run = [&] { return run_seeded<J>(op, a...); };
  using O = std::remove_cvref_t<decltype(run())>;
  J r;
  // Checked once here, the grad mode is a known constant in every rule below (the compiler
  // drops their no_grad branches and the structural-zero tests with them).
  if (!is_grad_enabled()) {  // under tw::no_grad the result is a constant
    auto value = [](const auto& x) TOWER_INLINE_LAMBDA {
      if constexpr (is_jet2_v<decltype(x)>) return x.v;
      else return x;
    };
    r.v = call_op(op, value(a)...);
    r.g.fill(T(0));
    r.h.fill(T(0));
  } else {
    const O out = run();
    r.v = out.v.v;
    auto jet = [&]<std::size_t c>(std::integral_constant<std::size_t, c>)
                   TOWER_INLINE_LAMBDA -> const J& { return std::get<carried.first[c]>(args); };
    // The terms that are not structural zeros: first order phi_c (g_c, H_c), second order
    // phi_cd g_c g_d^T.
    std::array<const J*, C> x1{};
    std::array<T, C> p1{};
    std::size_t n1 = 0;
    [&]<std::size_t... c>(std::index_sequence<c...>) TOWER_INLINE_LAMBDA {
      auto one = [&]<std::size_t k>(std::integral_constant<std::size_t, k> ck) TOWER_INLINE_LAMBDA {
        if (!((out.v.nonzero >> k) & 1u)) return;
        x1[n1] = &jet(ck);
        p1[n1++] = duals::tangent<k>(out.v);
      };
      (one(std::integral_constant<std::size_t, c>{}), ...);
    }(std::make_index_sequence<C>{});
    std::array<const J*, C * C> x2{}, y2{};
    std::array<T, C * C> p2{};
    std::size_t n2 = 0;
    [&]<std::size_t... cd>(std::index_sequence<cd...>) TOWER_INLINE_LAMBDA {
      auto one = [&]<std::size_t k>(std::integral_constant<std::size_t, k>) TOWER_INLINE_LAMBDA {
        constexpr std::size_t c = k / C, d = k % C;
        if (!((out.nonzero >> c) & 1u)) return;
        const scalar_dual<T, static_cast<int>(C)> outer = duals::tangent<c>(out);
        if (!((outer.nonzero >> d) & 1u)) return;
        x2[n2] = &jet(std::integral_constant<std::size_t, c>{});
        y2[n2] = &jet(std::integral_constant<std::size_t, d>{});
        p2[n2++] = duals::tangent<d>(outer);
      };
      (one(std::integral_constant<std::size_t, cd>{}), ...);
    }(std::make_index_sequence<C * C>{});
    // Each entry of r is written once in the common cases (a unary op: one first- and one
    // second-order term; a sum: two first-order terms), else the first term stored and the rest
    // added; nothing is zero-filled to add to.
    if (n1 == 0) {
      r.g.fill(T(0));
    } else {
      for (std::size_t i = 0; i < N; ++i) r.g[i] = p1[0] * x1[0]->g[i];
      for (std::size_t t = 1; t < n1; ++t)
        for (std::size_t i = 0; i < N; ++i) r.g[i] += p1[t] * x1[t]->g[i];
    }
    std::size_t done1 = 0, done2 = 0;
    if (n1 == 1 && n2 == 1) {
      const T p = p1[0], q = p2[0];
      const auto& h = x1[0]->h;
      const auto &gx = x2[0]->g, &gy = y2[0]->g;
      for (std::size_t i = 0; i < N; ++i) {
        const T qi = q * gx[i];
        for (std::size_t j = 0; j < N; ++j) r.h[i * N + j] = p * h[i * N + j] + qi * gy[j];
      }
      done1 = done2 = 1;
    } else if (n1 == 2 && n2 == 0) {
      const T p = p1[0], q = p1[1];
      const auto &h0 = x1[0]->h, &h1 = x1[1]->h;
      for (std::size_t i = 0; i < N * N; ++i) r.h[i] = p * h0[i] + q * h1[i];
      done1 = 2;
    } else if (n1 > 0) {
      for (std::size_t i = 0; i < N * N; ++i) r.h[i] = p1[0] * x1[0]->h[i];
      done1 = 1;
    } else if (n2 > 0) {
      for (std::size_t i = 0; i < N; ++i) {
        const T pi = p2[0] * x2[0]->g[i];
        for (std::size_t j = 0; j < N; ++j) r.h[i * N + j] = pi * y2[0]->g[j];
      }
      done2 = 1;
    } else {
      r.h.fill(T(0));
    }
    for (std::size_t t = done1; t < n1; ++t)
      for (std::size_t i = 0; i < N * N; ++i) r.h[i] += p1[t] * x1[t]->h[i];
    for (std::size_t t = done2; t < n2; ++t)
      for (std::size_t i = 0; i < N; ++i) {
        const T pi = p2[t] * x2[t]->g[i];
        for (std::size_t j = 0; j < N; ++j) r.h[i * N + j] += pi * y2[t]->g[j];
      }
  }
  return r;
}
}  // namespace jet2s

/// An op with jet2 arguments (call_op routes here): the partials from one run on hyper-duals,
/// then the chain rule. Numbers are constants; anything else gives dual_unsupported.
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto jet2_call(const Op& op, const A&... a) {
  using J = typename jet2s::first<A...>::type;
  using T = typename J::value_type;
  if constexpr (!((std::is_same_v<std::remove_cvref_t<A>, J> || std::is_arithmetic_v<std::remove_cvref_t<A>>) && ...)) {
    return dual_unsupported{};
  } else {
    constexpr std::size_t C = jet2s::positions<J, A...>().second;
    using H = scalar_dual<scalar_dual<T, static_cast<int>(C)>, static_cast<int>(C)>;
    auto run = [&] { return jet2s::run_seeded<J>(op, a...); };
    using O = std::remove_cvref_t<decltype(run())>;
    if constexpr (std::is_arithmetic_v<O> || is_dual_unsupported_v<O>) {
      return run();  // a comparison (plain values), or an op these values cannot carry
    } else if constexpr (!std::is_same_v<O, H>) {
      return dual_unsupported{};
    } else {
      return jet2s::chain<J>(op, a...);
    }
  }
}

}  // namespace detail
}  // namespace tower
