#pragma once
// Choosing the level of a static transform call: above every live level, so that values of
// nested transforms never share one (docs/composition.md).
//
// A static transform predicts its level from its arguments' types: one above the highest level
// they carry. The prediction is checked once per call against the live interpreter stack: if a
// transform is live above it — the function captured a value of an enclosing transform, which
// the argument types do not show — the call runs an instantiation at a level `closure_level_step`
// higher instead, above every live level, so captured and fresh values never share a level.
// Its result is converted to the predicted type; that is lossless when the result does not
// depend on the captured value through levels the predicted type lacks. When it does, the result
// at that higher level carries the captured levels in its type, and the call runs just above them
// instead (widened_level), returning a result that keeps them. A dependence that no type shows
// raises tower::error (never a wrong number).
//
// A function that holds no values — an empty class (a captureless lambda, tw::sin) or tower's
// transforms of one — cannot have captured anything: it runs at the predicted level with the
// live transforms above hidden (hide_live_levels), and the second instantiation is never made.
// That halves the code the static path compiles for such functions.
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/core/interpreter_stack.hpp"
#include "tower/static/pytree.hpp"
#include "tower/static/dispatch.hpp"

namespace tower::detail {

inline constexpr int closure_level_step = 32;

template <class R, class X>
R convert_value(X&& x) {
  using XD = std::remove_cvref_t<X>;
  if constexpr (std::is_same_v<R, XD>) {
    return std::forward<X>(x);
  } else if constexpr (requires { std::tuple_size<R>::value; }) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return R{convert_value<std::tuple_element_t<I, R>>(std::get<I>(std::forward<X>(x)))...};
    }(std::make_index_sequence<std::tuple_size_v<R>>{});
  } else {
    return convert_adjoint<R>(std::forward<X>(x));
  }
}

/// Whether F may hold values of a live transform that its arguments do not show: false for an
/// empty class and for a tower transform (which declares `wrapped_function`) of such an F.
/// (An empty class that reaches a transform's values through globals is not supported.)
template <class F>
constexpr bool may_capture_values() {
  if constexpr (std::is_empty_v<F>) return false;
  else if constexpr (requires { typename F::wrapped_function; })
    return may_capture_values<typename F::wrapped_function>();
  else return true;
}

[[noreturn]] inline void nested_too_deeply(const char* transform, int live) {
  throw error(std::string(transform) +
              ": transforms nested through captured values too deeply for the static path (live level " +
              std::to_string(live) + "); pass the captured values as arguments or use the runtime path");
}

/// The closure case: a transform call whose level P is at or below the live level `live`. With a
/// function that holds no values, at(P) with the live transforms from P up hidden; otherwise
/// at(P + closure_level_step), converted to R, or tower::error when that is not above them either.
template <class R, int P, bool MayCapture, class At>
R run_below_live(const char* transform, int live, At&& at) {
  if constexpr (!MayCapture) {
    hide_live_levels hide(P);  // f holds no values: the live transforms above cannot reach it
    return at(std::integral_constant<int, P>{});
  } else {
    if constexpr (P < 4 * closure_level_step) {
      if (P + closure_level_step > live)
        return convert_value<R>(at(std::integral_constant<int, P + closure_level_step>{}));
    }
    nested_too_deeply(transform, live);
  }
}

/// The level a call whose arguments predict level P runs at, given RC, its result at the closure
/// level P + closure_level_step: P, or one above the highest level in [P, P + closure_level_step)
/// that RC carries. Such a level comes from a value f captured from a live transform (the
/// arguments do not show it): vmap(x -> vmap(y -> x + y)(Y))(X), d/dx [x · d/dy (x·y)]. Run
/// above it, the call's fresh values never share that level, and its result keeps the
/// dependence (the inner vmap's output is batched by the outer vmap, the inner grad's gradient is
/// tracked by the outer grad), as functorch's does. At the closure level every live transform's
/// level is below the fresh one, so RC carries the captured levels without confusing them.
template <int P, class RC>
constexpr int widened_level() {
  for (int l = P + closure_level_step - 1; l >= P; --l)
    if (tree_carries_level<RC>(l)) return l + 1;
  return P;
}

/// A call at the predicted level P, at its widened level W (see widened_level), or at the closure
/// level when W is not above the live levels: at(level) runs it. W == P is the common case, and
/// then this is run_below_live's choice.
template <int P, bool MayCapture, class At>
auto run_widened(const char* transform, At&& at) {
  using RC = decltype(at(std::integral_constant<int, P + closure_level_step>{}));
  constexpr int W = widened_level<P, RC>();
  using R = decltype(at(std::integral_constant<int, W>{}));
  const int live = top_live_level();
  if (W > live) return at(std::integral_constant<int, W>{});
  if constexpr (W == P) {
    return run_below_live<R, P, MayCapture>(transform, live, at);
  } else {
    if (P + closure_level_step > live)
      return convert_value<R>(at(std::integral_constant<int, P + closure_level_step>{}));
    nested_too_deeply(transform, live);
  }
}

/// Calls run(std::integral_constant<int, level>) at the predicted level, or above the live stack.
///
/// Floor says who calls: 0, a user-facing transform (check, and one alternative instantiation
/// for the closure case); -1 or a positive floor, a transform inside a tower composite (jacrev,
/// jacfwd, vjp_fn) whose entry already made that check: the level is max(predicted, floor) and
/// there is no alternative instantiation, which keeps compile time linear in the nesting depth.
/// MayCapture: may_capture_values<F>() of the transform's function (false: no alternative either).
template <int L, int Floor = 0, bool MayCapture = true, class Run>
auto run_at_level(const char* transform, Run&& run) {
  if constexpr (Floor != 0) {
    constexpr int Lf = L > Floor ? L : Floor;
    if (Lf <= top_live_level())
      throw error(std::string(transform) + ": internal: level " + std::to_string(Lf) + " is not above the live level " +
                  std::to_string(top_live_level()));
    return run(std::integral_constant<int, Lf>{});
  } else if constexpr (MayCapture && L < 4 * closure_level_step) {
    return run_widened<L, MayCapture>(transform, run);
  } else {
    using R = decltype(run(std::integral_constant<int, L>{}));
    const int live = top_live_level();
    if (L > live) return run(std::integral_constant<int, L>{});
    return run_below_live<R, L, MayCapture>(transform, live, run);
  }
}

/// The entry check of a composite transform whose arguments predict level P: calls
/// body(std::integral_constant<int, floor>) with floor -1 when P is above every live level, and
/// otherwise once more with a floor above them (see run_at_level; MayCapture as there).
template <int P, bool MayCapture = true, class Body>
auto run_composite(const char* name, Body&& body) {
  // At P: floor -1 (as if nothing were live, or with the live transforms hidden); else floor = level.
  auto at = [&](auto level) {
    if constexpr (decltype(level)::value == P) return body(std::integral_constant<int, -1>{});
    else return body(level);
  };
  if constexpr (MayCapture && P < 4 * closure_level_step) {
    return run_widened<P, MayCapture>(name, at);
  } else {
    using R = decltype(body(std::integral_constant<int, -1>{}));
    const int live = top_live_level();
    if (P > live) return body(std::integral_constant<int, -1>{});
    return run_below_live<R, P, MayCapture>(name, live, at);
  }
}

}  // namespace tower::detail
