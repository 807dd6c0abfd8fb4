// The batch kept in the last dim (batched::batch_last, static path): vmap with in_dims -1 and
// jacfwd's basis start there; elementwise ops, reshape, sum and matmul by a plain matrix keep
// it there; every other op sees the batch first. Each case runs the same function on the static
// path, on the runtime path (which always puts the batch first) and example by example, and
// checks that the static path really kept the batch last where it should.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tests/check.hpp"

namespace tw = tower;
using tw::tensor;
using tw::testing::require_close;
using tw::testing::sample;

namespace {

/// Whether the last value seen by `note` had its batch last (the static path's layout).
struct layout_probe {
  int seen = 0, last = 0;
  template <class X>
  void note(const X& x) {
    if constexpr (requires { x.batch_last; }) {
      ++seen;
      last += x.batch_last ? 1 : 0;
    }
  }
};

/// Column b of a [n..., B] tensor, as an [n...] tensor.
tensor<double> column(const tensor<double>& X, std::int64_t b) {
  const std::int64_t B = X.shape().back(), n = X.numel() / B;
  tw::shape_t s(X.shape().begin(), X.shape().end() - 1);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = X.data()[i * B + b];
  return tensor<double>(s, v);
}

/// f on each column of X, stacked along a new last dim.
template <class F>
tensor<double> per_column(F f, const tensor<double>& X) {
  const std::int64_t B = X.shape().back();
  std::vector<tensor<double>> rows;
  for (std::int64_t b = 0; b < B; ++b) rows.push_back(tw::testing::as_tensor(f(column(X, b))));
  return tw::movedim(tw::testing::stack(rows), 0, -1);
}

/// Same NaN positions, and close elsewhere.
void require_same(const tensor<double>& a, const tensor<double>& b) {
  REQUIRE(a.shape() == b.shape());
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    INFO("element " << i << ": " << a.data()[i] << " vs " << b.data()[i]);
    REQUIRE(std::isnan(a.data()[i]) == std::isnan(b.data()[i]));
    if (!std::isnan(b.data()[i]) && a.data()[i] != b.data()[i])
      require_close(a.data()[i], b.data()[i], 1e-12);  // inf == inf
  }
}

const tensor<double> A = sample({5, 6}, -0.5, 0.5, 3);
const tensor<double> M = sample({3, 2}, -1.0, 1.0, 4);

/// The cases: name, function of a [6] value, and whether its result keeps the batch last.
template <class Body>
void for_each_case(Body body) {
  body("tanh(A x)", [](auto x) { return tw::tanh(tw::matmul(A, x)); }, true);
  body("sin(x) x + 2", [](auto x) { return tw::sin(x) * x + 2.0; }, true);
  body("where(x > 0, x, x / 2)", [](auto x) { return tw::where(tw::gt(x, 0.0), x, x * 0.5); }, true);
  body("M reshape(x^2, [2, 3])", [](auto x) { return tw::matmul(M, tw::reshape(x * x, {2, 3})); }, true);
  body("sum(exp(x) x) x", [](auto x) { return tw::sum(tw::exp(x) * x) * x; }, true);
  body("sum over dim 1", [](auto x) { return tw::sum(tw::reshape(x, {3, 2}), 1) * 2.0; }, true);
  body(
      "transpose (batch moved first)", [](auto x) { return tw::transpose(tw::reshape(x, {2, 3}), 0, 1) * 3.0; }, false);
  body("x A^T (x on the left)", [](auto x) { return tw::matmul(x, tw::transpose(A, 0, 1)); }, false);
  body("narrow (batch moved first)", [](auto x) { return tw::narrow(x, 0, 1, 4) * 2.0; }, false);
}

}  // namespace

