// functorch cross-check, Jacobians: jacrev and jacfwd (argnums, has_aux, pytree outputs, layout
// ops) and hessian, against functorch's numbers on both paths (tests/functorch/xcheck.hpp).
#include <catch2/catch.hpp>

#include <string>
#include <tuple>

#include "tests/functorch/xcheck.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing::functorch;

namespace {
/// The same programs for jacrev and jacfwd: `jac` is the transform, `prefix` its name.
template <class Jac>
void check_jacobian(const std::string& prefix, Jac jac) {
  const auto x3 = input("x3"), y3 = input("y3"), A23 = input("A23"), B34 = input("B34");
  auto at = [&jac](const tw::tensor<double>& x) { return [x, &jac](auto f) { return jac(f)(x); }; };

  xcheck<1>(prefix + ".sin", [](auto x) { return tw::sin(x); }, at(x3));
  xcheck<1>(prefix + ".matmul", [&B34](auto a) { return tw::matmul(a, B34); }, at(A23));
  xcheck<2>(
      prefix + ".argnums_0_1", [](auto x, auto y) { return x * tw::sum(y); },
      [&](auto f) { return jac(f, tw::argnums<0, 1>)(x3, y3); });
  xcheck<1>(prefix + ".softmax", [](auto x) { return tw::softmax(x, -1); }, at(x3));
  xcheck<1>(prefix + ".scalar_out", [](auto x) { return tw::norm(x); }, at(x3));
  xcheck<1>(prefix + ".tuple_out", [](auto x) { return std::make_tuple(tw::sin(x), tw::sum(x)); }, at(x3));
  xcheck<1>(
      prefix + ".has_aux", [](auto x) { return std::make_tuple(tw::exp(x), tw::sum(x)); },
      [&](auto f) { return jac(f, tw::has_aux)(x3); });
  xcheck<1>(prefix + ".layout", [](auto m) { return tw::reshape(tw::transpose(m, 0, 1), {6}); }, at(A23));
  xcheck<1>(prefix + ".prod", [](auto x) { return tw::prod(x); }, at(x3));
  require_all_run(prefix + ".");
}
}  // namespace

TEST_CASE("functorch cross-check: jacrev") {
  check_jacobian("jacrev", [](auto f, auto... options) { return tw::jacrev(f, options...); });
}

TEST_CASE("functorch cross-check: jacfwd") {
  check_jacobian("jacfwd", [](auto f, auto... options) { return tw::jacfwd(f, options...); });
}

TEST_CASE("functorch cross-check: hessian") {
  const auto x3 = input("x3"), A23 = input("A23"), B34 = input("B34"), M33 = input("M33");
  const double s = number("s");
  auto at = [](const tw::tensor<double>& x) { return [x](auto f) { return tw::hessian(f)(x); }; };

  xcheck<1>("hessian.cubic_prod", [](auto x) { return tw::sum(tw::pow(x, 3.0)) + tw::prod(x); }, at(x3));
  xcheck<1>("hessian.logsumexp", [](auto x) { return tw::logsumexp(x, 0); }, at(x3));
  xcheck<1>("hessian.quadratic_form", [&M33](auto x) { return tw::dot(x, tw::matmul(M33, x)); }, at(x3));
  xcheck<1>("hessian.scalar", [](auto c) { return tw::sin(c) * c; }, [&](auto f) { return tw::hessian(f)(s); });
  xcheck<1>("hessian.norm", [](auto x) { return tw::norm(x); }, at(x3));
  xcheck<1>("hessian.matrix_argument", [&B34](auto a) { return tw::sum(tw::tanh(tw::matmul(a, B34))); }, at(A23));
  require_all_run("hessian.");
}
