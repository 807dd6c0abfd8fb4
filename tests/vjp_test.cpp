// vjp starts grad's backward pass at the cotangent (cotangent_seed.hpp) instead of
// differentiating <u, f(x)>: the numbers, the shape check, tuple outputs, outputs that do not
// depend on x, and derivatives with respect to the cotangent itself, on both paths.
#include <catch2/catch.hpp>

#include <functional>
#include <thread>
#include <vector>
#include <tuple>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {
const tensor<double> A = sample({4, 3}, -1, 1, 71);
// f(x) = tanh(A x): J = diag(1 - y^2) A, so J^T u = A^T ((1 - y^2) u).
auto layer = [](auto x) { return tw::tanh(tw::matmul(A, x)); };
tensor<double> analytic_vjp(const tensor<double>& x, const tensor<double>& u) {
  const tensor<double> y = tw::tanh(tw::matmul(A, x));
  return tw::matmul(tw::transpose(A, 0, 1), (1.0 - y * y) * u);
}
std::function<value(value)> erased_layer = [](value x) { return tw::tanh(tw::matmul(value(A), x)); };
}  // namespace

TEST_CASE("vjp: J^T u on the static and runtime paths, and vmapped over cotangents") {
  const tensor<double> x = sample({3}, -1, 1, 72), u = sample({4}, -1, 1, 73), U = sample({5, 4}, -1, 1, 74);
  const auto y_and_pull = tw::vjp(layer, x);  // not a structured binding: clang 14 cannot capture one
  const auto& y = y_and_pull.first;
  const auto& pull = y_and_pull.second;
  require_close(y, layer(x), 0);
  require_close(std::get<0>(pull(u)), analytic_vjp(x, u), 1e-14);
  require_close(std::get<0>(pull(u)), tw::sum(fd_jacobian(layer, x) * tw::reshape(u, {4, 1}), 0), 1e-6);

  const auto [yr, pull_r] = tw::vjp(erased_layer, x);
  require_close(yr.to_tensor(), y, 0);
  require_close(std::get<0>(pull_r(u)).to_tensor(), analytic_vjp(x, u), 1e-14);

  // vmap over the cotangent: one row of J^T U per cotangent, the forward pass run once.
  const tensor<double> rows = tw::vmap([&](const auto& c) { return std::get<0>(pull(c)); })(U);
  for (std::int64_t b = 0; b < 5; ++b) require_close(row(rows, b), analytic_vjp(x, row(U, b)), 1e-14);
  require_close(tw::jacrev(layer)(x), tw::jacrev(erased_layer)(x).to_tensor(), 1e-14);
}

TEST_CASE("vjp: tuple outputs take one cotangent each") {
  const tensor<double> x = sample({3}, -1, 1, 75), u1 = sample({3}, -1, 1, 76), u2 = sample({3}, -1, 1, 77);
  auto two = [](auto x) { return std::make_tuple(tw::sin(x), x * x); };
  const auto [y, pull] = tw::vjp(two, x);
  require_close(std::get<1>(y), x * x, 0);
  // J1^T u1 + J2^T u2 = cos(x) u1 + 2 x u2.
  require_close(std::get<0>(pull(std::make_tuple(u1, u2))), tw::cos(x) * u1 + 2.0 * x * u2, 1e-14);
}

TEST_CASE("vjp: an output that does not depend on x pulls back to zeros") {
  const tensor<double> x = sample({3}, -1, 1, 78), u = sample({2}, -1, 1, 79);
  const auto [y, pull] = tw::vjp([](const auto&) { return tensor<double>{1.0, 2.0}; }, x);
  require_close(std::get<0>(pull(u)), tw::zeros_like(x), 0);
  // Two arguments, one unused: its gradient is zeros.
  const auto [y2, pull2] = tw::vjp([](const auto& a, const auto&) { return a * 3.0; }, x, u);
  const auto [ga, gb] = pull2(x);
  require_close(ga, x * 3.0, 0);
  require_close(gb, tw::zeros_like(u), 0);
}