TEST_CASE(
    "vmap with in_dims -1 keeps the batch last through elementwise ops, reshape, sum and matmul; both paths agree") {
  const tensor<double> X = sample({6, 7}, -1.5, 1.5, 11);  // 7 examples of [6], batch last
  for_each_case([&](const std::string& name, auto f, bool keeps) {
    INFO(name);
    const tensor<double> expected = per_column(f, X);  // [out..., 7]
    layout_probe probe;
    auto noted = [&](auto x) {
      auto y = f(x);
      probe.note(y);
      return y;
    };
    const tensor<double> last = tw::vmap(noted, tw::in_dims(-1), tw::out_dims(-1))(X);
    require_close(last, expected, 1e-12);
    REQUIRE(probe.seen == 1);
    CHECK(probe.last == (keeps ? 1 : 0));
    // Batch first on the way out, and the runtime path (batch always first).
    const tensor<double> first = tw::vmap(f, tw::in_dims(-1))(X);
    require_close(first, tw::movedim(expected, -1, 0), 1e-12);
    std::function<tw::dyn::value(tw::dyn::value)> erased = [f](tw::dyn::value x) { return f(x); };
    require_close(tw::vmap(erased, tw::in_dims(-1), tw::out_dims(-1))(X).to_tensor(), expected, 1e-12);
  });
}

TEST_CASE("jacfwd with the basis batch last matches jacrev, the runtime path and finite differences") {
  const tensor<double> x = sample({6}, -1.0, 1.0, 21);
  for_each_case([&](const std::string& name, auto f, bool) {
    INFO(name);
    const tensor<double> J = tw::jacfwd(f)(x);
    require_close(J, tw::jacrev(f)(x), 1e-12);
    require_close(J, tw::testing::fd_jacobian([&](const tensor<double>& v) { return f(v); }, x), 1e-6);
    std::function<tw::dyn::value(tw::dyn::value)> erased = [f](tw::dyn::value v) { return f(v); };
    require_close(J, tw::jacfwd(erased)(x).to_tensor(), 1e-12);
  });
}

TEST_CASE("jacfwd of tanh(A x) keeps the basis's batch last from end to end") {
  const tensor<double> x = sample({6}, -1.0, 1.0, 22);
  layout_probe in, out;
  auto f = [&](auto v) {
    in.note(v);
    auto y = tw::tanh(tw::matmul(A, v));
    out.note(y);
    return y;
  };
  const tensor<double> J = tw::jacfwd(f)(x);
  // jvp's dual carries the batched tangent: look at the tangents.
  REQUIRE(in.seen == 0);  // f sees duals, whose tangents are the batched values
  layout_probe tangent_in, tangent_out;
  auto g = [&](auto v) {
    if constexpr (requires { v.tangent; }) tangent_in.note(v.tangent);
    auto y = tw::tanh(tw::matmul(A, v));
    if constexpr (requires { y.tangent; }) tangent_out.note(y.tangent);
    return y;
  };
  require_close(tw::jacfwd(g)(x), J, 0);
  REQUIRE(tangent_in.seen == 1);
  CHECK(tangent_in.last == 1);
  REQUIRE(tangent_out.seen == 1);
  CHECK(tangent_out.last == 1);
  // Analytic: diag(1 - tanh(A x)^2) A.
  const tensor<double> y = tw::tanh(tw::matmul(A, x));
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 6; ++j) require_close(J(i, j), (1 - y(i) * y(i)) * A(i, j), 1e-14);
}

TEST_CASE("jacfwd through a weight with inf or NaN: no shortcut past the product, both paths agree") {
  tensor<double> W = A;
  W(1, 2) = INFINITY;
  W(3, 0) = NAN;
  const tensor<double> x = sample({6}, 0.1, 1.0, 23);
  auto f = [W](auto v) { return tw::matmul(W, v) * 2.0; };
  std::function<tw::dyn::value(tw::dyn::value)> erased = [f](tw::dyn::value v) { return f(v); };
  const tensor<double> J = tw::jacfwd(f)(x);
  require_same(J, tw::jacfwd(erased)(x).to_tensor());
  // A GEMM's 0 * inf: the rows with inf or NaN are NaN, but for the inf's own column, where the
  // tangent's 1 meets it (* 2.0 adds no term of the constant: zero_tangent.hpp), as torch.
  CHECK(std::isnan(J(1, 0)));
  CHECK(J(1, 2) == INFINITY);
  CHECK(std::isnan(J(3, 5)));
  require_close(J(0, 0), 2 * A(0, 0), 1e-14);
}

