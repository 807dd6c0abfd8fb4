// Lennard-Jones forces with the coordinates as three [B] tensors, B = 2^20:
// tw::vmap(tw::grad(energy, tw::argnums<0, 1, 2>))(X, Y, Z).
#include <tower/tower.hpp>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto energy = [](auto x, auto y, auto z) {
  auto s = 1.0 / (x * x + y * y + z * z);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

int main() {
  const long B = 1 << 20;
  std::vector<double> x = user_tu::uniform(B, 0.7, 1.7, 1), y = user_tu::uniform(B, 0.7, 1.7, 2),
                      z = user_tu::uniform(B, 0.7, 1.7, 3), g(3 * B), t(3 * B);
  tw::tensor<double> X({B}, x), Y({B}, y), Z({B}, z);
  auto hand = [&] {
    for (long b = 0; b < B; ++b) {
      const double s = 1.0 / (x[b] * x[b] + y[b] * y[b] + z[b] * z[b]);
      const double s2 = s * s, s4 = s2 * s2, c = 24.0 * s4 - 48.0 * s4 * s2 * s;
      g[b] = c * x[b];
      g[B + b] = c * y[b];
      g[2 * B + b] = c * z[b];
    }
  };
  std::tuple<tw::tensor<double>, tw::tensor<double>, tw::tensor<double>> F;
  auto tower = [&] { F = tw::vmap(tw::grad(energy, tw::argnums<0, 1, 2>))(X, Y, Z); };
  hand();
  tower();
  std::copy_n(std::get<0>(F).data(), B, t.begin());
  std::copy_n(std::get<1>(F).data(), B, t.begin() + B);
  std::copy_n(std::get<2>(F).data(), B, t.begin() + 2 * B);
  user_tu::check("lennard_jones_xyz", t.data(), g.data(), g.size());
  user_tu::compare("lennard_jones_xyz", hand, tower);
}
