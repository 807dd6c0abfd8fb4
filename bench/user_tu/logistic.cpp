// Per-example logistic-regression gradients, d = LOGISTIC_D (16 by default; the runner also
// builds 256): tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(w, X, Y); with -DRUNTIME the
// same through a type-erased loss (the runtime path).
#include <tower/tower.hpp>

#include <functional>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

#ifndef LOGISTIC_D
#define LOGISTIC_D 16
#endif

auto loss = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };

int main() {
  const long d = LOGISTIC_D, B = (1 << 18) / d;
  std::vector<double> w = user_tu::uniform(d, -1, 1, 1), x = user_tu::uniform(B * d, -1, 1, 2), y(B), g(B * d);
  for (long b = 0; b < B; ++b) y[b] = (b % 3) ? 1.0 : -1.0;
  tw::tensor<double> W({d}, w), X({B, d}, x), Y({B}, y), G;
  auto hand = [&] {
    for (long b = 0; b < B; ++b) {
      const double* xb = x.data() + b * d;
      double z = 0;
      for (long j = 0; j < d; ++j) z += w[j] * xb[j];
      const double s = -y[b] / (1.0 + std::exp(y[b] * z));
      double* gb = g.data() + b * d;
      for (long j = 0; j < d; ++j) gb[j] = s * xb[j];
    }
  };
#ifdef RUNTIME
  using V = tw::dyn::value;
  std::function<V(V, V, V)> erased = [](V w, V x, V y) { return loss(w, x, y); };
  auto tower = [&] { G = tw::vmap(tw::grad(erased), tw::in_dims(tw::none, 0, 0))(W, X, Y).to_tensor(); };
  const char* suffix = "_runtime";
#else
  auto tower = [&] { G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(W, X, Y); };
  const char* suffix = "";
#endif
  hand();
  tower();
  user_tu::check("logistic", G.data(), g.data(), g.size());
  char name[48];
  std::snprintf(name, sizeof name, "logistic_d%ld%s", d, suffix);
  user_tu::compare(name, hand, tower);
}
