// hessian on tw::fixed values through elementwise jets (elementwise_jet.hpp, jet2.hpp,
// hessian_forward.hpp): against the analytic Hessian, finite differences of the gradient and the
// tensor path; the cases that leave the elementwise form (indexing, broadcasting against a
// dense value, dot), no_grad, argnums, every nesting of jacrev / jacfwd, and vmap with fixed_rows.
// (Every op under hessian: the op checker's fixed forms, tests/op_checker.hpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::testing::require_close;
using tw::testing::sample;

namespace {

constexpr int N = 8;
using vec = tw::fixed<double, N>;
using mat = tw::fixed<vec, N>;

vec fx(const tw::tensor<double>& t) { return tw::to_fixed<vec>(t); }

// The benchmark's function: H = 2 I / q - 4 x x^T / q^2 - diag(sin x), q = 1 + |x|^2.
auto f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

mat analytic(const vec& x) {
  double q = 1.0;
  for (int i = 0; i < N; ++i) q += x[static_cast<std::size_t>(i)] * x[static_cast<std::size_t>(i)];
  mat h{};
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j)
      h[i][j] = -4.0 * x[i] * x[j] / (q * q) + (i == j ? 2.0 / q - std::sin(x[i]) : 0.0);
  return h;
}

/// Central differences of the gradient (the tape's), column by column.
template <class F>
tw::tensor<double> fd_hessian(F g, const tw::tensor<double>& x) {
  const std::int64_t n = x.numel();
  std::vector<double> h(static_cast<std::size_t>(n * n));
  const double eps = 1e-5;
  for (std::int64_t j = 0; j < n; ++j) {
    std::vector<double> p(x.data(), x.data() + n), m = p;
    p[static_cast<std::size_t>(j)] += eps;
    m[static_cast<std::size_t>(j)] -= eps;
    const tw::tensor<double> xp({n}, p), xm({n}, m);
    const tw::tensor<double> gp = tw::grad(g)(xp), gm = tw::grad(g)(xm);
    for (std::int64_t i = 0; i < n; ++i)
      h[static_cast<std::size_t>(i * n + j)] = (gp.data()[i] - gm.data()[i]) / (2 * eps);
  }
  return tw::tensor<double>({n, n}, h);
}

/// Whether hessian(f) on these arguments asks jacrev(f) for its Jacobian on jets (jacobian_rows.hpp).
template <class F, class... A>
constexpr bool takes_jets() {
  return tw::jacrev_transform<F, tw::argnums_t<0>>::template jacobian_rows_ok<0, A...>();
}

}  // namespace

TEST_CASE("hessian on fixed: elementwise jets against the analytic Hessian, finite differences and tensors") {
  STATIC_REQUIRE(takes_jets<decltype(f), vec>());
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const tw::tensor<double> xt = sample({N}, -1.5, 1.5, seed);
    const vec x = fx(xt);
    const mat h = tw::hessian(f)(x);
    require_close(tw::to_tensor(h), tw::to_tensor(analytic(x)), 1e-13);
    require_close(tw::to_tensor(h), tw::hessian(f)(xt), 1e-13);
    require_close(tw::to_tensor(h), fd_hessian(f, xt), 1e-6);
    // Symmetric up to the rounding of p g_i g_j against p g_j g_i.
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j < N; ++j) CHECK(h[i][j] == Approx(h[j][i]).epsilon(1e-15).margin(1e-16));
  }
}

