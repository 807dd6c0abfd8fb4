// vmap(grad(f)) of the 10-op chain at batch size 1: tw::vmap(tw::grad(chain))(x), x of shape [1].
#include <tower/tower.hpp>

#include "bench/user_tu/chain.hpp"
#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

int main() {
  const int n = 1024;
  std::vector<double> xs = user_tu::uniform(n, -1, 1, 5), g(n), t(n);
  std::vector<tw::tensor<double>> X;
  for (double x : xs) X.push_back(tw::tensor<double>({1}, {x}));
  auto hand = [&] { for (int i = 0; i < n; ++i) g[i] = dchain_hand(xs[i]); };
  auto tower = [&] { for (int i = 0; i < n; ++i) t[i] = tw::vmap(tw::grad(chain))(X[i]).data()[0]; };
  hand();
  tower();
  user_tu::check("vmap_grad_batch1", t.data(), g.data(), g.size(), 1e-12);
  user_tu::compare("vmap_grad_batch1", hand, tower, 4);
}
