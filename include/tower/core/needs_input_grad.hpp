#pragma once
// Which inputs of an op need a gradient while its VJP rule runs: PyTorch's ctx.needs_input_grad.
//
// The static tape knows which inputs of a node are tracked (a null parent is a constant at that
// level) and says so through this thread-local mask while the node's VJP rule runs. Rules whose
// input gradients are costly (matmul: one product per input; binary pointwise ops: a broadcast
// reduction) skip the ones nobody reads: jacrev(x -> tanh(A x)) would otherwise form the
// gradient of the constant A, a batched outer product per cotangent. Everywhere else (the
// runtime path, the op checker calling rules directly) every input needs its gradient.
#include <cstdint>
#include <utility>

namespace tower::detail {

inline thread_local std::uint32_t vjp_needed_inputs = ~std::uint32_t{0};

/// The mask for the rule about to run (bit i: input i needs its gradient). Taking it resets it,
/// so rules that call other rules directly see every input needed.
inline std::uint32_t take_needed_inputs() { return std::exchange(vjp_needed_inputs, ~std::uint32_t{0}); }

/// Sets the mask for one VJP rule call; resets it afterwards, also when the rule throws.
struct needed_inputs_scope {
  explicit needed_inputs_scope(std::uint32_t mask) { vjp_needed_inputs = mask; }
  ~needed_inputs_scope() { vjp_needed_inputs = ~std::uint32_t{0}; }
  needed_inputs_scope(const needed_inputs_scope&) = delete;
  needed_inputs_scope& operator=(const needed_inputs_scope&) = delete;
};

/// Forward mode's counterpart, set by the static jvp interpreter while an op's JVP rule runs:
/// bit i set when input i has a tangent at that level (clear: its tangent is zeros). A rule may
/// leave out a term whose tangent is zero (matmul: the constant weight's term).
inline thread_local std::uint32_t jvp_tangent_inputs = ~std::uint32_t{0};

/// The tangent mask for the rule about to run; taking it resets it, as take_needed_inputs.
inline std::uint32_t take_tangent_inputs() { return std::exchange(jvp_tangent_inputs, ~std::uint32_t{0}); }

/// Sets the tangent mask for one JVP rule call; resets it afterwards, also when the rule throws.
struct tangent_inputs_scope {
  explicit tangent_inputs_scope(std::uint32_t mask) { jvp_tangent_inputs = mask; }
  ~tangent_inputs_scope() { jvp_tangent_inputs = ~std::uint32_t{0}; }
  tangent_inputs_scope(const tangent_inputs_scope&) = delete;
  tangent_inputs_scope& operator=(const tangent_inputs_scope&) = delete;
};

/// A rule's result for input I: the gradient when it is needed, a value of the same type that
/// nobody reads otherwise. `grad` is a callable, so a skipped gradient costs nothing.
template <class F>
auto gradient_if(bool needed, F&& grad) {
  using G = decltype(grad());
  return needed ? std::forward<F>(grad)() : G{};
}

}  // namespace tower::detail
