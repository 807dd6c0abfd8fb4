#pragma once
// Elementwise ops: each is one row of a table (name, kernel, VJP, JVP); the batching rule is the
// family's (functorch's BatchRulesUnaryOps / BatchRulesBinaryOps).
//
//   unary:       neg abs sign exp expm1 log log1p sqrt rsqrt square sin cos tan tanh sinh cosh
//                asin acos atan sigmoid softplus relu erf reciprocal
//   binary:      add sub mul div pow maximum minimum atan2 (broadcasting, scalars either side)
//   comparisons: eq ne lt le gt ge (0/1 values, not differentiated), where(cond, a, b),
//   stop_gradient (x, not differentiated); clamp (composed of them)
#include <algorithm>
#include <cmath>
#include <tuple>

#include "dsl/shape_ops.hpp"
#include "tower/kernels/shape.hpp"
#include "tower/kernels/base.hpp"
#include "tower/static/op.hpp"

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

/// Whether pad_batched(x, r) changes x.
template <class P, class B>
bool needs_pad(const bval<P, B>& x, std::int64_t r) {
  if constexpr (std::is_same_v<B, std::false_type>) return false;
  else return static_cast<bool>(x.batched) && logical_rank(x) < r;
}

template <class Op>
struct binary_pointwise {
  template <class BS, class X, class Y>
  auto batch(BS, const X& x, const Y& y) const {
    const std::int64_t r = std::max(logical_rank(x), logical_rank(y));
    // Ranks already lined up (the common case): the physical values as they are, uncopied.
    if (!needs_pad(x, r) && !needs_pad(y, r)) return call_op(static_cast<const Op&>(*this), x.value, y.value);
    return call_op(static_cast<const Op&>(*this), pad_batched(x, r), pad_batched(y, r));
  }
};

// Every op is named before any rule is written, so rules can use each other (sin's VJP uses cos).
#define TOWER_DECLARE_OP(NAME) \
  struct NAME##_op;            \
  inline constexpr op_fn<NAME##_op> NAME{};
