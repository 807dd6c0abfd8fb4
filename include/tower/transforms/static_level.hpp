#pragma once
// Choosing the level of a static transform call (DESIGN.md invariant 3).
//
// A static transform predicts its level from its arguments' types: one above the highest level
// they carry. The prediction is checked once per call against the live interpreter stack: if a
// transform is live above it — the function captured a value of an enclosing transform, which
// the argument types do not show — the call runs an instantiation at a level `closure_level_step`
// higher instead, above every live level, so captured and fresh values never share a level.
// Its result is converted to the predicted type; that is lossless when the result does not
// depend on the captured value through levels the predicted type lacks, and otherwise raises
// tower::error (never a wrong number).
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/interpreter_stack.hpp"
#include "tower/static_dispatch.hpp"

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

template <class... A>
constexpr int predicted_level() {
  int l = 0;
  ((l = l < level_of<A>() ? level_of<A>() : l), ...);
  return l + 1;
}

/// Calls run(std::integral_constant<int, level>) at the predicted level, or above the live stack.
///
/// Floor says who calls: 0, a user-facing transform (check, and one alternative instantiation
/// for the closure case); -1 or a positive floor, a transform inside a tower composite (jacrev,
/// jacfwd, vjp_fn) whose entry already made that check: the level is max(predicted, floor) and
/// there is no alternative instantiation, which keeps compile time linear in the nesting depth.
template <int L, int Floor = 0, class Run>
auto run_at_level(const char* transform, Run&& run) {
  if constexpr (Floor != 0) {
    constexpr int Lf = L > Floor ? L : Floor;
    if (Lf <= top_live_level())
      throw error(std::string(transform) + ": internal: level " + std::to_string(Lf) + " is not above the live level " +
                  std::to_string(top_live_level()));
    return run(std::integral_constant<int, Lf>{});
  } else {
  using R = decltype(run(std::integral_constant<int, L>{}));
  const int live = top_live_level();
  if (L > live) return run(std::integral_constant<int, L>{});
  if constexpr (L < 4 * closure_level_step) {
    if (L + closure_level_step > live)
      return convert_value<R>(run(std::integral_constant<int, L + closure_level_step>{}));
  }
  throw error(std::string(transform) + ": transforms nested through captured values too deeply for the static path (live level " +
              std::to_string(live) + "); pass the captured values as arguments or use the runtime path");
  }
}

/// The entry check of a composite transform whose arguments predict level P: calls
/// body(std::integral_constant<int, floor>) with floor -1 when P is above every live level, and
/// otherwise once more with a floor above them (see run_at_level).
template <int P, class Body>
auto run_composite(const char* name, Body&& body) {
  using R = decltype(body(std::integral_constant<int, -1>{}));
  const int live = top_live_level();
  if (P > live) return body(std::integral_constant<int, -1>{});
  if constexpr (P < 4 * closure_level_step) {
    if (P + closure_level_step > live)
      return convert_value<R>(body(std::integral_constant<int, P + closure_level_step>{}));
  }
  throw error(std::string(name) + ": transforms nested through captured values too deeply for the static path (live level " +
              std::to_string(live) + "); pass the captured values as arguments or use the runtime path");
}

}  // namespace tower::detail
