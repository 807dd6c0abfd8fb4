// A project that uses tower from outside its repository (CMake, pkg-config or Bazel; see
// README.md here). Per-example gradients of a logistic loss with vmap(grad), checked against the
// analytic gradient -y x sigmoid(-y <w, x>); the exit code says whether they agree.
#include <cmath>
#include <cstdio>
#include <vector>

#include <tower/tower.hpp>

namespace tw = tower;

int main() {
  const std::int64_t B = 16, d = 3;
  tw::tensor<double> w({d}, {0.5, -1.0, 0.25});
  std::vector<double> xs, ys;
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t j = 0; j < d; ++j) xs.push_back(std::cos(0.7 * static_cast<double>(b * d + j)));
    ys.push_back(b % 3 == 0 ? 1.0 : -1.0);
  }
  const tw::tensor<double> X({B, d}, xs), Y({B}, ys);

  auto loss = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };
  const tw::tensor<double> G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(w, X, Y);

  double max_err = 0;
  for (std::int64_t b = 0; b < B; ++b) {
    double z = 0;
    for (std::int64_t j = 0; j < d; ++j) z += w(j) * X(b, j);
    const double s = 1.0 / (1.0 + std::exp(Y(b) * z));  // sigmoid(-y z)
    for (std::int64_t j = 0; j < d; ++j) max_err = std::max(max_err, std::abs(G(b, j) - (-Y(b) * X(b, j) * s)));
  }
  std::printf("tower %d.%d.%d: per-example gradients [%lld, %lld], max |vmap(grad) - analytic| = %.3g\n",
              TOWER_VERSION_MAJOR, TOWER_VERSION_MINOR, TOWER_VERSION_PATCH, static_cast<long long>(B),
              static_cast<long long>(d), max_err);
  return max_err < 1e-12 ? 0 : 1;
}