/// @name Elementwise ops
/// Function objects (op_fn) on numbers, tensors, tw::fixed values, transform values and
/// dyn::values, differentiable under every transform: unary `tw::sin(x)`; binary `tw::pow(x, y)`,
/// broadcasting, scalars either side; comparisons `tw::lt(x, y)` (0/1, not differentiated);
/// `tw::where(c, a, b)`. Each op against its std:: function:
/// \code
/// double x = 0.5, y = 2.0;
/// auto same = [](double a, double b) { if (std::abs(a - b) > 1e-15 * std::max(1.0, std::abs(b))) throw std::runtime_error("op"); };
/// same(tw::neg(x), -x); same(tw::abs(-x), x); same(tw::sign(-x), -1); same(tw::exp(x), std::exp(x));
/// same(tw::expm1(x), std::expm1(x)); same(tw::log(x), std::log(x)); same(tw::log1p(x), std::log1p(x));
/// same(tw::sqrt(x), std::sqrt(x)); same(tw::rsqrt(x), 1 / std::sqrt(x)); same(tw::square(x), x * x);
/// same(tw::sin(x), std::sin(x)); same(tw::cos(x), std::cos(x)); same(tw::tan(x), std::tan(x));
/// same(tw::tanh(x), std::tanh(x)); same(tw::sinh(x), std::sinh(x)); same(tw::cosh(x), std::cosh(x));
/// same(tw::asin(x), std::asin(x)); same(tw::acos(x), std::acos(x)); same(tw::atan(x), std::atan(x));
/// same(tw::sigmoid(x), 1 / (1 + std::exp(-x))); same(tw::softplus(x), std::log1p(std::exp(x)));
/// same(tw::relu(-x), 0); same(tw::erf(x), std::erf(x)); same(tw::reciprocal(x), 1 / x);
/// same(tw::add(x, y), 2.5); same(tw::sub(x, y), -1.5); same(tw::mul(x, y), 1); same(tw::div(x, y), 0.25);
/// same(tw::pow(y, 3.0), 8); same(tw::maximum(x, y), y); same(tw::minimum(x, y), x); same(tw::atan2(x, y), std::atan2(x, y));
/// same(tw::eq(x, x) + tw::ne(x, y) + tw::lt(x, y) + tw::le(x, x) + tw::gt(y, x) + tw::ge(x, y), 5);
/// same(tw::where(tw::lt(x, y), x, y), x);
/// // tensors broadcast against scalars; every transform differentiates the ops
/// same((tw::pow(tw::tensor<double>{1, 2, 3}, 2.0) - 1.0)(2), 8);
/// same(tw::grad([](auto v) { return tw::sin(v) * v; })(x), std::cos(x) * x + std::sin(x));
/// \endcode
/// @{
TOWER_DECLARE_OP(neg)
TOWER_DECLARE_OP(abs)
TOWER_DECLARE_OP(sign)
TOWER_DECLARE_OP(exp)
TOWER_DECLARE_OP(expm1)
TOWER_DECLARE_OP(log)
TOWER_DECLARE_OP(log1p)
TOWER_DECLARE_OP(sqrt)
TOWER_DECLARE_OP(rsqrt)
TOWER_DECLARE_OP(square)
TOWER_DECLARE_OP(sin)
TOWER_DECLARE_OP(cos)
TOWER_DECLARE_OP(tan)
TOWER_DECLARE_OP(tanh)
TOWER_DECLARE_OP(sinh)
TOWER_DECLARE_OP(cosh)
TOWER_DECLARE_OP(asin)
TOWER_DECLARE_OP(acos)
TOWER_DECLARE_OP(atan)
TOWER_DECLARE_OP(sigmoid)
TOWER_DECLARE_OP(softplus)
TOWER_DECLARE_OP(relu)
TOWER_DECLARE_OP(erf)
TOWER_DECLARE_OP(reciprocal)
TOWER_DECLARE_OP(add)
TOWER_DECLARE_OP(sub)
TOWER_DECLARE_OP(mul)
TOWER_DECLARE_OP(div)
TOWER_DECLARE_OP(pow)
TOWER_DECLARE_OP(maximum)
TOWER_DECLARE_OP(minimum)
TOWER_DECLARE_OP(atan2)
TOWER_DECLARE_OP(eq)
TOWER_DECLARE_OP(ne)
TOWER_DECLARE_OP(lt)
TOWER_DECLARE_OP(le)
TOWER_DECLARE_OP(gt)
TOWER_DECLARE_OP(ge)
TOWER_DECLARE_OP(where)
/// @}
#undef TOWER_DECLARE_OP

// BASE computes the op on a plain value x (a number or a tensor); further arguments are members.
#define TOWER_UNARY_OP_BASE(NAME, BASE, VJP, JVP, ...)                                                           \
  struct NAME##_op {                                                                                             \
    static constexpr const char* name = #NAME;                                                                   \
    static constexpr bool elementwise = true;                                                                    \
    __VA_ARGS__                                                                                                  \
    template <class X>                                                                                           \
    TOWER_ALWAYS_INLINE auto base(const X& x) const {                                                            \
      return BASE;                                                                                               \
    }                                                                                                            \
    template <class BS, class X>                                                                                 \
    auto batch(BS, const X& x) const {                                                                           \
      return call_op(*this, x.value);                                                                            \
    }                                                                                                            \
    template <class G, class O, class X>                                                                         \
    TOWER_ALWAYS_INLINE auto vjp([[maybe_unused]] const G& g, [[maybe_unused]] const O& out,                     \
                                 [[maybe_unused]] const X& x) const {                                            \
      return std::make_tuple(VJP);                                                                               \
    }                                                                                                            \
    template <class O, class X, class T>                                                                         \
    TOWER_ALWAYS_INLINE auto jvp([[maybe_unused]] const O& out, [[maybe_unused]] const X& x, const T& t) const { \
      return JVP;                                                                                                \
    }                                                                                                            \
  };
