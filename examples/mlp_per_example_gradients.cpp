// Per-example gradients of a small MLP whose parameters live in a struct (a pytree).
//
// The parameter struct is a template over its leaf type and declares its members with
// BOOST_HANA_DEFINE_STRUCT, so tower can rebuild it with wrapped leaves inside grad and hand
// back gradients in the same struct: mlp<tensor<double>> in, mlp<tensor<double>> out, with a
// leading batch dimension under vmap.
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
  const std::int64_t d = 3, h = 8, B = 4;
  auto fill = [](tw::shape_t s, double phase) {
    std::vector<double> v(static_cast<std::size_t>(tw::numel_of(s)));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * std::sin(phase + 0.7 * static_cast<double>(i));
    return tw::tensor<double>(s, v);
  };
  const mlp<tw::tensor<double>> params{fill({h, d}, 0.1), fill({h}, 0.2), fill({h}, 0.3), tw::tensor<double>(0.05)};
  const tw::tensor<double> X = fill({B, d}, 1.0), Y = fill({B}, 2.0);

  // Squared error of a d-h-1 tanh network on one example.
  auto loss = [](const auto& p, const auto& x, const auto& y) {
    auto hidden = tw::tanh(tw::sum(p.W1 * x, 1) + p.b1);
    auto r = tw::sum(p.w2 * hidden) + p.b2 - y;
    return r * r;
  };

  const auto G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(params, X, Y);
  std::printf("per-example gradient shapes: W1 [%lld, %lld, %lld], b2 [%lld]\n", (long long)G.W1.shape()[0],
              (long long)G.W1.shape()[1], (long long)G.W1.shape()[2], (long long)G.b2.shape()[0]);
  double worst = 0;
  for (std::int64_t b = 0; b < B; ++b) {
    tw::tensor<double> xb({d}, std::vector<double>(X.data() + b * d, X.data() + (b + 1) * d));
    const auto g = tw::grad(loss)(params, xb, Y(b));
    for (std::int64_t i = 0; i < g.W1.numel(); ++i)
      worst = std::max(worst, std::abs(g.W1.data()[i] - G.W1.data()[b * h * d + i]));
    std::printf("example %lld: |dL/db2| = %.6f\n", (long long)b, std::abs(G.b2(b)));
  }
  std::printf("max |vmap(grad) - loop of grad| over W1: %.3g\n", worst);
  return worst < 1e-12 ? 0 : 1;
}
