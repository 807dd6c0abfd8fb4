// Functions of numbers take forward mode without a tape on their own: vmap of a first-order
// transform whose batched arguments are all [B] runs f once per example on numbers
// (fused_fixed.hpp, try_numbers), and grad of a function of numbers that holds no values runs
// forward mode (grad.hpp). Both give the numbers of the tape and of batching rules; a function
// that holds values, or one the per-example form cannot run, takes the tape as before. Which form
// ran is observed by counting the calls of f on grad's tape-free numbers.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::testing::require_close;
using tw::testing::sample;

namespace {
constexpr std::int64_t B = 70;  // more than one block of 64 examples, and a tail

int dual_calls = 0;  // calls of the functions below on grad's tape-free numbers

template <class X>
void count(const X&) {
  if constexpr (tw::is_scalar_dual_v<X>) ++dual_calls;
}

// Lennard-Jones on coordinates; captureless, so grad may run it forward.
constexpr auto energy = [](auto x, auto y, auto z) {
  count(x);
  auto s = 1.0 / (x * x + y * y + z * z);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

double denergy_dx(double x, double y, double z) {
  const double s = 1.0 / (x * x + y * y + z * z), s2 = s * s, s4 = s2 * s2;
  return (24.0 * s4 - 48.0 * s4 * s2 * s) * x;
}

constexpr auto chain = [](auto x) {
  count(x);
  auto a = tw::sin(x) * x;
  auto b = tw::exp((a + 1.0) * 0.1);
  auto c = tw::cos(b - x);
  return tw::tanh(c * c) * x;
};
}  // namespace

TEST_CASE("vmap(grad(f)) over [B] arguments runs per example on numbers, with batching rules' numbers") {
  const tw::tensor<double> X = sample({B}, 0.6, 1.4, 1), Y = sample({B}, 0.6, 1.4, 2), Z = sample({B}, 0.6, 1.4, 3);
  dual_calls = 0;
  auto [gx, gy, gz] = tw::vmap(tw::grad(energy, tw::argnums<0, 1, 2>))(X, Y, Z);
  CHECK(dual_calls == B);
  for (std::int64_t b = 0; b < B; ++b) {
    CHECK(gx(b) == Approx(denergy_dx(X(b), Y(b), Z(b))).epsilon(1e-13));
    CHECK(gy(b) == Approx(denergy_dx(Y(b), X(b), Z(b))).epsilon(1e-13));
    CHECK(gz(b) == Approx(denergy_dx(Z(b), Y(b), X(b))).epsilon(1e-13));
  }
  dual_calls = 0;
  auto [bx, by, bz] = tw::vmap(tw::grad(energy, tw::argnums<0, 1, 2>), tw::strategy::batched)(X, Y, Z);
  CHECK(dual_calls == 0);
  require_close(gx, bx, 1e-13);
  require_close(gy, by, 1e-13);
  require_close(gz, bz, 1e-13);
  // An unbatched number, in_dims -1, out_dims, grad_and_value, chunk_size (batching rules).
  auto [g, v] = tw::vmap(tw::grad_and_value(energy), tw::in_dims(-1, tw::none, 0))(X, 1.1, Z);
  for (std::int64_t b = 0; b < B; ++b) {
    CHECK(g(b) == Approx(denergy_dx(X(b), 1.1, Z(b))).epsilon(1e-13));
    CHECK(v(b) == Approx(energy(X(b), 1.1, Z(b))).epsilon(1e-13));
  }
  require_close(tw::vmap(tw::grad(chain), tw::chunk_size(16))(X), tw::vmap(tw::grad(chain), tw::strategy::batched)(X),
                1e-13);
  // Batch size 1: one example, no batching rule.
  dual_calls = 0;
  const tw::tensor<double> one({1}, {0.7});
  CHECK(tw::vmap(tw::grad(chain))(one)(0) == Approx(tw::grad(chain)(0.7)).epsilon(1e-14));
  CHECK(dual_calls == 2);
}

TEST_CASE("vmap declines the per-example form for arguments that are not [B] and for type-erased f") {
  const tw::tensor<double> X = sample({B, 2}, 0.6, 1.4, 4);
  dual_calls = 0;
  const tw::tensor<double> G = tw::vmap(tw::grad([](auto x) {
    count(x);
    return tw::sum(x * x);
  }))(X);
  require_close(G, X * 2.0, 1e-14);
  // A type-erased f compiles on the probe and runs on the runtime path's numbers.
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value x) { return chain(x); };
  auto via_erased = [&erased](auto x) { return erased(x); };
  const tw::tensor<double> Y = sample({B}, -1, 1, 5);
  require_close(tw::vmap(tw::grad(via_erased))(Y), tw::vmap(tw::grad(chain), tw::strategy::batched)(Y), 1e-13);
}

TEST_CASE("grad of a function of numbers that holds no values runs forward mode, with the tape's numbers") {
  dual_calls = 0;
  for (double x : {-1.3, -0.2, 0.0, 0.7, 2.5}) {
    const double forward = tw::grad(chain)(x);
    CHECK(dual_calls > 0);
    // The same function through a capturing lambda takes the tape.
    const int before = dual_calls;
    const double k = 1.0;
    const double taped = tw::grad([k](auto y) { return chain(y) * k; })(x);
    CHECK(dual_calls == before);
    CHECK(forward == Approx(taped).epsilon(1e-14));
    // Second order: forward over forward against the tape's grad of grad.
    const double h = tw::grad(tw::grad(chain))(x);
    const double h_taped = tw::grad([k](auto y) { return tw::grad(chain)(y) * k; })(x);
    CHECK(h == Approx(h_taped).epsilon(1e-12));
    // Finite differences.
    const double e = 1e-6;
    CHECK(forward == Approx((chain(x + e) - chain(x - e)) / (2 * e)).epsilon(1e-7));
  }
  // Perturbation confusion: d/dx [x * d/dy (x + y)] at y = 1 is 1; the inner grad holds x.
  auto outer = [](auto x) { return x * tw::grad([x](auto y) { return x + y; })(1.0); };
  CHECK(tw::grad(outer)(1.0) == Approx(1.0));
  CHECK(tw::grad(outer)(3.0) == Approx(1.0));
  // d/dx [x * d/dy (x * y)] = 2x: the inner derivative depends on x.
  auto outer2 = [](auto x) { return x * tw::grad([x](auto y) { return x * y; })(1.0); };
  CHECK(tw::grad(outer2)(1.5) == Approx(3.0));
}
