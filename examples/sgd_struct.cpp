// A training loop over a parameter struct: SGD with momentum on a small tanh network.
//
// The parameters are a Boost.Hana struct, a template over its leaf type (docs/pytrees.md);
// tw::grad returns the gradient as the same struct, tw::tree_map makes the momentum buffers and
// tw::tree_zip updates parameters and buffers leaf by leaf. The program checks the gradient once
// against central finite differences, and that training lowers the loss.
#include <boost/hana/define_struct.hpp>
#include <cmath>
#include <cstdio>

#include <tower/tower.hpp>

namespace tw = tower;

template <class T>
struct mlp {
  BOOST_HANA_DEFINE_STRUCT(mlp, (T, W1), (T, b1), (T, w2), (T, b2));
};

int main() {
  const std::int64_t B = 64, d = 2, h = 16;
  // Data: y = sin(2 x0) + 0.5 x1 on random points.
  const tw::tensor<double> X = tw::randn<double>({B, d}, 1);
  tw::tensor<double> Y = tw::zeros<double>({B});
  for (std::int64_t i = 0; i < B; ++i) Y.data()[i] = std::sin(2 * X(i, 0)) + 0.5 * X(i, 1);

  mlp<tw::tensor<double>> params{0.5 * tw::randn<double>({h, d}, 2), tw::zeros<double>({h}),
                                 0.5 * tw::randn<double>({h}, 3), tw::tensor<double>(0.0)};

  // Mean squared error of the d-h-1 network over the batch.
  auto loss = [](const auto& p, const auto& x, const auto& y) {
    auto hidden = tw::tanh(tw::matmul(x, tw::transpose(p.W1, 0, 1)) + p.b1);  // [B, h]
    return tw::mean(tw::square(tw::matmul(hidden, p.w2) + p.b2 - y));
  };
  auto value = [&](const mlp<tw::tensor<double>>& p) { return loss(p, X, Y).item(); };

  // The gradient, a struct like params, against central differences in every parameter.
  const mlp<tw::tensor<double>> g = tw::grad(loss)(params, X, Y);
  double fd_err = 0;
  using leaf = tw::tensor<double> mlp<tw::tensor<double>>::*;
  for (leaf member : {&mlp<tw::tensor<double>>::W1, &mlp<tw::tensor<double>>::b1, &mlp<tw::tensor<double>>::w2,
                      &mlp<tw::tensor<double>>::b2})
    for (std::int64_t i = 0; i < (params.*member).numel(); ++i) {
      mlp<tw::tensor<double>> pp = params, pm = params;
      (pp.*member).data()[i] += 1e-6;
      (pm.*member).data()[i] -= 1e-6;
      fd_err = std::max(fd_err, std::abs((g.*member).data()[i] - (value(pp) - value(pm)) / 2e-6));
    }
  std::printf("max |grad - finite differences| over all %lld parameters: %.2g\n", (long long)(h * d + h + h + 1),
              fd_err);

  // SGD with momentum: v <- 0.9 v + g, p <- p - lr v, leaf by leaf.
  const double lr = 0.05, first = value(params);
  auto velocity = tw::tree_map([](const tw::tensor<double>& w) { return tw::zeros_like(w); }, params);
  for (int step = 1; step <= 300; ++step) {
    const auto grads = tw::grad(loss)(params, X, Y);
    velocity = tw::tree_zip([](const auto& v, const auto& gw) { return 0.9 * v + gw; }, velocity, grads);
    params = tw::tree_zip([lr](const auto& w, const auto& v) { return w - lr * v; }, params, velocity);
    if (step % 50 == 0) std::printf("step %3d: loss %.5f\n", step, value(params));
  }
  const double last = value(params);
  std::printf("loss %.5f -> %.5f\n", first, last);
  return fd_err < 1e-6 && last < 0.1 * first ? 0 : 1;
}
