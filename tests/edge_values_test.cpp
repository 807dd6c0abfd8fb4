// Values and derivatives at the edges, as torch defines them: prod with zero elements, norm at a
// zero vector, logsumexp / softmax / log_softmax with infinities, NaN through maximum, minimum,
// relu, amax and amin. Each row is an op (a generic function of one tensor) and its cases: an
// input, the expected value and the expected gradient of sum(f(x)) (NaN entries must be NaN).
// Every case is checked on the static and the runtime path, by reverse mode (grad) and forward
// mode (jacfwd), and under vmap (a batch of copies of the input): the static path's automatic
// form (tw::fixed rows where the op has them) and its batching rules, the runtime path's fused
// program and its batching rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double NaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::int64_t batch = 20;  // more than the runtime fusion's 8 traced examples

struct edge_case {
  tensor<double> x;
  tensor<double> value;
  tensor<double> grad;  // of sum(f(x)); empty shape and no data: not checked (NaN values)
  bool check_grad = true;
};

edge_case at(tensor<double> x, tensor<double> v, tensor<double> g) {
  return {std::move(x), std::move(v), std::move(g)};
}
edge_case value_only(tensor<double> x, tensor<double> v) { return {std::move(x), std::move(v), {}, false}; }

tensor<double> vec(std::vector<double> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return tensor<double>({n}, std::move(v));
}
tensor<double> mat(std::int64_t r, std::int64_t c, std::vector<double> v) {
  return tensor<double>({r, c}, std::move(v));
}
tensor<double> num(double v) { return tensor<double>(v); }

/// Equal up to tol relative to max(1, |expected|); NaN only where NaN is expected, infinities exactly.
void require_same(const std::string& what, const tensor<double>& got, const tensor<double>& want, double tol = 1e-12) {
  INFO(what << ": got " << got << "\nexpected " << want);
  REQUIRE(got.shape() == want.shape());
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data()[i], b = want.data()[i];
    INFO("element " << i);
    if (std::isnan(b)) REQUIRE(std::isnan(a));
    else if (std::isinf(b)) REQUIRE(a == b);
    else REQUIRE(std::abs(a - b) <= tol * std::max(1.0, std::abs(b)));
  }
}

bool any_nan(const tensor<double>& t) {
  return std::any_of(t.data(), t.data() + t.numel(), [](double v) { return std::isnan(v); });
}
bool all_nan(const tensor<double>& t) {
  return std::all_of(t.data(), t.data() + t.numel(), [](double v) { return std::isnan(v); });
}

/// x repeated `batch` times along a new dim 0.
tensor<double> repeated(const tensor<double>& x) {
  return stack(std::vector<tensor<double>>(static_cast<std::size_t>(batch), x));
}