// KERNEL computes the op on one number v.
#define TOWER_UNARY_OP(NAME, KERNEL, VJP, JVP) \
  TOWER_UNARY_OP_BASE(NAME, kernels::map(x, [](auto v) TOWER_INLINE_LAMBDA { return KERNEL; }), VJP, JVP)
// An op whose derivative is D(x, out): VJP g * D, JVP t * D.
#define TOWER_UNARY_OP_D(NAME, KERNEL, D) TOWER_UNARY_OP(NAME, KERNEL, g*(D), t*(D))
// A transcendental function (kernels/vector_math.hpp): <cmath> on numbers, glibc's libmvec a
// packet at a time on tensors (and on the lanes of a fused runtime vmap: vmath_fn).
#define TOWER_MATH_OP(NAME, VJP, JVP)                                                  \
  TOWER_UNARY_OP_BASE(NAME, kernels::map_math<kernels::vmath::NAME##_fn>(x), VJP, JVP, \
                      using vmath_fn = kernels::vmath::NAME##_fn;)
#define TOWER_MATH_OP_D(NAME, D) TOWER_MATH_OP(NAME, g*(D), t*(D))

// clang-format off
// name         kernel                                    derivative (x: input, out: result)
TOWER_UNARY_OP(neg,         -v,                                    -g,                       -t)
// sign(NaN) is NaN, as NumPy and JAX (torch's kernel gives 0, pytorch#41245; NaN propagates in
// every other tower op).
TOWER_UNARY_OP(sign,        v != v ? v : (v > 0) - (v < 0),        zeros_like(g),            zeros_like(t))
TOWER_UNARY_OP_D(abs,       std::abs(v),                           sign(x))
TOWER_MATH_OP_D(exp,        /* libmvec */                          out)
TOWER_MATH_OP_D(expm1,      /* libmvec */                          out + 1.0)
TOWER_MATH_OP(log,          /* libmvec */                          g / x,                    t / x)
TOWER_MATH_OP(log1p,        /* libmvec */                          g / (x + 1.0),            t / (x + 1.0))
TOWER_UNARY_OP(sqrt,        std::sqrt(v),                          g * 0.5 / out,            t * 0.5 / out)
TOWER_UNARY_OP_D(rsqrt,     1 / std::sqrt(v),                      out * out * out * -0.5)
TOWER_UNARY_OP_D(square,    v * v,                                 x * 2.0)
TOWER_MATH_OP_D(sin,        /* libmvec */                          cos(x))
TOWER_MATH_OP_D(cos,        /* libmvec */                          -sin(x))
TOWER_MATH_OP_D(tan,        /* libmvec */                          out * out + 1.0)
TOWER_MATH_OP_D(tanh,       /* libmvec */                          1.0 - out * out)
TOWER_MATH_OP_D(sinh,       /* libmvec */                          cosh(x))
TOWER_MATH_OP_D(cosh,       /* libmvec */                          sinh(x))
TOWER_MATH_OP_D(asin,       /* libmvec */                          rsqrt(1.0 - x * x))
TOWER_MATH_OP_D(acos,       /* libmvec */                          -rsqrt(1.0 - x * x))
TOWER_MATH_OP_D(atan,       /* libmvec */                          reciprocal(x * x + 1.0))
TOWER_UNARY_OP_D(sigmoid,   1 / (1 + std::exp(-v)),                out * (1.0 - out))
TOWER_UNARY_OP_D(softplus,  v > 20 ? v : std::log1p(std::exp(v)),  sigmoid(x))
TOWER_UNARY_OP_D(relu,      v <= 0 ? 0 : v, /* NaN stays NaN */    gt(x, 0.0))
TOWER_MATH_OP_D(erf,        /* libmvec */                          exp(-(x * x)) * 1.1283791670955126)
TOWER_UNARY_OP_D(reciprocal, 1 / v,                                -(out * out))
// clang-format on

#undef TOWER_MATH_OP_D
#undef TOWER_MATH_OP
#undef TOWER_UNARY_OP_D
#undef TOWER_UNARY_OP
#undef TOWER_UNARY_OP_BASE

namespace detail {
/// An argument whose VJP takes no input mask: a number, a tw::fixed vector, or a forward-mode dual
/// of them (the partials scalar_dual's ops and the per-example forms take from the VJP rule with
/// a unit cotangent). Both partials cost less there than reading which ones are needed.
template <class X>
inline constexpr bool is_number_value_v = std::is_arithmetic_v<X> || is_fixed_v<X> || is_scalar_dual_v<X>;
}  // namespace detail

#define TOWER_BINARY_OP(NAME, KERNEL, VJP_A, VJP_B, JVP)                                                    \
  struct NAME##_op : binary_pointwise<NAME##_op> {                                                          \
    static constexpr const char* name = #NAME;                                                              \
    static constexpr bool elementwise = true;                                                               \
    static constexpr bool symbolic_zero_tangents = true; /* zero_tangent.hpp */                             \
    template <class A, class B>                                                                             \
    TOWER_ALWAYS_INLINE auto base(const A& a, const B& b) const {                                           \
      return kernels::zip(#NAME, a, b, [](auto x, auto y) TOWER_INLINE_LAMBDA { return KERNEL; });          \
    }                                                                                                       \
    template <class G, class O, class A, class B>                                                           \
    TOWER_ALWAYS_INLINE auto vjp(const G& g, [[maybe_unused]] const O& out, const A& a, const B& b) const { \
      if constexpr (detail::is_number_value_v<A> && detail::is_number_value_v<B>) {                         \
        return std::make_tuple(VJP_A, VJP_B); /* numbers: both, no mask (see is_number_value_v) */          \
      } else {                                                                                              \
        const std::uint32_t need = detail::take_needed_inputs();                                            \
        return std::make_tuple(detail::gradient_if(need & 1u, [&] { return sum_to_like(VJP_A, a); }),       \
                               detail::gradient_if(need & 2u, [&] { return sum_to_like(VJP_B, b); }));      \
      }                                                                                                     \
    }                                                                                                       \
    template <class O, class A, class B, class TA, class TB>                                                \
    TOWER_ALWAYS_INLINE auto jvp([[maybe_unused]] const O& out, [[maybe_unused]] const A& a,                \
                                 [[maybe_unused]] const B& b, [[maybe_unused]] const TA& ta,                \
                                 [[maybe_unused]] const TB& tb) const {                                     \
      return JVP;                                                                                           \
    }                                                                                                       \
  };

namespace detail {
/// pow's base in its a-derivative b a^(b - 1): 1 where b == 0, so that the derivative there is 0
/// (torch's and JAX's) and not 0 * inf at a = 0, and its own derivative is finite too.
template <class A, class B>
auto pow_base(const A& a, const B& b) {
  return where(eq(b, 0.0), 1.0, a);
}
/// log(a) where a > 0 and 0 elsewhere, with a finite derivative everywhere (pow's b-derivative).
template <class A>
auto log_where_positive(const A& a) {
  return log(where(gt(a, 0.0), a, 1.0));
}
/// Where the maximum's gradient goes: all of it to the larger argument, half each on ties, and
/// all of it to both when either is NaN (torch's rule: only a smaller argument gets nothing).
template <class A, class B>
auto max_share(const A& a, const B& b) {
  return 1.0 - (lt(a, b) + eq(a, b) * 0.5);
}
}  // namespace detail

namespace detail {
/// t as a tangent of out's shape: add's and sub's JVP when one tangent is a symbolic zero
/// (zero_tangent.hpp) is the other, of its argument's shape, which may broadcast to out's.
template <class T, class O>
auto shaped_like(T t, const O& out) {
  if constexpr (is_scalar_type_v<O>) {
    return t;
  } else if constexpr (is_scalar_type_v<T>) {
    return t * ones_like(out);
  } else {
    if (shape(t) == shape(out)) return t;
    return T(broadcast_to(t, shape(out)));
  }
}
}  // namespace detail

// clang-format off
// name  kernel   VJP wrt a      VJP wrt b            JVP
TOWER_BINARY_OP(add, x + y,  g,            g,                   detail::shaped_like(ta + tb, out))
TOWER_BINARY_OP(sub, x - y,  g,            -g,                  detail::shaped_like(ta - tb, out))
TOWER_BINARY_OP(mul, x * y,  g * b,        g * a,               ta * b + a * tb)
TOWER_BINARY_OP(div, x / y,  g / b,        -(g / b) * out,      (ta - out * tb) / b)
TOWER_BINARY_OP(pow, std::pow(x, y),  g * b * pow(detail::pow_base(a, b), b - 1.0),  g * out * detail::log_where_positive(a),
                ta * b * pow(detail::pow_base(a, b), b - 1.0) + tb * out * detail::log_where_positive(a))
// maximum and minimum propagate NaN from either side, as torch's.
TOWER_BINARY_OP(maximum, x > y || x != x ? x : y,  g * detail::max_share(a, b),  g * detail::max_share(b, a),
                ta * detail::max_share(a, b) + tb * detail::max_share(b, a))
TOWER_BINARY_OP(minimum, x < y || x != x ? x : y,  g * detail::max_share(b, a),  g * detail::max_share(a, b),
                ta * detail::max_share(b, a) + tb * detail::max_share(a, b))
TOWER_BINARY_OP(atan2, std::atan2(x, y),  g * b / (a * a + b * b),  -(g * a) / (a * a + b * b),
                (ta * b - tb * a) / (a * a + b * b))
// clang-format on

#undef TOWER_BINARY_OP

// The arithmetic ops on numbers are the operators themselves: a fused runtime vmap may run two
// of them in one pass (runtime/fused_program.hpp).
namespace fusion {
template <>
inline constexpr arith arith_of<add_op> = arith::add;
template <>
inline constexpr arith arith_of<sub_op> = arith::sub;
template <>
inline constexpr arith arith_of<mul_op> = arith::mul;
template <>
inline constexpr arith arith_of<div_op> = arith::div;
template <>
inline constexpr arith arith_of<neg_op> = arith::neg;
}  // namespace fusion

// Comparisons: 0/1 values of the inputs' type; grad does not record them (no derivative).
#define TOWER_COMPARE_OP(NAME, EXPR)                                                                       \
  struct NAME##_op : binary_pointwise<NAME##_op> {                                                         \
    static constexpr const char* name = #NAME;                                                             \
    static constexpr bool elementwise = true;                                                              \
    static constexpr bool differentiable = false;                                                          \
    template <class A, class B>                                                                            \
    TOWER_ALWAYS_INLINE auto base(const A& a, const B& b) const {                                          \
      return kernels::zip(#NAME, a, b, [](auto x, auto y) TOWER_INLINE_LAMBDA { return (EXPR) ? 1 : 0; }); \
    }                                                                                                      \
  };
TOWER_COMPARE_OP(eq, x == y)
TOWER_COMPARE_OP(ne, x != y)
TOWER_COMPARE_OP(lt, x < y)
TOWER_COMPARE_OP(le, x <= y)
TOWER_COMPARE_OP(gt, x > y)
TOWER_COMPARE_OP(ge, x >= y)
#undef TOWER_COMPARE_OP

/// stop_gradient(x): x, as a constant to every transform (JAX's `lax.stop_gradient`, torch's
/// `detach`): no derivative flows through it, in reverse or forward mode, at any level.
/// \code
/// // d/dx [x * stop_gradient(x)] = stop_gradient(x) = x, not 2 x
/// if (tw::grad([](auto x) { return x * tw::stop_gradient(x); })(3.0) != 3.0) throw std::runtime_error("stop_gradient");
/// \endcode
struct stop_gradient_op {
  static constexpr const char* name = "stop_gradient";
  static constexpr bool elementwise = true;
  static constexpr bool differentiable = false;
  template <class X>
  TOWER_ALWAYS_INLINE auto base(const X& x) const {
    return kernels::map(x, [](auto v) TOWER_INLINE_LAMBDA { return v; });
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
};
inline constexpr op_fn<stop_gradient_op> stop_gradient{};

/// where(cond, a, b): a where cond is nonzero, else b; all three broadcast. Differentiable in a
/// and b (cond gets a zero gradient).
struct where_op {
  static constexpr const char* name = "where";
  static constexpr bool elementwise = true;
  template <class C, class A, class B>
  TOWER_ALWAYS_INLINE auto base(const C& c, const A& a, const B& b) const {
    return kernels::where(c, a, b);
  }
  template <class BS, class C, class A, class B>
  auto batch(BS, const C& c, const A& a, const B& b) const {
    const std::int64_t r = std::max({logical_rank(c), logical_rank(a), logical_rank(b)});
    return call_op(*this, pad_batched(c, r), pad_batched(a, r), pad_batched(b, r));
  }
  template <class G, class O, class C, class A, class B>
  TOWER_ALWAYS_INLINE auto vjp(const G& g, const O&, const C& c, const A& a, const B& b) const {
    return std::make_tuple(zeros_like(c), sum_to_like(where(c, g, 0.0), a), sum_to_like(where(c, 0.0, g), b));
  }
  template <class O, class C, class A, class B, class TC, class TA, class TB>
  TOWER_ALWAYS_INLINE auto jvp(const O&, const C& c, const A&, const B&, const TC&, const TA& ta, const TB& tb) const {
    return where(c, ta, tb);
  }
};

// Operators on tower values (tensors, static wrappers); dyn::value has its own in its namespace.
template <operand A, operand B>
  requires(tower_value<A> || tower_value<B>)
TOWER_ALWAYS_INLINE auto operator+(const A& a, const B& b) {
  return call_op(add_op{}, a, b);
}
template <operand A, operand B>
  requires(tower_value<A> || tower_value<B>)
TOWER_ALWAYS_INLINE auto operator-(const A& a, const B& b) {
  return call_op(sub_op{}, a, b);
}
template <operand A, operand B>
  requires(tower_value<A> || tower_value<B>)
TOWER_ALWAYS_INLINE auto operator*(const A& a, const B& b) {
  return call_op(mul_op{}, a, b);
}
template <operand A, operand B>
  requires(tower_value<A> || tower_value<B>)
TOWER_ALWAYS_INLINE auto operator/(const A& a, const B& b) {
  return call_op(div_op{}, a, b);
}
template <tower_value A>
TOWER_ALWAYS_INLINE auto operator-(const A& a) {
  return call_op(neg_op{}, a);
}

/// clamp(x, lo, hi): x limited to [lo, hi] (torch's `clamp`, JAX's `clip`); lo and hi are numbers
/// or values that broadcast with x. The derivative in x is 1 on [lo, hi], bounds included (torch's
/// convention), and 0 outside, where it flows to the bound; NaN stays NaN.
/// \code
/// auto x = tw::tensor<double>({3}, {-2, 0.5, 3});
/// if (tw::clamp(x, -1.0, 1.0)(0) != -1 || tw::clamp(x, -1.0, 1.0)(1) != 0.5) throw std::runtime_error("clamp");
/// if (tw::grad([](auto v) { return tw::clamp(v, 0.0, 1.0); })(1.0) != 1.0) throw std::runtime_error("at a bound");
/// \endcode
template <operand X, operand L, operand H>
auto clamp(const X& x, const L& lo, const H& hi) {
  return where(lt(x, lo), lo, where(gt(x, hi), hi, x));
}

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
