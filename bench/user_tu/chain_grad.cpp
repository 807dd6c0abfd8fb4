// grad of a 10-op chain on a double: tw::grad(f)(x).
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
  const int n = 4096;
  std::vector<double> xs = user_tu::uniform(n, -1, 1, 5), g(n), t(n);
  auto hand = [&] { for (int i = 0; i < n; ++i) g[i] = df_hand(xs[i]); };
  auto tower = [&] { for (int i = 0; i < n; ++i) t[i] = tw::grad(f)(xs[i]); };
  hand();
  tower();
  user_tu::check("chain_grad", t.data(), g.data(), g.size(), 1e-12);
  user_tu::compare("grad_chain10_double", hand, tower, 4);
}