template <class F>
void check_edges(const std::string& name, F f, const std::vector<edge_case>& cases) {
  auto loss = [f](auto x) { return tw::sum(f(x)); };
  std::function<value(value)> fr = [f](value x) { return value(f(x)); };
  std::function<value(value)> loss_r = [f](value x) { return tw::sum(f(x)); };
  for (const auto& c : cases) {
    INFO("op " << name << " at " << c.x);
    require_same("static value", as_tensor(f(c.x)), c.value);
    require_same("runtime value", fr(value(c.x)).to_tensor(), c.value);
    const tensor<double> X = repeated(c.x), V = repeated(c.value);
    require_same("static vmap", as_tensor(tw::vmap(f)(X)), V);
    require_same("static vmap, batching rules", as_tensor(tw::vmap(f, tw::strategy::batched)(X)), V);
    require_same("runtime vmap (fused where it can)", tw::vmap(fr)(X).to_tensor(), V);
    require_same("runtime vmap, batching rules", tw::vmap(fr, tw::strategy::batched)(X).to_tensor(), V);
    if (!c.check_grad) continue;
    require_same("static grad", as_tensor(tw::grad(loss)(c.x)), c.grad);
    require_same("runtime grad", tw::grad(loss_r)(value(c.x)).to_tensor(), c.grad);
    // Forward mode sums the outputs' tangents: one NaN output makes every directional
    // derivative NaN (torch's too), so a case whose gradient is partly finite skips it.
    if (!any_nan(c.value) || all_nan(c.grad)) {
      require_same("static jacfwd", as_tensor(tw::jacfwd(loss)(c.x)), c.grad);
      require_same("runtime jacfwd", tw::jacfwd(loss_r)(value(c.x)).to_tensor(), c.grad);
    }
    const tensor<double> G = repeated(c.grad);
    require_same("static vmap(grad)", as_tensor(tw::vmap(tw::grad(loss))(X)), G);
    require_same("static vmap(grad), batching rules", as_tensor(tw::vmap(tw::grad(loss), tw::strategy::batched)(X)), G);
    require_same("runtime vmap(grad) (fused where it can)", tw::vmap(tw::grad(loss_r))(X).to_tensor(), G);
    require_same("runtime vmap(grad), batching rules", tw::vmap(tw::grad(loss_r), tw::strategy::batched)(X).to_tensor(),
                 G);
  }
}

/// The same for a function of numbers: grad's tape-free path (scalar_dual) and the runtime path.
template <class F>
void check_number_edges(const std::string& name, F f, const std::vector<std::array<double, 3>>& cases) {
  std::function<value(value)> fr = [f](value x) { return value(f(x)); };
  for (const auto& [x, v, g] : cases) {
    INFO("op " << name << " at " << x);
    require_same("value on numbers", num(f(x)), num(v));
    require_same("grad on numbers", num(tw::grad(f)(x)), num(g));
    require_same("runtime grad", tw::grad(fr)(value(x)).to_tensor(), num(g));
  }
}

}  // namespace

TEST_CASE("prod's gradient at zero elements is torch's: the product of the others, no 0/0") {
  check_edges("prod", [](auto x) { return tw::prod(x); },
              {at(vec({0, 2, 3}), num(0), vec({6, 0, 0})), at(vec({0, 0, 3}), num(0), vec({0, 0, 0})),
               at(vec({2, 3, 4}), num(24), vec({12, 8, 6})), at(vec({2, 3, 0, 4, 5}), num(0), vec({0, 0, 120, 0, 0})),
               at(vec({0}), num(0), vec({1})),
               at(vec({-2, 0.5, 3, 7, -1, 4, 0.25}), num(21), vec({-10.5, 42, 7, 3, -21, 5.25, 84}))});
  check_edges("prod dim 1", [](auto x) { return tw::prod(x, 1); },
              {at(mat(2, 3, {0, 2, 3, 1, 0, 0}), vec({0, 0}), mat(2, 3, {6, 0, 0, 0, 0, 0}))});
  check_edges("prod dim 0 keepdim", [](auto x) { return tw::prod(x, 0, true); },
              {at(mat(3, 2, {0, 2, 3, 0, 5, 7}), mat(1, 2, {0, 0}), mat(3, 2, {15, 0, 0, 14, 0, 0}))});
  check_number_edges("prod of a number", [](auto x) { return tw::prod(x); }, {{{0.0, 0.0, 1.0}}, {{-3.0, -3.0, 1.0}}});
}

TEST_CASE("prod's higher derivatives at zero elements are exact") {
  // f = x0 x1 x2: H[i][j] = the third element (i != j).
  auto f = [](auto x) { return tw::prod(x); };
  std::function<value(value)> fr = [](value x) { return tw::prod(x); };
  for (const auto& x : {vec({0, 0, 3}), vec({0, 2, 3}), vec({4, 2, 3})}) {
    INFO("at " << x);
    const double* e = x.data();
    const tensor<double> H = mat(3, 3, {0, e[2], e[1], e[2], 0, e[0], e[1], e[0], 0});
    require_same("static hessian", tw::hessian(f)(x), H);
    require_same("static jacrev(jacfwd)", tw::jacrev(tw::jacfwd(f))(x), H);
    require_same("runtime hessian", tw::hessian(fr)(value(x)).to_tensor(), H);
  }
}

