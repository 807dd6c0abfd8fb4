#pragma once
// jvp(f, primals, tangents) and linearize(f, primals...): forward mode.
//
//   auto [y, dy] = tw::jvp(f, std::tuple{x}, std::tuple{v});   // y = f(x), dy = J(x) v
//   auto [y2, f_jvp] = tw::linearize(f, x);                     // f_jvp(v) = J(x) v
//
// Each primal becomes dual<P, T, L> (its tangent may carry levels the primal does not, so
// vmap over tangents — jacfwd — works), and every op inside f runs its JVP rule. jvp runs f
// with forward mode on and remembers the mode outside (prev_fwd_grad_mode), like grad.
#include <array>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "dsl/pointwise.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/static/diagnostics.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/static/pytree.hpp"
#include "tower/static/values.hpp"
#include "tower/core/runtime_function.hpp"
#include "tower/transforms/runtime/transforms.hpp"
#include "tower/core/transform_options.hpp"
#include "tower/transforms/static/level.hpp"

namespace tower {

namespace detail {

template <int L, class R>
auto split_dual(const R& r) {
  if constexpr (is_dyn_v<R>) {
    if (r.level() == L) return std::make_pair(r.get().inner, r.get().tangent);
    return std::make_pair(r, zeros_like(r));
  } else if constexpr (is_dual_at_v<R, L>) return std::make_pair(r.primal, r.tangent);
  else return std::make_pair(r, zeros_like(r));
}

/// The tangent with every level of its primal. A tangent may lack some (jacfwd's basis under vmap
/// is not batched at vmap's level; a tangent given from outside a grad is not a grad value), and
/// then x's tangent and the tangent of an op on x (t * cos(x), which has them) differ in type: a
/// variable reassigned in f (`h = tanh(h)` in a loop) or a braced list of x and sin(x) would not
/// compile. t + where(1, 0, p) is t with p's levels (zeros, a zero derivative, NaN-safe); a
/// tangent that has them all is kept as it is.
template <class P, class T>
auto tangent_with_levels_of(const P& p, const T& t) {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(t + where(1.0, 0.0, p))>, T>) return t;
  else return t + where(1.0, 0.0, p);
}

template <int Floor, class F, class... P, class... T>
auto jvp_static(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  constexpr int L = pytree_level<P..., T...>() + 1;
  return run_at_level<L, Floor, may_capture_values<F>()>("jvp", [&](auto level) {
    constexpr int Lv = decltype(level)::value;
    const bool prev = is_fwd_grad_enabled();
    interpreter_scope scope(transform_type::jvp, Lv);
    scope.entry().prev_fwd_grad_mode = prev;
    const std::uint64_t serial = scope.entry().serial;
    fwd_grad_scope fwd(scope.entry());
    auto args = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(tree_zip(
          [&](const auto& p, const auto& t) {
            if (shape(p) != shape(t))
              throw error("jvp: tangent " + std::to_string(I) + " has shape " + shape_str(shape(t)) +
                          " but its primal has shape " + shape_str(shape(p)));
            auto tl = tangent_with_levels_of(p, t);
            return dual<std::remove_cvref_t<decltype(p)>, decltype(tl), Lv>{p, std::move(tl), serial};
          },
          std::get<I>(primals), std::get<I>(tangents))...);
    }(std::index_sequence_for<P...>{});
    auto r = std::apply(f, args);
    return std::make_pair(tree_map([](const auto& leaf) { return split_dual<Lv>(leaf).first; }, r),
                          tree_map([](const auto& leaf) { return split_dual<Lv>(leaf).second; }, r));
  });
}

/// Whether each tangent has its primal's element type, leaf by leaf.
template <class P, class T>
constexpr bool same_element_types() {
  if constexpr (is_leaf_v<P>) return is_dyn_v<P> || is_dyn_v<T> || std::is_same_v<scalar_type_t<P>, scalar_type_t<T>>;
  else
    return []<class... Lp, class... Lt>(std::type_identity<std::tuple<Lp...>>, std::type_identity<std::tuple<Lt...>>) {
      if constexpr (sizeof...(Lp) != sizeof...(Lt))
        return true;  // leaf_types merges vector entries: checked per leaf at run time
      else return ((is_dyn_v<Lp> || is_dyn_v<Lt> || std::is_same_v<scalar_type_t<Lp>, scalar_type_t<Lt>>) && ...);
    }(std::type_identity<typename leaf_types<P>::type>{}, std::type_identity<typename leaf_types<T>::type>{});
}

