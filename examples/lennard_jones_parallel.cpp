// Lennard-Jones forces over a large batch on every core: vmap(grad(energy), tw::parallel).
//
// E(r) = 4 (s^6 - s^3) with s = 1 / |r|^2 for each of B = 2^20 displacements r (the force is
// -dE/dr). The parallel vmap splits the batch into grains that oneTBB runs on its threads; the
// forces are the serial vmap's bit for bit, which this program checks (exit code 1 if not) on
// the static path and on the runtime path, printing both times (best of 5).
//
//   bazel run -c opt //examples:lennard_jones_parallel
//   g++ -std=c++20 -O2 -Iinclude -I. -I/usr/include/eigen3 examples/lennard_jones_parallel.cpp -ltbb
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include <tower/parallel.hpp>

namespace tw = tower;

namespace {

auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

/// Best wall time of 5 runs of f, in milliseconds, and f's last result.
template <class F>
auto best_of_5(F&& f, double& ms) {
  auto r = f();
  ms = 1e300;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    r = f();
    ms = std::min(ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return r;
}

bool same_bits(const tw::tensor<double>& a, const tw::tensor<double>& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(double)) == 0;
}

}  // namespace

int main() {
  const std::int64_t B = std::int64_t{1} << 20;
  // Displacements with 0.6 <= |coordinate| < 1.4, deterministic.
  std::vector<double> v(static_cast<std::size_t>(3 * B));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double u = std::fmod(0.5 + static_cast<double>(i) * 0.6180339887498949, 1.0);
    v[i] = (0.6 + 0.8 * u) * (i % 5 == 2 ? -1.0 : 1.0);
  }
  const tw::tensor<double> R({B, 3}, std::move(v));

  bool ok = true;
  double serial_ms = 0, parallel_ms = 0;

  // Static path (energy is a generic lambda).
  const auto serial = best_of_5([&] { return tw::vmap(tw::grad(energy))(R); }, serial_ms);
  const auto parallel = best_of_5([&] { return tw::vmap(tw::grad(energy), tw::parallel)(R); }, parallel_ms);
  ok = ok && same_bits(serial, parallel);
  std::printf("Lennard-Jones forces, B = %lld, static path:  serial %.2f ms, parallel %.2f ms (%.2fx), bits %s\n",
              static_cast<long long>(B), serial_ms, parallel_ms, serial_ms / parallel_ms,
              same_bits(serial, parallel) ? "equal" : "DIFFER");

  // Runtime path (energy type-erased).
  using tw::dyn::value;
  std::function<value(value)> erased = [](value r) { return energy(r); };
  const auto serial_r = best_of_5([&] { return tw::vmap(tw::grad(erased))(R).to_tensor(); }, serial_ms);
  const auto parallel_r =
      best_of_5([&] { return tw::vmap(tw::grad(erased), tw::parallel)(R).to_tensor(); }, parallel_ms);
  ok = ok && same_bits(serial_r, parallel_r);
  std::printf("Lennard-Jones forces, B = %lld, runtime path: serial %.2f ms, parallel %.2f ms (%.2fx), bits %s\n",
              static_cast<long long>(B), serial_ms, parallel_ms, serial_ms / parallel_ms,
              same_bits(serial_r, parallel_r) ? "equal" : "DIFFER");

  // And the forces are right: dE/dr = (24 s^4 - 48 s^7) r for the first examples.
  for (std::int64_t b = 0; b < 1000; ++b) {
    const double x = R(b, 0), y = R(b, 1), z = R(b, 2);
    const double s = 1.0 / (x * x + y * y + z * z), c = 24.0 * std::pow(s, 4) - 48.0 * std::pow(s, 7);
    for (int k = 0; k < 3; ++k) {
      const double want = c * R(b, k);
      if (std::abs(parallel(b, k) - want) > 1e-10 * std::max(1.0, std::abs(want))) ok = false;
    }
  }
  return ok ? 0 : 1;
}
