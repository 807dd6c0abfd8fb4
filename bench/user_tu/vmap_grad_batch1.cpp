// vmap(grad(f)) of the 10-op chain at batch size 1: tw::vmap(tw::grad(chain))(x), x of shape [1].
// -DRUNTIME the same through a type-erased chain (the runtime path); it also prints the time per
// op of the chain (10 ops, each seen by vmap and grad, and their backward).
#include <tower/tower.hpp>

#include "bench/user_tu/chain.hpp"
#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

int main() {
  const int n = 1024;
  std::vector<double> xs = user_tu::uniform(n, -1, 1, 5), g(n), t(n);
  auto hand = [&] {
    for (int i = 0; i < n; ++i) g[i] = dchain_hand(xs[i]);
  };
#ifdef RUNTIME
  std::vector<tw::dyn::value> X;
  for (double x : xs) X.emplace_back(tw::tensor<double>({1}, {x}));
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value x) { return chain(x); };
  auto tower = [&] {
    for (int i = 0; i < n; ++i) t[i] = tw::vmap(tw::grad(erased))(X[i]).to_tensor().data()[0];
  };
  const char* name = "vmap_grad_batch1_runtime";
#else
  std::vector<tw::tensor<double> > X;
  for (double x : xs) X.push_back(tw::tensor<double>({1}, {x}));
  auto tower = [&] {
    for (int i = 0; i < n; ++i) t[i] = tw::vmap(tw::grad(chain))(X[i]).data()[0];
  };
  const char* name = "vmap_grad_batch1";
#endif
  hand();
  tower();
  user_tu::check(name, t.data(), g.data(), g.size(), 1e-12);
#ifdef RUNTIME
  std::vector<double> per_op;
  for (int k = 0; k < 7; ++k) per_op.push_back(user_tu::sample(tower, 1) / n / 10 * 1e9);
  std::printf("%s: %.0f ns per op of the chain\n", name, user_tu::median(per_op));
#endif
  user_tu::compare(name, hand, tower, 4);
}