/// jvp inside a tower composite (see run_at_level's Floor); jvp below is jvp_at<0>.
template <int Floor, class F, class... P, class... T>
auto jvp_at(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  static_assert(sizeof...(P) != 0, "jvp: give at least one primal (and its tangent): f has nothing to differentiate");
  static_assert(sizeof...(P) == sizeof...(T), "jvp: give one tangent per primal");
  static_assert((same_structure<P, T>() && ...),
                "jvp: each tangent must have its primal's pytree structure (the same tuples, vectors and structs, a "
                "tensor or number per leaf)");
  static_assert((same_element_types<P, T>() && ...),
                "jvp: each tangent must have its primal's element type (double with double, float with float)");
  if constexpr (is_runtime_function_v<F> || (is_dyn_v<P> || ...) || (is_dyn_v<T> || ...)) {
    constexpr std::size_t N = sizeof...(P);
    auto call = [&](const std::array<dyn::value, N>& w) { return std::apply(f, w); };
    auto to_array = [](const auto& t) {
      return std::apply([](const auto&... x) { return std::array<dyn::value, N>{runtime::detail::to_value(x)...}; }, t);
    };
    return dyn::run_jvp(call, to_array(primals), to_array(tangents));
  } else {
    return jvp_static<Floor>(f, primals, tangents);
  }
}

}  // namespace detail

namespace detail {
/// f's output has a leaf to differentiate (a std::vector's length shows only at run time), as
/// torch.func's vjp and jvp require.
template <class Y>
void require_some_output(const char* who, const Y& y) {
  std::size_t n = 0;
  tree_for_each([&](const auto&) { ++n; }, y);
  if (n == 0) throw error(std::string(who) + ": f returned no output to differentiate (an empty std::vector)");
}

/// jvp's check of f's output (a pytree of differentiable values with a leaf), when f takes the
/// primals as given (else its call reports).
template <bool HasAux, class F, class... P>
constexpr auto check_jvp_output() {
  // f is asked about the values it is called with (jvp's duals), never about plain ones: a
  // function written for transformed values (type-erased code, say) may not compile on those.
  if constexpr (sizeof...(P) == 0 || !(is_leaf_v<P> && ...)) {
    return std::true_type{};  // jvp_at's check (f is not even called), or pytree primals: f's call reports
  } else if constexpr (is_runtime_function_v<F> || (is_dyn_v<P> || ...)) {
    return std::true_type{};  // the runtime path calls f with dyn values, never with these duals
  } else {
    constexpr int L = pytree_level<P...>() + 1;
    if constexpr (!std::is_invocable_v<const F&, const dual<P, P, L>&...>) return std::true_type{};
    else
      return diagnostics::check_differentiable_output<"jvp", HasAux,
                                                      std::invoke_result_t<const F&, const dual<P, P, L>&...>>();
  }
}
}  // namespace detail

/// jvp(f, std::tuple{primals...}, std::tuple{tangents...}) -> std::pair(output, output tangent).
/// f may return any pytree of tensors and floating-point numbers.
/// \code
/// auto [y, t] = tw::jvp([](auto x) { return tw::exp(x); }, std::tuple{1.0}, std::tuple{2.0});
/// if (y != std::exp(1.0) || std::abs(t - 2 * std::exp(1.0)) > 1e-15) throw std::runtime_error("jvp");
/// \endcode
template <class F, class... P, class... T>
auto jvp(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents) {
  if constexpr (!decltype(detail::check_jvp_output<false, F, P...>())::value) {
    return diagnostics::failed{};
  } else {
    auto r = detail::jvp_at<0>(f, primals, tangents);
    detail::require_some_output("jvp", r.first);
    return r;
  }
}

/// jvp(f, primals, tangents, tw::has_aux): f returns (output, aux) -> (output, output tangent, aux).
template <class F, class... P, class... T>
auto jvp(const F& f, const std::tuple<P...>& primals, const std::tuple<T...>& tangents, has_aux_t) {
  if constexpr (!decltype(detail::check_jvp_output<true, F, P...>())::value) {
    return diagnostics::failed{};
  } else {
    // aux rides along as a second output; its tangent is dropped.
    auto [out, tangent] = detail::jvp_at<0>(f, primals, tangents);
    detail::require_some_output("jvp", std::get<0>(out));
    return std::make_tuple(std::get<0>(std::move(out)), std::get<0>(std::move(tangent)), std::get<1>(std::move(out)));
  }
}

/// linearize(f, primals...) -> (f(primals...), jvp_fn) with jvp_fn(tangents...) = J v.
/// (jvp_fn re-evaluates f with forward mode; JAX's linearize stores the linear map instead.)
/// \code
/// auto [y, f_jvp] = tw::linearize([](auto x) { return x * x; }, 3.0);
/// if (y != 9.0 || f_jvp(1.0) != 6.0) throw std::runtime_error("linearize");
/// \endcode
template <class F, class... P>
auto linearize(F f, const P&... primals) {
  auto out = f(primals...);
  auto jvp_fn = [f, primals = std::make_tuple(primals...)](const auto&... tangents) {
    return jvp(f, primals, std::make_tuple(tangents...)).second;
  };
  return std::make_pair(std::move(out), std::move(jvp_fn));
}

}  // namespace tower
