// grad of a 10-op chain on a double: tw::grad(chain)(x).
#include <tower/tower.hpp>

#include "bench/user_tu/chain.hpp"
#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

int main() {
  const int n = 4096;
  std::vector<double> xs = user_tu::uniform(n, -1, 1, 5), g(n), t(n);
  auto hand = [&] { for (int i = 0; i < n; ++i) g[i] = dchain_hand(xs[i]); };
  auto tower = [&] { for (int i = 0; i < n; ++i) t[i] = tw::grad(chain)(xs[i]); };
  hand();
  tower();
  user_tu::check("chain_grad", t.data(), g.data(), g.size(), 1e-12);
  user_tu::compare("grad_chain10_double", hand, tower, 4);
}
