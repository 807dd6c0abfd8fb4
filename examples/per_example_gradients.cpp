// Per-example gradients with vmap(grad(f)): the README's main job.
//
// Logistic regression, loss(w; x, y) = softplus(-y <w, x>). vmap(grad(loss)) gives one gradient
// per example in one call, with w shared (in_dims none) and x, y batched along dim 0. The same
// transform applied to a type-erased function runs on the runtime path; both agree with a plain
// loop of grad over the examples.
#include <cmath>
#include <cstdio>
#include <functional>

#include <tower/tower.hpp>

namespace tw = tower;

int main() {
  const std::int64_t B = 8, d = 4;
  tw::tensor<double> w({d}, {0.5, -0.25, 1.0, 0.1});
  std::vector<double> xs, ys;
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t j = 0; j < d; ++j) xs.push_back(std::sin(1.0 + b * d + j));
    ys.push_back(b % 2 ? 1.0 : -1.0);
  }
  tw::tensor<double> X({B, d}, xs), Y({B}, ys);

  auto loss = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };

  // Static path: the interpreter stack is resolved at compile time.
  tw::tensor<double> G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(w, X, Y);

  // Runtime path: the same transforms on a type-erased function.
  using tw::dyn::value;
  std::function<value(value, value, value)> erased = [&](value w, value x, value y) { return loss(w, x, y); };
  tw::tensor<double> Gr = tw::vmap(tw::grad(erased), tw::in_dims(tw::none, 0, 0))(w, X, Y).to_tensor();

  std::printf("per-example gradients of the logistic loss, B = %lld, d = %lld\n", static_cast<long long>(B),
              static_cast<long long>(d));
  double max_diff = 0;
  for (std::int64_t b = 0; b < B; ++b) {
    tw::tensor<double> xb({d}, std::vector<double>(X.data() + b * d, X.data() + (b + 1) * d));
    tw::tensor<double> gb = tw::grad(loss)(w, xb, Y(b));
    std::printf("  example %lld:", static_cast<long long>(b));
    for (std::int64_t j = 0; j < d; ++j) {
      std::printf(" % .6f", G(b, j));
      max_diff = std::max({max_diff, std::abs(G(b, j) - gb(j)), std::abs(Gr(b, j) - G(b, j))});
    }
    std::printf("\n");
  }
  std::printf("max |vmap(grad) - loop of grad|, static and runtime paths: %.3g\n", max_diff);
  return max_diff < 1e-12 ? 0 : 1;
}