TEST_CASE("vjp: a cotangent of the wrong shape is a tower::error on both paths") {
  const tensor<double> x = sample({3}, -1, 1, 80), u = sample({3}, -1, 1, 81);
  const auto pull = tw::vjp(layer, x).second;
  REQUIRE_THROWS_WITH(pull(u), Catch::Contains("vjp: the cotangent has shape [3] but f's output has shape [4]"));
  const auto pull_r = tw::vjp(erased_layer, x).second;
  REQUIRE_THROWS_WITH(pull_r(u), Catch::Contains("vjp: the cotangent has shape [3] but f's output has shape [4]"));
  // Broadcastable is not enough: a [1] cotangent for a [4] output is an error, not a sum.
  REQUIRE_THROWS_WITH(pull(tensor<double>{1.0}), Catch::Contains("the cotangent has shape [1]"));
}

TEST_CASE("vjp: differentiable in the cotangent (the double-vjp trick gives J v)") {
  const tensor<double> x = sample({3}, -1, 1, 82), u = sample({4}, -1, 1, 83), v = sample({3}, -1, 1, 84);
  const tensor<double> Jv = std::get<1>(tw::jvp(layer, std::tuple{x}, std::tuple{v}));
  // u -> <J^T u, v> is linear with gradient J v.
  auto pulled = [&](const auto& c) { return tw::sum(std::get<0>(tw::vjp(layer, x).second(c)) * v); };
  require_close(tw::grad(pulled)(u), Jv, 1e-14);
  // jvp in the cotangent direction w: J^T w.
  const tensor<double> w = sample({4}, -1, 1, 85);
  auto pull_of = [&](const auto& c) { return std::get<0>(tw::vjp(layer, x).second(c)); };
  require_close(std::get<1>(tw::jvp(pull_of, std::tuple{u}, std::tuple{w})), analytic_vjp(x, w), 1e-14);
  // The runtime path: the same through a type-erased f.
  std::function<value(value)> pulled_r = [&](value c) {
    return tw::sum(std::get<0>(tw::vjp(erased_layer, x).second(c)) * value(v));
  };
  require_close(tw::grad(pulled_r)(u).to_tensor(), Jv, 1e-14);
  // Second order through the seeded backward pass: d/dx <J(x)^T u, v> against finite differences.
  auto mixed = [&](const auto& xx) { return tw::sum(std::get<0>(tw::vjp(layer, xx).second(u)) * v); };
  require_close(tw::grad(mixed)(x), fd_grad([&](const tensor<double>& t) { return mixed(t).item(); }, x), 1e-6);
}

namespace {
// f(x) = log(1 + |x|^2) + sum(sin x): H = 2 I / q - 4 x x^T / q^2 - diag(sin x), q = 1 + |x|^2.
auto log_sin = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };
tensor<double> analytic_hessian(const tensor<double>& x) {
  const std::int64_t n = x.numel();
  double q = 1;
  for (std::int64_t i = 0; i < n; ++i) q += x.data()[i] * x.data()[i];
  std::vector<double> h(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      h[static_cast<std::size_t>(i * n + j)] =
          -4 * x.data()[i] * x.data()[j] / (q * q) + (i == j ? 2 / q - std::sin(x.data()[i]) : 0.0);
  return tensor<double>({n, n}, h);
}
}  // namespace

TEST_CASE("jacrev of a rank-0 output is grad, also where enclosing transforms wrap it (hessian, vmap)") {
  const tensor<double> x = sample({5}, -1.5, 1.5, 86), X = sample({4, 5}, -1.5, 1.5, 87);
  // A 0-d tensor output: jacrev and grad give the same numbers and shape.
  require_close(tw::jacrev(log_sin)(x), tw::grad(log_sin)(x), 0);
  REQUIRE(tw::jacrev(log_sin)(x).shape() == tw::shape_t{5});
  // hessian = jacfwd(jacrev(f)): inside jacfwd the output is a wrapped 0-d tensor.
  require_close(tw::hessian(log_sin)(x), analytic_hessian(x), 1e-13);
  const tensor<double> H = tw::vmap(tw::hessian(log_sin))(X);
  REQUIRE(H.shape() == tw::shape_t{4, 5, 5});
  for (std::int64_t b = 0; b < 4; ++b) require_close(row(H, b), analytic_hessian(row(X, b)), 1e-13);
  require_close(tw::vmap(tw::jacrev(tw::jacrev(log_sin)))(X), H, 1e-13);
  // The runtime path gives the same numbers.
  std::function<value(value)> erased = [](value v) { return log_sin(v); };
  require_close(tw::vmap(tw::hessian(erased))(X).to_tensor(), H, 1e-13);
  // A vector output under vmap: jacrev's shape probe runs f on one example.
  auto fv = [](auto v) { return tw::tanh(v * 1.5) * tw::sum(v); };
  const tensor<double> J = tw::vmap(tw::jacrev(fv))(X);
  REQUIRE(J.shape() == tw::shape_t{4, 5, 5});
  for (std::int64_t b = 0; b < 4; ++b) require_close(row(J, b), tw::jacfwd(fv)(row(X, b)), 1e-13);
}