TEST_CASE("hessian on fixed: values that leave the elementwise form") {
  const tw::tensor<double> xt = sample({N}, -1, 1, 11);
  const vec x = fx(xt);
  // Indexing mixes elements of different inputs; broadcasting a dense value against the jets;
  // dot; a product of two sums; an elementwise op after a reduction.
  auto indexed = [](auto v) { return v[1] * v[2] * tw::sin(v[0]) + v[7] / (2.0 + v[3]); };
  auto broadcast = [](auto v) { return tw::sum(tw::exp(v) * tw::sum(v * v)); };
  auto dotted = [](auto v) { return tw::dot(v, tw::tanh(v)) * tw::sum(v); };
  auto products = [](auto v) { return tw::sum(tw::sin(v)) * tw::sum(tw::cos(v)) - tw::sqrt(1.0 + tw::sum(v * v)); };
  STATIC_REQUIRE(takes_jets<decltype(indexed), vec>());
  STATIC_REQUIRE(takes_jets<decltype(broadcast), vec>());
  STATIC_REQUIRE(takes_jets<decltype(dotted), vec>());
  require_close(tw::to_tensor(tw::hessian(broadcast)(x)), tw::hessian(broadcast)(xt), 1e-12);
  require_close(tw::to_tensor(tw::hessian(broadcast)(x)), fd_hessian(broadcast, xt), 1e-6);
  require_close(tw::to_tensor(tw::hessian(dotted)(x)), tw::hessian(dotted)(xt), 1e-12);
  require_close(tw::to_tensor(tw::hessian(products)(x)), tw::hessian(products)(xt), 1e-12);
  require_close(tw::to_tensor(tw::hessian(products)(x)), fd_hessian(products, xt), 1e-6);
  // Indexing has no tensor form here: against the analytic Hessian.
  const mat h = tw::hessian(indexed)(x);
  const double x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x7 = x[7];
  mat e{};
  for (auto& row : e.e) row = vec{};
  e[0][0] = -x1 * x2 * std::sin(x0);
  e[0][1] = e[1][0] = x2 * std::cos(x0);
  e[0][2] = e[2][0] = x1 * std::cos(x0);
  e[1][2] = e[2][1] = std::sin(x0);
  e[3][3] = 2.0 * x7 / std::pow(2.0 + x3, 3);
  e[3][7] = e[7][3] = -1.0 / std::pow(2.0 + x3, 2);
  require_close(tw::to_tensor(h), tw::to_tensor(e), 1e-14);
}

TEST_CASE("hessian on fixed: no_grad, constants, argnums and every nesting of jacrev and jacfwd") {
  const tw::tensor<double> xt = sample({N}, -1, 1, 21);
  const vec x = fx(xt);
  // Under no_grad a value of x is a constant: here c = sum(x) is, so H = 2 c I.
  auto frozen = [](auto v) {
    auto c = [&] {
      tw::no_grad off;
      return tw::sum(v) + 0.0;
    }();
    return c * tw::sum(v * v);
  };
  const mat hf = tw::hessian(frozen)(x);
  double c = 0;
  for (double v : x.e) c += v;
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = 0; j < N; ++j) CHECK(hf[i][j] == Approx(i == j ? 2 * c : 0.0).margin(1e-14));

  // A second argument: a constant fixed vector and a number; argnums picks the differentiated one.
  auto two = [](auto a, auto b, auto s) { return s * tw::sum(tw::exp(a * b)) + tw::sum(a * a * b); };
  const tw::tensor<double> yt = sample({N}, -1, 1, 22);
  const vec y = fx(yt);
  STATIC_REQUIRE(tw::jacrev_transform<decltype(two), tw::argnums_t<1>>::jacobian_rows_ok<1, vec, vec, double>());
  // The inner transform differentiates another argument than the outer one: forward over forward.
  STATIC_REQUIRE_FALSE(tw::jacrev_transform<decltype(two), tw::argnums_t<1>>::jacobian_rows_ok<0, vec, vec, double>());
  require_close(tw::to_tensor(tw::hessian(two, tw::argnums<1>)(x, y, 0.5)),
                tw::hessian(two, tw::argnums<1>)(xt, yt, 0.5), 1e-12);
  require_close(tw::to_tensor(tw::hessian(two, tw::argnums<0>)(x, y, 0.5)),
                tw::hessian(two, tw::argnums<0>)(xt, yt, 0.5), 1e-12);

  // jacrev(jacrev(f)), jacfwd(jacfwd(f)), jacrev(jacfwd(f)), and jacfwd or jacrev of grad(f):
  // the same Hessian, each computed on jets (the inner transform is asked for its Jacobian).
  const mat h = tw::hessian(f)(x);
  int jets = 0;
  auto counted = [&](auto v) {
    if constexpr (tw::is_elementwise_jet_v<decltype(v)>) ++jets;
    return f(v);
  };
  require_close(tw::to_tensor(mat(tw::jacrev(tw::jacrev(counted))(x))), tw::to_tensor(h), 1e-14);
  require_close(tw::to_tensor(mat(tw::jacfwd(tw::jacfwd(counted))(x))), tw::to_tensor(h), 1e-14);
  require_close(tw::to_tensor(mat(tw::jacrev(tw::jacfwd(counted))(x))), tw::to_tensor(h), 1e-14);
  require_close(tw::to_tensor(mat(tw::jacfwd(tw::grad(counted))(x))), tw::to_tensor(h), 1e-14);
  require_close(tw::to_tensor(mat(tw::jacrev(tw::grad(counted))(x))), tw::to_tensor(h), 1e-14);
  CHECK(jets == 5);
  // grad_and_value and a grad with aux return more than the gradient: forward over forward.
  STATIC_REQUIRE_FALSE(decltype(tw::grad_and_value(f))::jacobian_rows_ok<0, vec>());
  require_close(tw::to_tensor(mat(tw::jacfwd([&](auto v) { return std::get<0>(tw::grad_and_value(f)(v)); })(x))),
                tw::to_tensor(h), 1e-13);

  // A function that does not depend on x: zeros. A size-1 vector.
  const mat z = tw::hessian([](auto) { return 3.0; })(x);
  for (const auto& row : z.e)
    for (double v : row.e) CHECK(v == 0.0);
  const auto h1 = tw::hessian([](auto v) { return tw::sum(tw::exp(v) * v); })(tw::fixed<double, 1>{{0.3}});
  CHECK(h1[0][0] == Approx((2.0 + 0.3) * std::exp(0.3)).epsilon(1e-14));
}

