// grad of a 10-op chain on a double: tw::grad(chain)(x); with -DRUNTIME through a type-erased
// chain (the runtime path).
#include <tower/tower.hpp>

#include <functional>

#include "bench/user_tu/chain.hpp"
#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

int main() {
  const int n = 4096;
  std::vector<double> xs = user_tu::uniform(n, -1, 1, 5), g(n), t(n);
  auto hand = [&] {
    for (int i = 0; i < n; ++i) g[i] = dchain_hand(xs[i]);
  };
#ifdef RUNTIME
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value x) { return chain(x); };
  auto tower = [&] {
    for (int i = 0; i < n; ++i) t[i] = tw::grad(erased)(xs[i]).item();
  };
  const char* name = "grad_chain10_double_runtime";
#else
  auto tower = [&] {
    for (int i = 0; i < n; ++i) t[i] = tw::grad(chain)(xs[i]);
  };
  const char* name = "grad_chain10_double";
#endif
  hand();
  tower();
  user_tu::check("chain_grad", t.data(), g.data(), g.size(), 1e-12);
  user_tu::compare(name, hand, tower, 4);
}