TEST_CASE("pow's derivative at a zero base is torch's where the exponent is 0 or 1: 0, not 0 * inf") {
  // d/dx x^b = b x^(b - 1) is 0 * inf at x = 0 for b = 0, and so is the second derivative for b = 1.
  check_edges("pow(x, 0)", [](auto x) { return tw::pow(x, 0.0); },
              {at(vec({0, 2, -1}), vec({1, 1, 1}), vec({0, 0, 0}))});
  check_edges("pow(x, 1)", [](auto x) { return tw::pow(x, 1.0); },
              {at(vec({0, 2, -1}), vec({0, 2, -1}), vec({1, 1, 1}))});
  check_number_edges("pow of a number", [](auto x) { return tw::pow(x, 0.0) + tw::pow(x, 1.0); }, {{{0.0, 1.0, 1.0}}});
  // Second derivatives of 1 + x + x^2 + x^3: 2 + 6 x, on every path and form.
  auto f = [](auto x) { return tw::sum(tw::pow(x, 0.0) + tw::pow(x, 1.0) + tw::pow(x, 2.0) + tw::pow(x, 3.0)); };
  std::function<value(value)> fr = [f](value x) { return f(x); };
  const tensor<double> x = vec({0, 0, 1}), H = mat(3, 3, {2, 0, 0, 0, 2, 0, 0, 0, 8});
  require_same("static hessian", tw::hessian(f)(x), H);
  require_same("static jacrev(jacfwd)", tw::jacrev(tw::jacfwd(f))(x), H);
  require_same("runtime hessian", tw::hessian(fr)(value(x)).to_tensor(), H);
  const tensor<double> X = tw::stack({x, x});
  const tensor<double> HH = tw::stack({H, H});
  require_same("vmap(hessian), elementwise jets", tw::vmap(tw::hessian(f))(X), HH);
  require_same("vmap(hessian), batching rules", tw::vmap(tw::hessian(f), tw::strategy::batched)(X), HH);
  require_same("runtime vmap(hessian)", tw::vmap(tw::hessian(fr))(value(X)).to_tensor(), HH);
  CHECK(tw::grad(tw::grad([](auto a) { return tw::pow(a, 1.0); }))(0.0) == 0.0);
}

TEST_CASE("norm's derivative at a zero vector is 0 (torch's subgradient), p = 1, 2, inf") {
  const std::vector<edge_case> zero{at(vec({0, 0, 0}), num(0), vec({0, 0, 0})), at(vec({0}), num(0), vec({0}))};
  check_edges("norm", [](auto x) { return tw::norm(x); }, zero);
  check_edges("norm p=2", [](auto x) { return tw::norm(x, 2.0); }, zero);
  check_edges("norm p=1", [](auto x) { return tw::norm(x, 1.0); }, zero);
  check_edges("norm p=inf", [](auto x) { return tw::norm(x, inf); }, zero);
  check_edges("norm(x - x)", [](auto x) { return tw::norm(x - x); }, {at(vec({1, -2}), num(0), vec({0, 0}))});
  check_edges("norm(x - x) p=inf", [](auto x) { return tw::norm(x - x, inf); },
              {at(vec({1, -2}), num(0), vec({0, 0}))});
  // A masked-out value: where(...) picks the constant 0 everywhere.
  check_edges("norm(where(x > 10, x, 0))", [](auto x) { return tw::norm(tw::where(tw::gt(x, 10.0), x, 0.0)); },
              {at(vec({1, 2}), num(0), vec({0, 0})), at(vec({3, 40}), num(40), vec({0, 1}))});
  check_edges("norm dim 1", [](auto x) { return tw::norm(x, 2.0, 1); },
              {at(mat(2, 2, {0, 0, 3, 4}), vec({0, 5}), mat(2, 2, {0, 0, 0.6, 0.8}))});
  // Away from zero the usual derivative; the second derivative at zero is finite.
  check_edges("norm", [](auto x) { return tw::norm(x); }, {at(vec({3, 4}), num(5), vec({0.6, 0.8}))});
  std::function<value(value)> fr = [](value x) { return tw::norm(x); };
  require_same("static hessian at 0", tw::hessian([](auto x) { return tw::norm(x); })(vec({0, 0})),
               mat(2, 2, {0, 0, 0, 0}));
  require_same("runtime hessian at 0", tw::hessian(fr)(value(vec({0, 0}))).to_tensor(), mat(2, 2, {0, 0, 0, 0}));
}

