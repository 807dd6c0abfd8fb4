// Lennard-Jones forces over B = 2^20 displacements: tw::vmap(tw::grad(energy))(R), R [B, 3]; with
// -DRUNTIME the same through a type-erased energy (the runtime path).
#include <tower/tower.hpp>

#include <functional>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

int main() {
  const long B = 1 << 20;
  std::vector<double> v = user_tu::uniform(3 * B, 0.7, 1.7, 1), g(3 * B);
  tw::tensor<double> R({B, 3}, v), G;
  auto hand = [&] {
    for (long b = 0; b < B; ++b) {
      const double x = v[3 * b], y = v[3 * b + 1], z = v[3 * b + 2], s = 1.0 / (x * x + y * y + z * z);
      const double s2 = s * s, s4 = s2 * s2, c = 24.0 * s4 - 48.0 * s4 * s2 * s;
      g[3 * b] = c * x;
      g[3 * b + 1] = c * y;
      g[3 * b + 2] = c * z;
    }
  };
#ifdef RUNTIME
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value r) { return energy(r); };
  auto tower = [&] { G = tw::vmap(tw::grad(erased))(R).to_tensor(); };
  const char* name = "lennard_jones_runtime";
#else
  auto tower = [&] { G = tw::vmap(tw::grad(energy))(R); };
  const char* name = "lennard_jones";
#endif
  hand();
  tower();
  user_tu::check(name, G.data(), g.data(), g.size());
  user_tu::compare(name, hand, tower);
}
