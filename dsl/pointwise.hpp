#pragma once
// Elementwise ops: each is one row of a table (name, kernel, VJP, JVP); the batching rule is the
// family's (functorch's BatchRulesUnaryOps / BatchRulesBinaryOps).
#include <algorithm>
#include <cmath>
#include <tuple>

#include "dsl/shape_ops.hpp"
#include "tower/kernels.hpp"
#include "tower/op.hpp"

namespace tower {

/// Lines up a batched argument with the other's logical rank: [B, xs...] -> [B, 1.., xs...],
/// so NumPy's right-aligned broadcasting of the physical values is the logical one.
template <class P, class B>
P pad_batched(const bval<P, B>& x, std::int64_t r) {
  if constexpr (std::is_same_v<B, std::false_type>) {
    return x.value;
  } else {
    const std::int64_t lr = logical_rank(x);
    if (!static_cast<bool>(x.batched) || lr >= r) return x.value;
    shape_t s = shape(x.value);
    s.insert(s.begin() + 1, static_cast<std::size_t>(r - lr), 1);
    return call_op(reshape_op{s}, x.value);
  }
}

template <class Op>
struct binary_pointwise {
  template <class BS, class X, class Y> auto batch(BS, const X& x, const Y& y) const {
    const std::int64_t r = std::max(logical_rank(x), logical_rank(y));
    return call_op(static_cast<const Op&>(*this), pad_batched(x, r), pad_batched(y, r));
  }
};

// Every op is named before any rule is written, so rules can use each other (sin's VJP uses cos).
#define TOWER_DECLARE_OP(NAME) \
  struct NAME##_op;            \
  inline constexpr op_fn<NAME##_op> NAME{};
TOWER_DECLARE_OP(neg)
TOWER_DECLARE_OP(sin)
TOWER_DECLARE_OP(cos)
TOWER_DECLARE_OP(exp)
TOWER_DECLARE_OP(log)
TOWER_DECLARE_OP(tanh)
TOWER_DECLARE_OP(add)
TOWER_DECLARE_OP(sub)
TOWER_DECLARE_OP(mul)
TOWER_DECLARE_OP(div)
#undef TOWER_DECLARE_OP

#define TOWER_UNARY_OP(NAME, KERNEL, VJP, JVP)                                                   \
  struct NAME##_op {                                                                            \
    static constexpr const char* name = #NAME;                                                  \
    template <class X> auto base(const X& x) const {                                            \
      return kernels::map(x, [](auto v) { return KERNEL; });                                    \
    }                                                                                           \
    template <class BS, class X> auto batch(BS, const X& x) const { return call_op(*this, x.value); } \
    template <class G, class O, class X>                                                        \
    auto vjp([[maybe_unused]] const G& g, [[maybe_unused]] const O& out, [[maybe_unused]] const X& x) const { \
      return std::make_tuple(VJP);                                                              \
    }                                                                                           \
    template <class O, class X, class T>                                                        \
    auto jvp([[maybe_unused]] const O& out, [[maybe_unused]] const X& x, const T& t) const { return JVP; } \
  };

// name   kernel            VJP (g: output cotangent)     JVP (t: input tangent)
TOWER_UNARY_OP(neg,  -v,              -g,                        -t)
TOWER_UNARY_OP(sin,  std::sin(v),     g * cos(x),                t * cos(x))
TOWER_UNARY_OP(cos,  std::cos(v),     -(g * sin(x)),             -(t * sin(x)))
TOWER_UNARY_OP(exp,  std::exp(v),     g * out,                   t * out)
TOWER_UNARY_OP(log,  std::log(v),     g / x,                     t / x)
TOWER_UNARY_OP(tanh, std::tanh(v),    g * (1.0 - out * out),     t * (1.0 - out * out))

#undef TOWER_UNARY_OP

#define TOWER_BINARY_OP(NAME, KERNEL, VJP_A, VJP_B, JVP)                                         \
  struct NAME##_op : binary_pointwise<NAME##_op> {                                              \
    static constexpr const char* name = #NAME;                                                  \
    template <class A, class B> auto base(const A& a, const B& b) const {                       \
      return kernels::zip(#NAME, a, b, [](auto x, auto y) { return KERNEL; });                  \
    }                                                                                           \
    template <class G, class O, class A, class B>                                               \
    auto vjp(const G& g, [[maybe_unused]] const O& out, const A& a, const B& b) const {         \
      return std::make_tuple(sum_to_like(VJP_A, a), sum_to_like(VJP_B, b));                     \
    }                                                                                           \
    template <class O, class A, class B, class TA, class TB>                                   \
    auto jvp([[maybe_unused]] const O& out, [[maybe_unused]] const A& a, [[maybe_unused]] const B& b, \
             [[maybe_unused]] const TA& ta, [[maybe_unused]] const TB& tb) const { return JVP; } \
  };

// name  kernel   VJP wrt a      VJP wrt b            JVP
TOWER_BINARY_OP(add, x + y,  g,            g,                   ta + tb)
TOWER_BINARY_OP(sub, x - y,  g,            -g,                  ta - tb)
TOWER_BINARY_OP(mul, x * y,  g * b,        g * a,               ta * b + a * tb)
TOWER_BINARY_OP(div, x / y,  g / b,        -(g * out / b),      (ta - out * tb) / b)

#undef TOWER_BINARY_OP

// Operators on tower values (tensors, static wrappers); dyn::value has its own in its namespace.
template <operand A, operand B> requires(tower_value<A> || tower_value<B>)
auto operator+(const A& a, const B& b) { return call_op(add_op{}, a, b); }
template <operand A, operand B> requires(tower_value<A> || tower_value<B>)
auto operator-(const A& a, const B& b) { return call_op(sub_op{}, a, b); }
template <operand A, operand B> requires(tower_value<A> || tower_value<B>)
auto operator*(const A& a, const B& b) { return call_op(mul_op{}, a, b); }
template <operand A, operand B> requires(tower_value<A> || tower_value<B>)
auto operator/(const A& a, const B& b) { return call_op(div_op{}, a, b); }
template <tower_value A>
auto operator-(const A& a) { return call_op(neg_op{}, a); }

namespace detail {
template <class A, class B>
auto add_values(const A& a, const B& b) {
  if constexpr (std::is_arithmetic_v<A> && std::is_arithmetic_v<B>) return a + b;
  else return call_op(add_op{}, a, b);
}
}  // namespace detail

}  // namespace tower

namespace tower::dyn {
// Found by argument-dependent lookup on dyn::value.
using tower::operator+;
using tower::operator-;
using tower::operator*;
using tower::operator/;
}  // namespace tower::dyn