TEST_CASE("logsumexp with an infinite maximum: torch's values, the softmax as gradient") {
  const double e1 = std::exp(1.0), e2 = std::exp(2.0);
  check_edges("logsumexp", [](auto x) { return tw::logsumexp(x); },
              {at(vec({inf, 1}), num(inf), vec({1, 0})), at(vec({-inf, -inf}), num(-inf), vec({0.5, 0.5})),
               at(vec({-inf, 0}), num(0), vec({0, 1})), at(vec({1, inf, inf}), num(inf), vec({0, 0.5, 0.5})),
               at(vec({1, 2}), num(std::log(e1 + e2)), vec({e1 / (e1 + e2), e2 / (e1 + e2)})),
               at(vec({NaN, 1}), num(NaN), vec({NaN, NaN}))});
  check_edges("logsumexp dim 1", [](auto x) { return tw::logsumexp(x, 1); },
              {at(mat(2, 2, {inf, 1, -inf, -inf}), vec({inf, -inf}), mat(2, 2, {1, 0, 0.5, 0.5}))});
}

TEST_CASE("softmax and log_softmax with infinities give torch's values") {
  // A -inf element (a masked logit) is an ordinary case; a +inf one or a row of -inf is NaN.
  check_edges("softmax", [](auto x) { return tw::softmax(x, -1); },
              {at(vec({-inf, 1}), vec({0, 1}), vec({0, 0})), value_only(vec({inf, 1}), vec({NaN, NaN})),
               value_only(vec({-inf, -inf}), vec({NaN, NaN}))});
  check_edges("log_softmax", [](auto x) { return tw::log_softmax(x, -1); },
              {at(vec({-inf, 1}), vec({-inf, 0}), vec({1, -1})), value_only(vec({inf, 1}), vec({NaN, NaN})),
               value_only(vec({-inf, -inf}), vec({NaN, NaN})), value_only(vec({1, NaN}), vec({NaN, NaN}))});
}

