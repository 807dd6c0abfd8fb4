#pragma once
// A symbolic zero tangent (JAX's ad.Zero): what a jvp passes to an op's JVP rule for an argument
// with no tangent at its level, when the op says its rule takes one (`symbolic_zero_tangents`).
// The rule's terms in that tangent vanish by type, so `x * 0.5` has x's tangent type: a tangent
// never gains the levels of a primal it is multiplied by only through a zero term, and a constant
// operand's term costs nothing (and gives no NaN from inf * 0, as torch's forward AD).
//
// A rule that takes it must be linear in its tangents and use only +, -, * and / on them (the
// binary pointwise ops, dsl/pointwise.hpp).
#include <type_traits>
#include <utility>

namespace tower::detail {

struct zero_tangent {};
template <class X>
inline constexpr bool is_zero_tangent_v = std::is_same_v<std::remove_cvref_t<X>, zero_tangent>;

/// Whether Op's JVP rule takes zero_tangent for an argument without a tangent.
template <class Op>
inline constexpr bool takes_zero_tangents_v = requires { requires Op::symbolic_zero_tangents; };

inline constexpr zero_tangent operator-(zero_tangent) { return {}; }
template <class X>
constexpr std::remove_cvref_t<X> operator+(X&& x, zero_tangent) {
  return std::forward<X>(x);
}
template <class X>
  requires(!is_zero_tangent_v<X>)
constexpr std::remove_cvref_t<X> operator+(zero_tangent, X&& x) {
  return std::forward<X>(x);
}
template <class X>
constexpr std::remove_cvref_t<X> operator-(X&& x, zero_tangent) {
  return std::forward<X>(x);
}
template <class X>
  requires(!is_zero_tangent_v<X>)
constexpr auto operator-(zero_tangent, const X& x) {
  return -x;
}
template <class X>
constexpr zero_tangent operator*(const X&, zero_tangent) {
  return {};
}
template <class X>
  requires(!is_zero_tangent_v<X>)
constexpr zero_tangent operator*(zero_tangent, const X&) {
  return {};
}
template <class X>
  requires(!is_zero_tangent_v<X>)
constexpr zero_tangent operator/(zero_tangent, const X&) {
  return {};
}

}  // namespace tower::detail
