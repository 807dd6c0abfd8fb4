#pragma once
// Composites users of torch.nn.functional expect: softmax, log_softmax, mse_loss,
// cross_entropy, binary_cross_entropy_with_logits. Each is a composition of primitives, so every
// transform's rule follows from theirs.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>

#include "dsl/layout.hpp"
#include "dsl/pointwise.hpp"
#include "dsl/reduce.hpp"
#include "tower/static/op.hpp"

namespace tower {

/// log(softmax(x)) along dim, computed stably (x - logsumexp). As torch's, a row with a +inf
/// element is all NaN (+inf - +inf, and the other elements' -inf with it). Over a dim of size 0
/// the result is empty, as torch's (logsumexp would take the maximum of nothing).
/// \code
/// auto x = tw::tensor<double>{1, 2, 3};
/// double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
/// if (std::abs(tw::log_softmax(x)(0) - (1 - lse)) > 1e-15) throw std::runtime_error("log_softmax");
/// \endcode
template <operand X>
auto log_softmax(const X& x, std::int64_t dim = -1) {
  auto stable = [&] {
    auto lse = logsumexp(x, dim, true);
    return x - where(eq(lse, std::numeric_limits<double>::infinity()), std::numeric_limits<double>::quiet_NaN(), lse);
  };
  if constexpr (is_scalar_type_v<X>) {
    return stable();
  } else {
    auto empty = [&] { return x - sum(x, dim, true); };  // x itself, as the stable branch's type
    using R = detail::branch_result_t<decltype(stable()), decltype(empty())>;
    const shape_t s = shape(x);
    if (!s.empty() &&
        s[static_cast<std::size_t>(kernels::check_dim("log_softmax", dim, static_cast<std::int64_t>(s.size()), s))] ==
            0) {
      // Under vmap(jacfwd(f)) the stable branch's tangent also varies per example (it has
      // the vmap's level), the empty one's does not: lift it to R.
      if constexpr (is_dual_unsupported_v<R> || std::is_same_v<R, decltype(empty())>)
        return detail::as_branch<R>(empty());
      else return detail::convert_adjoint<R>(empty());
    }
    return detail::as_branch<R>(stable());
  }
}

/// exp(x) / sum(exp(x)) along dim.
/// \code
/// auto p = tw::softmax(tw::tensor<double>{{0, std::log(3.0)}}, 1);   // [[1/4, 3/4]]
/// if (std::abs(p(0, 0) - 0.25) > 1e-15 || std::abs(p(0, 1) - 0.75) > 1e-15) throw std::runtime_error("softmax");
/// \endcode
template <operand X>
auto softmax(const X& x, std::int64_t dim = -1) {
  return exp(log_softmax(x, dim));
}

/// mean((a - b)²).
/// \code
/// if (tw::mse_loss(tw::tensor<double>{1, 2}, tw::tensor<double>{1, 4}).item() != 2) throw std::runtime_error("mse_loss");
/// \endcode
template <operand A, operand B>
auto mse_loss(const A& a, const B& b) {
  return mean(square(a - b));
}

namespace detail {
/// Class indices of cross_entropy that are plain values (a tensor or number, or a runtime value no
/// transform wraps) are checked here, to name the op; wrapped ones raise in gather.
template <class Y>
void check_class_indices(const Y& target, std::int64_t classes) {
  auto check = [&](double c) {
    if (!(c >= 0 && c < static_cast<double>(classes) && c == std::floor(c))) {
      std::ostringstream os;
      os << "cross_entropy: class index " << c << " is not an integer in [0, " << classes << ")";
      throw error(os.str());
    }
  };
  if constexpr (std::is_arithmetic_v<Y>) {
    check(static_cast<double>(target));
  } else if constexpr (is_tensor_v<Y> || is_dyn_v<Y>) {
    if constexpr (is_dyn_v<Y>)
      if (!target.is_plain()) return;
    std::optional<tensor<double>> scratch;
    const auto& t = [&]() -> const auto& {
      if constexpr (is_dyn_v<Y>) return target.plain_ref(scratch);
      else return target;
    }();
    for (std::int64_t i = 0; i < t.numel(); ++i) check(static_cast<double>(t.data()[i]));
  }
}
}  // namespace detail

/// Cross entropy of logits [C] or [N, C] (classes in the last dim), averaged over examples.
/// `target` holds class indices (integers, shape [] or [N]) or, with the logits' shape, class
/// probabilities.
/// \code
/// auto logits = tw::tensor<double>{{0, std::log(3.0)}, {0, 0}};
/// double ce = tw::cross_entropy(logits, tw::tensor<double>{1, 0}).item();   // -(log 3/4 + log 1/2) / 2
/// if (std::abs(ce + (std::log(0.75) + std::log(0.5)) / 2) > 1e-15) throw std::runtime_error("cross_entropy");
/// \endcode
template <operand X, operand Y>
auto cross_entropy(const X& logits, const Y& target) {
  const std::int64_t r = rank(logits);
  if (r < 1 || r > 2)
    throw error("cross_entropy: expected logits [C] or [N, C], got shape " + detail::shape_str(shape(logits)));
  auto lp = log_softmax(logits, -1);
  auto probabilities = [&] { return -mean(sum(lp * target, -1)); };
  auto indices = [&] { return -mean(gather(lp, -1, unsqueeze(target, -1))); };
  using R = detail::branch_result_t<decltype(probabilities()), decltype(indices())>;
  if (rank(target) == r) {
    if (shape(target) != shape(logits))
      throw error("cross_entropy: probability targets of shape " + detail::shape_str(shape(target)) +
                  " must match logits " + detail::shape_str(shape(logits)));
    return detail::as_branch<R>(probabilities());
  }
  if (rank(target) != r - 1 || (r == 2 && shape(target)[0] != shape(logits)[0]))
    throw error("cross_entropy: class-index targets of shape " + detail::shape_str(shape(target)) +
                " do not fit logits " + detail::shape_str(shape(logits)));
  detail::check_class_indices(target, shape(logits).back());
  return detail::as_branch<R>(indices());
}

/// mean(-y log σ(x) - (1 - y) log(1 - σ(x))), computed stably as mean(softplus(x) - x y).
/// \code
/// double b = tw::binary_cross_entropy_with_logits(tw::tensor<double>{0.0}, tw::tensor<double>{1.0}).item();
/// if (std::abs(b - std::log(2.0)) > 1e-15) throw std::runtime_error("binary_cross_entropy_with_logits");   // -log σ(0)
/// \endcode
template <operand X, operand Y>
auto binary_cross_entropy_with_logits(const X& x, const Y& y) {
  if (shape(x) != shape(y))
    throw error("binary_cross_entropy_with_logits: shapes " + detail::shape_str(shape(x)) + " and " +
                detail::shape_str(shape(y)) + " differ");
  return mean(softplus(x) - x * y);
}

}  // namespace tower