TEST_CASE("maximum, minimum and relu propagate NaN as torch") {
  // torch's gradients: a NaN comparison gives the whole gradient to both arguments.
  const tensor<double> x = vec({NaN, 0, 2, 1});
  check_edges("maximum(x, 1)", [](auto x) { return tw::maximum(x, 1.0); },
              {at(x, vec({NaN, 1, 2, 1}), vec({1, 0, 1, 0.5}))});
  check_edges("maximum(1, x)", [](auto x) { return tw::maximum(1.0, x); },
              {at(x, vec({NaN, 1, 2, 1}), vec({1, 0, 1, 0.5}))});
  check_edges("minimum(x, 1)", [](auto x) { return tw::minimum(x, 1.0); },
              {at(x, vec({NaN, 0, 1, 1}), vec({1, 1, 0, 0.5}))});
  check_edges("minimum(1, x)", [](auto x) { return tw::minimum(1.0, x); },
              {at(x, vec({NaN, 0, 1, 1}), vec({1, 1, 0, 0.5}))});
  const tensor<double> y = vec({1, NaN});
  check_edges("maximum(x, y), NaN in y", [y](auto x) { return tw::maximum(x, y); },
              {at(vec({2, 0}), vec({2, NaN}), vec({1, 1}))});
  check_edges("minimum(y, x), NaN in y", [y](auto x) { return tw::minimum(y, x); },
              {at(vec({2, 0}), vec({1, NaN}), vec({0, 1}))});
  check_edges("relu", [](auto x) { return tw::relu(x); },
              {at(vec({NaN, -1, 2, 0}), vec({NaN, 0, 2, 0}), vec({0, 0, 1, 0}))});
  check_number_edges("maximum(x, 1) on numbers", [](auto x) { return tw::maximum(x, 1.0); },
                     {{{NaN, NaN, 1.0}}, {{3.0, 3.0, 1.0}}});
  check_number_edges("maximum(1, x) on numbers", [](auto x) { return tw::maximum(1.0, x); },
                     {{{NaN, NaN, 1.0}}, {{0.0, 1.0, 0.0}}});
  check_number_edges("minimum(1, x) on numbers", [](auto x) { return tw::minimum(1.0, x); }, {{{NaN, NaN, 1.0}}});
  check_number_edges("relu on numbers", [](auto x) { return tw::relu(x); }, {{{NaN, NaN, 0.0}}, {{2.0, 2.0, 1.0}}});
}

TEST_CASE("amax and amin propagate NaN as torch, with a NaN gradient over the row") {
  // The fixed-rows loop (static vmap's automatic form on these 1-D rows) and the batching rules
  // agree: torch's NaN for every element of a row whose extremum is NaN.
  check_edges("amax", [](auto x) { return tw::amax(x); },
              {at(vec({NaN, 1, 2}), num(NaN), vec({NaN, NaN, NaN})), at(vec({1, NaN}), num(NaN), vec({NaN, NaN})),
               at(vec({NaN, NaN}), num(NaN), vec({NaN, NaN})), at(vec({2, 5, 5}), num(5), vec({0, 0.5, 0.5}))});
  check_edges("amin", [](auto x) { return tw::amin(x); },
              {at(vec({3, NaN, 1}), num(NaN), vec({NaN, NaN, NaN})), at(vec({NaN, NaN}), num(NaN), vec({NaN, NaN})),
               at(vec({2, -1, 4}), num(-1), vec({0, 1, 0}))});
  check_edges("amax dim 1", [](auto x) { return tw::amax(x, 1); },
              {at(mat(2, 2, {NaN, NaN, 1, 3}), vec({NaN, 3}), mat(2, 2, {NaN, NaN, 0, 1}))});
}

TEST_CASE("sign propagates NaN (as NumPy and JAX); its derivative is 0") {
  check_edges("sign", [](auto x) { return tw::sign(x); },
              {at(vec({NaN, -2, 0, 3, -inf, inf}), vec({NaN, -1, 0, 1, -1, 1}), vec({0, 0, 0, 0, 0, 0}))});
  check_edges("sign(x) * x", [](auto x) { return tw::sign(x) * x; },
              {at(vec({NaN, -2, 3}), vec({NaN, 2, 3}), vec({NaN, -1, 1}))});
  check_number_edges("sign on numbers", [](auto x) { return tw::sign(x); },
                     {{{NaN, NaN, 0.0}}, {{-2.0, -1.0, 0.0}}, {{0.0, 0.0, 0.0}}});
  std::function<value(value)> fr = [](value x) { return tw::sign(x); };
  REQUIRE(std::isnan(tw::sign(tw::tensor<float>({2}, {std::numeric_limits<float>::quiet_NaN(), 1.0f})).data()[0]));
  REQUIRE(std::isnan(fr(value(NaN)).item()));
}