TEST_CASE("batch-last values compose: vmap of jacfwd, jacfwd of jacfwd, hessian, grad of jacfwd") {
  const tensor<double> X = sample({4, 6}, -1.0, 1.0, 31);
  auto f = [](auto v) { return tw::tanh(tw::matmul(A, v)); };
  auto s = [](auto v) { return tw::sum(tw::sin(tw::matmul(A, v)) * tw::matmul(A, v)); };
  // Per-example Jacobians.
  const tensor<double> Js = tw::vmap(tw::jacfwd(f))(X);
  for (std::int64_t b = 0; b < 4; ++b)
    require_close(tw::testing::row(Js, b), tw::jacrev(f)(tw::testing::row(X, b)), 1e-12);
  // Batch last outside and inside.
  const tensor<double> Jl = tw::vmap(tw::jacfwd(f), tw::in_dims(-1), tw::out_dims(-1))(tw::movedim(X, 0, -1));
  require_close(Jl, tw::movedim(Js, 0, -1), 1e-12);
  // Second derivatives: forward over forward, forward over reverse, reverse over forward.
  const tensor<double> x = tw::testing::row(X, 1);
  const tensor<double> H = tw::hessian(s)(x);
  require_close(tw::jacfwd(tw::jacfwd(s))(x), H, 1e-10);
  require_close(tw::jacrev(tw::jacfwd(s))(x), H, 1e-10);
  require_close(H, tw::testing::fd_jacobian([&](const tensor<double>& v) { return tw::grad(s)(v); }, x), 1e-6);
  // grad of a function that uses jacfwd inside.
  auto trace_of_jacobian = [](auto v) {
    auto J = tw::jacfwd([](auto u) { return tw::tanh(tw::matmul(A, u)); })(v);
    return tw::sum(J * J);
  };
  require_close(
      tw::grad(trace_of_jacobian)(x),
      tw::testing::fd_grad([&](const tensor<double>& v) { return tw::testing::as_double(trace_of_jacobian(v)); }, x),
      1e-6);
}

TEST_CASE("a batch-last value meets a batch-first one at the same level") {
  const tensor<double> X = sample({6, 5}, -1.0, 1.0, 41), Y = sample({5, 6}, -1.0, 1.0, 42);
  auto f = [](auto x, auto y) { return tw::sin(x) * y + tw::sum(tw::matmul(A, x)) + tw::cos(x); };
  const tensor<double> r = tw::vmap(f, tw::in_dims(-1, 0))(X, Y);  // x batch last, y batch first
  for (std::int64_t b = 0; b < 5; ++b)
    require_close(tw::testing::row(r, b), f(column(X, b), tw::testing::row(Y, b)), 1e-12);
}

TEST_CASE("in_dims -1 with chunk_size and with out_dims 1") {
  const tensor<double> X = sample({2, 3, 7}, -1.0, 1.0, 51);  // examples [2, 3], batch last
  auto f = [](auto x) { return tw::exp(x) * 0.5 - x; };
  const tensor<double> expected = per_column([&](const tensor<double>& c) { return f(c); }, X);  // [2, 3, 7]
  require_close(tw::vmap(f, tw::in_dims(-1), tw::out_dims(-1), tw::chunk_size(3))(X), expected, 1e-12);
  require_close(tw::vmap(f, tw::in_dims(-1), tw::out_dims(1))(X), tw::movedim(expected, -1, 1), 1e-12);
  require_close(tw::vmap(f, tw::in_dims(2), tw::out_dims(0))(X), tw::movedim(expected, -1, 0), 1e-12);
}
