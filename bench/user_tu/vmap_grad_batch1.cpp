// vmap(grad(f)) of the 10-op chain at batch size 1: tw::vmap(tw::grad(f))(x), x of shape [1].
#include <tower/tower.hpp>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto f = [](auto x) {
  auto a = tw::sin(x) * x;
  auto b = tw::exp((a + 1.0) * 0.1);
  auto c = tw::cos(b - x);
  return tw::tanh(c * c) * x;
};

double df_hand(double x) {
  const double s = std::sin(x), a = s * x, b = std::exp((a + 1.0) * 0.1), c = std::cos(b - x), t = std::tanh(c * c);
  const double da = std::cos(x) * x + s, db = b * 0.1 * da, dc = -std::sin(b - x) * (db - 1.0);
  return (1.0 - t * t) * 2.0 * c * dc * x + t;
}

int main() {
  const int n = 1024;
  std::vector<double> xs = user_tu::uniform(n, -1, 1, 5), g(n), t(n);
  std::vector<tw::tensor<double>> X;
  for (double x : xs) X.push_back(tw::tensor<double>({1}, {x}));
  auto hand = [&] { for (int i = 0; i < n; ++i) g[i] = df_hand(xs[i]); };
  auto tower = [&] { for (int i = 0; i < n; ++i) t[i] = tw::vmap(tw::grad(f))(X[i]).data()[0]; };
  hand();
  tower();
  user_tu::check("vmap_grad_batch1", t.data(), g.data(), g.size(), 1e-12);
  user_tu::compare("vmap_grad_batch1", hand, tower, 4);
}