namespace {
/// J of tanh(W x) = diag(1 - y^2) W, entry by entry.
tensor<double> tanh_layer_jacobian(const tensor<double>& W, const tensor<double>& x) {
  const tensor<double> y = tw::tanh(tw::matmul(W, x));
  const std::int64_t m = W.shape()[0], n = W.shape()[1];
  std::vector<double> J(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j)
      J[static_cast<std::size_t>(i * n + j)] = (1 - y.data()[i] * y.data()[i]) * W.data()[i * n + j];
  return tensor<double>({m, n}, J);
}
}  // namespace

TEST_CASE("jacrev remembers the output shape per argument shapes, and notices when f's changes") {
  // jacrev keeps the output shape it last saw (output_shape_memo) instead of running f once
  // more to learn it. f here captures W by reference: W changing shape between calls, with x's
  // shape the same, must still give the new Jacobian (the pass checks y against the memo).
  tensor<double> W = sample({4, 3}, -1, 1, 81);
  auto jac = tw::jacrev([&W](auto x) { return tw::tanh(tw::matmul(W, x)); });
  const tensor<double> x3 = sample({3}, -1, 1, 82), x3b = sample({3}, -1, 1, 83), x5 = sample({5}, -1, 1, 84);
  require_close(jac(x3), tanh_layer_jacobian(W, x3), 1e-14);
  require_close(jac(x3b), tanh_layer_jacobian(W, x3b), 1e-14);  // remembered
  W = sample({6, 3}, -1, 1, 85);                                // the same x shape, another y shape
  require_close(jac(x3), tanh_layer_jacobian(W, x3), 1e-14);
  require_close(jac(x3b), tanh_layer_jacobian(W, x3b), 1e-14);
  W = sample({2, 5}, -1, 1, 86);  // another x shape
  require_close(jac(x5), tanh_layer_jacobian(W, x5), 1e-14);
  W = sample({1, 5}, -1, 1, 87);  // [1]: one row
  require_close(jac(x5), tanh_layer_jacobian(W, x5), 1e-14);
  // A rank-0 output after a rank-1 one, and back.
  bool scalar = true;
  auto jac2 = tw::jacrev([&](auto x) { return scalar ? tw::sum(tw::tanh(x)) : tw::tanh(x); });
  const tensor<double> d = 1.0 - tw::tanh(x3) * tw::tanh(x3);
  require_close(jac2(x3), d, 1e-14);
  scalar = false;
  require_close(jac2(x3), tw::eye<double>(3) * d, 1e-14);
  scalar = true;
  require_close(jac2(x3), d, 1e-14);
  // Copies of a jacrev share the memo (they hold the same f), from several threads at once
  // (Catch2's REQUIRE is not thread-safe: the threads count matches, the test checks the counts).
  // The threads alternate between two argument shapes, so the memo is also rewritten meanwhile.
  const auto jac3 = tw::jacrev([](auto x) { return 2.0 * tw::tanh(x); });
  const auto shared = jac3;
  auto matches = [](const tensor<double>& a, const tensor<double>& b) {
    if (a.shape() != b.shape()) return false;
    for (std::int64_t i = 0; i < a.numel(); ++i)
      if (std::abs(a.data()[i] - b.data()[i]) > 1e-14) return false;
    return true;
  };
  const std::vector<tensor<double>> xs{x5, x3};
  std::vector<tensor<double>> want;
  for (const auto& x : xs) want.push_back(tw::eye<double>(x.shape()[0]) * (2.0 * (1.0 - tw::tanh(x) * tw::tanh(x))));
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      const auto k = static_cast<std::size_t>(t % 2);
      for (int r = 0; r < 50; ++r)
        ok[static_cast<std::size_t>(t)] += matches((t < 2 ? jac3 : shared)(xs[(k + static_cast<std::size_t>(r)) % 2]),
                                                   want[(k + static_cast<std::size_t>(r)) % 2]);
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) REQUIRE(ok[static_cast<std::size_t>(t)] == 50);
}
