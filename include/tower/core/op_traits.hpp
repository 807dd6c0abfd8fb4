#pragma once
// What the engine knows about an op: which rules it has, and the argument form of batching rules.
//
// An op is a struct (see dsl/) with a `name` and some of these members, all generic code:
//   base(x...)                      the plain kernel on double / float / tensor<T>
//   batch(batch_size, bval...)      the batching rule (vmap): physical result, batch in dim 0
//   batch_last_rule(batch_size, bval...)  optional, static path: the rule for batched values
//                                   whose batch is their last dim (batched::batch_last), as
//                                   std::optional (nullopt: the engine moves the batch first)
//   vjp(g, out, x...)               the VJP rule (grad): std::tuple of one gradient per input
//   jvp(out, x..., t...)            the JVP rule (jvp): the output tangent
// An op with `static constexpr bool differentiable = false` (zeros_like, comparisons) passes
// through grad without being recorded. Both paths instantiate these same members.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tower/core/shape_vector.hpp"

namespace tower {

/// An argument of a batching rule: its physical value, and whether it carries the batch (in dim 0).
/// `B` is std::true_type / std::false_type on the static path and bool on the runtime path.
template <class P, class B>
struct bval {
  const P& value;
  B batched;
};

template <class Op>
concept differentiable_op = !requires { Op::differentiable; } || Op::differentiable;

template <class Op>
inline constexpr bool is_differentiable_v = differentiable_op<Op>;

/// An elementwise op (`static constexpr bool elementwise = true;`): its base kernel on doubles
/// is its base kernel on one-element tensors, and the result has the operands' broadcast shape.
/// The runtime path uses this to run one-element values without building tensors.
template <class Op>
inline constexpr bool is_elementwise_v = [] {
  if constexpr (requires { Op::elementwise; }) return static_cast<bool>(Op::elementwise);
  else return false;
}();

/// An op linear in its single operand (`static constexpr bool linear = true;`), whose base kernel
/// takes a tensor<double>: the runtime's fused program probes it with one-hot inputs, and on
/// elementwise jets a linear reduction reads its weights off unit vectors.
template <class Op>
inline constexpr bool is_linear_v = [] {
  if constexpr (requires { Op::linear; }) return static_cast<bool>(Op::linear);
  else return false;
}();

template <class Op, class... A>
inline constexpr bool has_base_kernel_v = requires(const Op& op, const A&... a) { op.base(a...); };

template <class Op, class BS, class... B>
inline constexpr bool has_batch_rule_v = requires(const Op& op, BS bs, B... b) { op.batch(bs, b...); };

template <class Op, class Out, class... X>
inline constexpr bool has_vjp_rule_v = requires(const Op& op, const Out& g, const X&... x) { op.vjp(g, g, x...); };

/// True when vmap must not fall back to the per-example loop for Op (static path).
template <class Op>
inline constexpr bool strict_vmap_v =
#ifdef TOWER_STRICT_VMAP
    true;
#else
    [] {
      if constexpr (requires { Op::strict_vmap; }) return static_cast<bool>(Op::strict_vmap);
      else return false;
    }();
#endif

namespace detail {
// Defined by the op vocabulary (dsl/): the engine uses them to accumulate adjoints.
template <class A, class B>
auto add_values(const A& a, const B& b);
template <class V, class G>
auto cast_adjoint(const G& g);
template <class V, class G>
auto element_cast_adjoint(const G& g);
template <class X>
auto zeros_like_value(const X& x);
template <class X>
auto reshape_value(const X& x, const shape_t& s);
template <class X>
auto broadcast_values(const X& x, const shape_t& s);
// vmap's batching rule of Op, or the per-example fallback (batch_fallback.hpp).
template <class Op, class BS, class... B>
auto batch_rule_or_fallback(const Op& op, BS batch_size, const B&... x);
}  // namespace detail

namespace fusion {
/// The arithmetic operations: four binary, one unary. An op that is one of them says so by
/// specialising arith_of (dsl/pointwise.hpp), so that the runtime path's fused program
/// (runtime/fused_program.hpp) may run two of them in one pass over the lanes.
enum class arith : unsigned char { none, add, sub, mul, div, neg };
template <class Op>
inline constexpr arith arith_of = arith::none;
}  // namespace fusion

}  // namespace tower