TEST_CASE("logsumexp's second derivatives at tied maxima are diag(p) - p pᵀ (p the softmax)") {
  auto lse = [](auto x) { return tw::logsumexp(x); };
  std::function<value(value)> lse_r = [](value x) { return tw::logsumexp(x); };
  for (const auto& x : {vec({0.3, 0.3, 0.3}), vec({0.2, 0.3, 0.3}), vec({1, 1}), vec({-2, 0.5, 0.5, 0.5}), vec({4})}) {
    INFO("at " << x);
    const tensor<double> p = tw::softmax(x, 0);
    const std::int64_t n = x.numel();
    tensor<double> H = tw::zeros<double>({n, n});
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        H.data()[i * n + j] = (i == j ? p.data()[i] : 0.0) - p.data()[i] * p.data()[j];
    require_same("static hessian", tw::hessian(lse)(x), H);
    require_same("static jacfwd(jacrev)", tw::jacfwd(tw::jacrev(lse))(x), H);
    require_same("runtime hessian", tw::hessian(lse_r)(value(x)).to_tensor(), H);
    require_same("static vmap(hessian)", tw::vmap(tw::hessian(lse))(repeated(x)), repeated(H));
    require_same("runtime vmap(hessian)", tw::vmap(tw::hessian(lse_r))(repeated(x)).to_tensor(), repeated(H));
  }
}

TEST_CASE("a constant operand adds no term to a JVP: x * c at x = inf has tangent c, as torch's forward AD") {
  // The constant's tangent is a symbolic zero (zero_tangent.hpp): no inf * 0 in the product rule.
  const tensor<double> x = vec({inf, -inf, 1.5}), c = vec({2, -3, 0.5}), ones = vec({1, 1, 1});
  auto tangent = [&](auto f, const auto& at) {
    return as_tensor(tw::jvp(f, std::tuple{at}, std::tuple{std::remove_cvref_t<decltype(at)>(ones)}).second);
  };
  auto both = [&](const char* what, auto f, const tensor<double>& want) {
    INFO(what);
    require_same("static jvp", tangent(f, x), want);
    require_same("runtime jvp", tangent(f, value(x)), want);
    // The Jacobian is diagonal (no NaN off it): its column sums are the diagonal.
    require_same("static jacfwd", tw::sum(tw::jacfwd(f)(x), 0), want);
    require_same("runtime jacfwd", tw::sum(tw::jacfwd(f)(value(x)), 0).to_tensor(), want);
  };
  both("x * 2", [](auto v) { return v * 2.0; }, vec({2, 2, 2}));
  both("2 * x", [](auto v) { return 2.0 * v; }, vec({2, 2, 2}));
  both("x * c", [&](auto v) { return v * c; }, c);
  both("c * x", [&](auto v) { return c * v; }, c);
  both("x / 4", [](auto v) { return v / 4.0; }, vec({0.25, 0.25, 0.25}));
  both("x - c", [&](auto v) { return v - c; }, ones);
  both("c - x", [&](auto v) { return c - v; }, vec({-1, -1, -1}));
  // The one tangent of a sum takes the sum's shape when the constant broadcasts it.
  const tensor<double> C = mat(2, 3, {1, 2, 3, 4, 5, 6}), plus = mat(2, 3, {1, 1, 1, 1, 1, 1}), minus = plus * -1.0;
  require_same("static jvp of x + C", tangent([&](auto v) { return v + C; }, x), plus);
  require_same("runtime jvp of x + C", tangent([&](auto v) { return v + C; }, value(x)), plus);
  require_same("static jvp of C - x", tangent([&](auto v) { return C - v; }, x), minus);
  require_same("runtime jvp of C - x", tangent([&](auto v) { return C - v; }, value(x)), minus);
  const double s = 0.5;
  require_same("static jvp of a number + C",
               as_tensor(tw::jvp([&](auto v) { return v + C; }, std::tuple{s}, std::tuple{1.0}).second), plus);
  require_same("runtime jvp of a number + C",
               tw::jvp([&](value v) { return v + C; }, std::tuple{value(s)}, std::tuple{value(1.0)}).second.to_tensor(),
               plus);
}
