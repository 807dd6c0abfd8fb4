// Per-example gradients of a 32-64-1 tanh MLP's squared error, B = 1024, as users write them:
// tw::vmap(tw::grad(loss, tw::argnums<0, 1>), tw::in_dims(tw::none, tw::none, 0, 0))(W1, w2, X, Y).
// The hand-written code is the plain per-example loop; tower batches the examples into GEMMs.
// With -DRUNTIME through a type-erased loss (the runtime path).
#include <tower/tower.hpp>

#include <functional>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto loss = [](auto W1, auto w2, auto x, auto y) {
  auto r = tw::dot(w2, tw::tanh(tw::mv(W1, x))) - y;
  return 0.5 * r * r;
};

int main() {
  constexpr long n = 32, h = 64, B = 1024;
  std::vector<double> w1 = user_tu::uniform(h * n, -0.2, 0.2, 1), w2 = user_tu::uniform(h, -0.2, 0.2, 2),
                      x = user_tu::uniform(B * n, -1, 1, 3), y = user_tu::uniform(B, -1, 1, 4);
  std::vector<double> g1(B * h * n), g2(B * h), a(h);
  tw::tensor<double> W1({h, n}, w1), W2({h}, w2), X({B, n}, x), Y({B}, y), G1, G2;
  auto hand = [&] {
    for (long b = 0; b < B; ++b) {
      const double* xb = x.data() + b * n;
      double out = 0;
      for (long i = 0; i < h; ++i) {
        double s = 0;
        for (long j = 0; j < n; ++j) s += w1[i * n + j] * xb[j];
        a[i] = std::tanh(s);
        out += w2[i] * a[i];
      }
      const double r = out - y[b];
      double* gb1 = g1.data() + b * h * n;
      double* gb2 = g2.data() + b * h;
      for (long i = 0; i < h; ++i) {
        gb2[i] = r * a[i];
        const double dh = r * w2[i] * (1 - a[i] * a[i]);
        for (long j = 0; j < n; ++j) gb1[i * n + j] = dh * xb[j];
      }
    }
  };
#ifdef RUNTIME
  using V = tw::dyn::value;
  std::function<V(V, V, V, V)> erased = [](V W1, V w2, V x, V y) { return loss(W1, w2, x, y); };
  auto tower = [&] {
    const auto [g1r, g2r] =
        tw::vmap(tw::grad(erased, tw::argnums<0, 1>), tw::in_dims(tw::none, tw::none, 0, 0))(W1, W2, X, Y);
    G1 = g1r.to_tensor();
    G2 = g2r.to_tensor();
  };
  const char* name = "mlp_32_64_1_runtime";
#else
  auto tower = [&] {
    std::tie(G1, G2) = tw::vmap(tw::grad(loss, tw::argnums<0, 1>), tw::in_dims(tw::none, tw::none, 0, 0))(W1, W2, X, Y);
  };
  const char* name = "mlp_32_64_1";
#endif
  hand();
  tower();
  user_tu::check("mlp dW1", G1.data(), g1.data(), g1.size());
  user_tu::check("mlp dw2", G2.data(), g2.data(), g2.size());
  user_tu::compare(name, hand, tower);
}