TEST_CASE("hessian on fixed: vmap with fixed_rows runs one jet per example, as the tensor path") {
  constexpr std::int64_t B = 130;  // two blocks of 64 and a tail
  const tw::tensor<double> X = sample({B, N}, -1.5, 1.5, 31);
  int jets = 0;
  auto counted = [&](auto v) {
    if constexpr (tw::is_elementwise_jet_v<decltype(v)>) ++jets;
    return f(v);
  };
  const tw::tensor<double> hf = tw::vmap(tw::hessian(counted), tw::in_dims(tw::fixed_rows<N>))(X);
  // One jet per example; the second-order loop's last block of 64 overlaps the one before it.
  CHECK(jets >= B);
  CHECK(jets < B + 64);
  require_close(hf, tw::vmap(tw::hessian(f))(X), 1e-13);
  for (std::int64_t b = 0; b < B; ++b) {
    vec x;
    for (std::size_t i = 0; i < N; ++i) x[i] = X.data()[b * N + static_cast<std::int64_t>(i)];
    const mat e = analytic(x);
    for (std::size_t i = 0; i < N * N; ++i)
      CHECK(hf.data()[b * N * N + static_cast<std::int64_t>(i)] == Approx(e[i / N][i % N]).margin(1e-13));
  }
  // jacfwd(grad(f)) per example: also one jet per example.
  jets = 0;
  require_close(tw::vmap(tw::jacfwd(tw::grad(counted)), tw::in_dims(tw::fixed_rows<N>))(X), hf, 1e-13);
  CHECK(jets >= B);
  CHECK(jets < B + 64);
  // With a constant argument beside the batched one, and out_dims.
  auto scaled = [](auto v, auto s) { return s * f(v); };
  const tw::tensor<double> hs = tw::vmap(tw::hessian(scaled), tw::in_dims(tw::fixed_rows<N>, tw::none))(X, 2.0);
  require_close(hs, hf * 2.0, 1e-13);
}
