#pragma once
// Composites users of torch.nn.functional expect: softmax, log_softmax, mse_loss,
// cross_entropy, binary_cross_entropy_with_logits. Each is a composition of primitives, so every
// transform's rule follows from theirs.
#include <cstdint>
#include <limits>

#include "dsl/layout.hpp"
#include "dsl/pointwise.hpp"
#include "dsl/reduce.hpp"
#include "tower/op.hpp"

namespace tower {

/// log(softmax(x)) along dim, computed stably (x - logsumexp). As torch's, a row with a +inf
/// element is all NaN (+inf - +inf, and the other elements' -inf with it).
template <operand X> auto log_softmax(const X& x, std::int64_t dim = -1) {
  auto lse = logsumexp(x, dim, true);
  return x - where(eq(lse, std::numeric_limits<double>::infinity()), std::numeric_limits<double>::quiet_NaN(), lse);
}

/// exp(x) / sum(exp(x)) along dim.
template <operand X> auto softmax(const X& x, std::int64_t dim = -1) { return exp(log_softmax(x, dim)); }

/// mean((a - b)²).
template <operand A, operand B> auto mse_loss(const A& a, const B& b) { return mean(square(a - b)); }

/// Cross entropy of logits [C] or [N, C] (classes in the last dim), averaged over examples.
/// `target` holds class indices (integers, shape [] or [N]) or, with the logits' shape, class
/// probabilities.
template <operand X, operand Y> auto cross_entropy(const X& logits, const Y& target) {
  const std::int64_t r = rank(logits);
  if (r < 1 || r > 2) throw error("cross_entropy: expected logits [C] or [N, C], got shape " + detail::shape_str(shape(logits)));
  auto lp = log_softmax(logits, -1);
  auto probabilities = [&] { return -mean(sum(lp * target, -1)); };
  auto indices = [&] { return -mean(gather(lp, -1, unsqueeze(target, -1))); };
  using R = detail::branch_result_t<decltype(probabilities()), decltype(indices())>;
  if (rank(target) == r) {
    if (shape(target) != shape(logits))
      throw error("cross_entropy: probability targets of shape " + detail::shape_str(shape(target)) + " must match logits " +
                  detail::shape_str(shape(logits)));
    return detail::as_branch<R>(probabilities());
  }
  if (rank(target) != r - 1 || (r == 2 && shape(target)[0] != shape(logits)[0]))
    throw error("cross_entropy: class-index targets of shape " + detail::shape_str(shape(target)) + " do not fit logits " +
                detail::shape_str(shape(logits)));
  return detail::as_branch<R>(indices());
}

/// mean(-y log σ(x) - (1 - y) log(1 - σ(x))), computed stably as mean(softplus(x) - x y).
template <operand X, operand Y> auto binary_cross_entropy_with_logits(const X& x, const Y& y) {
  if (shape(x) != shape(y))
    throw error("binary_cross_entropy_with_logits: shapes " + detail::shape_str(shape(x)) + " and " + detail::shape_str(shape(y)) +
                " differ");
  return mean(softplus(x) - x * y);
}

}  // namespace tower
