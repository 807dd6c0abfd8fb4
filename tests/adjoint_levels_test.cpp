// Unbatched inputs of a static grad under vmap stay unbatched: only their adjoints carry the
// vmap's level (grad_value<V, L, A>). The forward runs once on the shared value and the numbers
// equal a loop over examples, also for nested grads and Hessians with a shared weight.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;

namespace {
/// True when a traced value's primal carries no level below its own grad (it was not copied
/// to an enclosing vmap's batch), and its adjoint does carry one.
template <class W>
bool primal_unbatched_adjoint_batched() {
  if constexpr (tw::is_static_wrapper_v<W> && W::key == tw::transform_type::grad)
    return tw::level_of<typename W::primal_type>() == 0 && tw::level_of<typename W::adjoint_type>() > 0;
  else return false;
}
}  // namespace

TEST_CASE("vmap(grad(f)) with an unbatched weight: the weight is not copied per example") {
  const tensor<double> w = sample({5}, -1, 1, 3), X = sample({6, 5}, -1, 1, 4);
  bool shared = false;
  auto loss = [&shared](auto w_, auto x) {
    shared = primal_unbatched_adjoint_batched<decltype(w_)>();
    return tw::sum(tw::tanh(w_ * x)) + tw::sum(w_ * w_);
  };
  const tensor<double> G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0))(w, X);
  REQUIRE(shared);
  for (std::int64_t b = 0; b < 6; ++b) {
    const tensor<double> x = row(X, b), t = tw::tanh(w * x);
    require_close(row(G, b), (1.0 - t * t) * x + 2.0 * w, 1e-12);
  }

  // Both arguments: the weight's gradient is per example, the input's too.
  const auto [Gw, Gx] = tw::vmap(tw::grad(loss, tw::argnums<0, 1>), tw::in_dims(tw::none, 0))(w, X);
  require_close(Gw, G, 0);
  for (std::int64_t b = 0; b < 6; ++b) {
    const tensor<double> x = row(X, b), t = tw::tanh(w * x);
    require_close(row(Gx, b), (1.0 - t * t) * w, 1e-12);
  }

  // A loss that ignores the example gives the same gradient in every row (lifted, not dropped).
  auto reg = [](auto w_, auto x) { return tw::sum(w_ * w_ * w_) + 0.0 * tw::sum(x); };
  const tensor<double> R = tw::vmap(tw::grad(reg), tw::in_dims(tw::none, 0))(w, X);
  for (std::int64_t b = 0; b < 6; ++b) require_close(row(R, b), 3.0 * w * w, 1e-12);
}

TEST_CASE("vmap(grad(grad-of-f)) and vmap(hessian) with an unbatched weight") {
  const tensor<double> w = sample({4}, -1, 1, 5), X = sample({3, 4}, -1, 1, 6);
  // inner gradient w.r.t. w: 3 w^2 + cos(w) x; its 3 w^2 part does not depend on the example.
  auto inner = [](auto w_, auto x) { return tw::sum(w_ * w_ * w_) + tw::sum(tw::sin(w_) * x); };
  auto outer = [&](auto w_, auto x) { return tw::sum(tw::grad(inner)(w_, x) * x); };
  const tensor<double> G = tw::vmap(tw::grad(outer), tw::in_dims(tw::none, 0))(w, X);
  // d/dw sum((3 w^2 + cos(w) x) x) = 6 w x - sin(w) x^2
  for (std::int64_t b = 0; b < 3; ++b) {
    const tensor<double> x = row(X, b);
    require_close(row(G, b), 6.0 * w * x - tw::sin(w) * x * x, 1e-12);
  }
  // The runtime path gives the same numbers.
  using tw::dyn::value;
  std::function<value(value, value)> inner_rt = [](value w_, value x) {
    return tw::sum(w_ * w_ * w_) + tw::sum(tw::sin(w_) * x);
  };
  std::function<value(value, value)> outer_rt = [&](value w_, value x) {
    return tw::sum(tw::grad(inner_rt)(w_, x) * x);
  };
  require_close(tw::vmap(tw::grad(outer_rt), tw::in_dims(tw::none, 0))(w, X).to_tensor(), G, 1e-14);

  // Per-example Hessian of a function of a shared weight and an example: hessian = jacfwd(jacrev).
  auto f = [](auto w_, auto x) { return tw::sum(tw::sin(w_ * x) * w_); };
  const tensor<double> H = tw::vmap(tw::hessian(f), tw::in_dims(tw::none, 0))(w, X);
  for (std::int64_t b = 0; b < 3; ++b) {
    const tensor<double> x = row(X, b);
    // d2/dw2 of sin(w x) w (diagonal): 2 x cos(w x) - x^2 w sin(w x)
    const tensor<double> d = 2.0 * x * tw::cos(w * x) - x * x * w * tw::sin(w * x);
    const tensor<double> Hb = row(H, b);
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t j = 0; j < 4; ++j) require_close(Hb.data()[i * 4 + j], i == j ? d.data()[i] : 0.0, 1e-12);
  }
}

TEST_CASE("jacrev runs f's forward on the unbatched input; only the cotangents are batched") {
  const tensor<double> A = sample({5, 4}, -1, 1, 7), x = sample({4}, -1, 1, 8);
  bool shared = false;
  auto f = [&](auto x_) {
    if constexpr (tw::is_static_wrapper_v<decltype(x_)>) shared = primal_unbatched_adjoint_batched<decltype(x_)>();
    return tw::tanh(tw::matmul(A, x_));
  };
  const tensor<double> J = tw::jacrev(f)(x);
  REQUIRE(shared);
  const tensor<double> y = tw::tanh(tw::matmul(A, x));
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      require_close(J.data()[i * 4 + j], (1.0 - y.data()[i] * y.data()[i]) * A.data()[i * 4 + j], 1e-12);
  require_close(J, tw::jacfwd(f)(x), 1e-12);
}
