#pragma once
// Calling an op: call_op picks the path (runtime when any argument is a dyn::value, static
// otherwise), and the helpers batching rules use to line up batched and unbatched arguments.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tower/core/force_inline.hpp"
#include "tower/static/diagnostics.hpp"
#include "tower/static/elementwise_jet.hpp"
#include "tower/static/jet2.hpp"
#include "tower/static/fixed_ops.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/scalar_dual.hpp"
#include "tower/static/dispatch.hpp"
#include "tower/static/values.hpp"

namespace tower {

/// A value an op accepts: arithmetic scalars, tensors, static wrappers and runtime values.
/// (diagnostics::failed, the result of an op whose static check failed, passes through every op
/// silently, so the user sees one error, not one per later op.)
template <class X>
concept operand = std::is_arithmetic_v<std::remove_cvref_t<X>> || is_tensor_v<X> || is_static_wrapper_v<X> ||
                  is_dyn_v<X> || diagnostics::is_failed_v<X> || is_scalar_dual_v<X> || is_dual_unsupported_v<X> ||
                  is_fixed_v<X> || is_elementwise_jet_v<X> || is_jet2_v<X>;

/// A value that is tower's (not a bare arithmetic scalar): operators are defined for these.
template <class X>
concept tower_value =
    is_tensor_v<X> || is_static_wrapper_v<X> || is_dyn_v<X> || diagnostics::is_failed_v<X> || is_scalar_dual_v<X> ||
    is_dual_unsupported_v<X> || is_fixed_v<X> || is_elementwise_jet_v<X> || is_jet2_v<X>;

namespace detail {
template <class X>
TOWER_ALWAYS_INLINE decltype(auto) as_operand(const X& x) {
  if constexpr (std::is_integral_v<X>) return static_cast<double>(x);
  else return (x);
}
template <class Op, class... A>
dyn::value runtime_call(const Op& op, const A&... a);  // runtime/dispatch.hpp
}  // namespace detail

/// Runs `op` on the arguments through the interpreter stack.
template <class Op, class... A>
TOWER_ALWAYS_INLINE auto call_op(const Op& op, const A&... a) {
  if constexpr ((diagnostics::is_failed_v<A> || ...)) return diagnostics::failed{};
  else if constexpr ((is_dual_unsupported_v<A> || ...)) return dual_unsupported{};
  else if constexpr ((is_elementwise_jet_v<A> || ...)) return detail::jet_call(op, detail::as_operand(a)...);
  else if constexpr ((is_lanes_dual_v<A> || ...)) return detail::dual_call(op, detail::as_operand(a)...);
  else if constexpr ((is_fixed_v<A> || ...)) return detail::fixed_call(op, detail::as_operand(a)...);
  else if constexpr ((is_jet2_v<A> || ...)) return detail::jet2_call(op, detail::as_operand(a)...);
  else if constexpr ((is_scalar_dual_v<A> || ...)) return detail::dual_call(op, detail::as_operand(a)...);
  else if constexpr ((is_dyn_v<A> || ...)) return detail::runtime_call(op, detail::as_operand(a)...);
  else if constexpr (!decltype(diagnostics::check_element_types<Op, A...>())::value) return diagnostics::failed{};
  else return dispatch_static(op, detail::as_operand(a)...);
}

/// An op with no attributes as a function object: `tw::sin(x)`.
template <class Op>
struct op_fn {
  template <operand... A>
  TOWER_ALWAYS_INLINE auto operator()(const A&... a) const {
    return call_op(Op{}, a...);
  }
};

// ---- helpers for batching rules (generic over both paths) -----------------------------------

template <class P, class B>
std::int64_t logical_rank(const bval<P, B>& x) {
  return rank(x.value) - (static_cast<bool>(x.batched) ? 1 : 0);
}

template <class P, class B>
shape_t logical_shape(const bval<P, B>& x) {
  shape_t s = shape(x.value);
  if (static_cast<bool>(x.batched)) s.erase(s.begin());
  return s;
}

}  // namespace tower
