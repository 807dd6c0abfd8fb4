// Every unary op on tw::fixed values, and the reductions sum, amax, amin and dot, through the fixed checker
// (fixed_checker.hpp): values, grad, grad of grad, hessian and vmap(grad) with fixed_rows against
// the tensor path. (Binary ops: fixed_ops_binary_test.cpp; conversions, errors, vmap's forms and
// Jacobians on fixed values: fixed_test.cpp.)
#include <catch2/catch.hpp>

#include "tests/fixed_checker.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tw::testing::fixed_checker;

TEST_CASE("fixed: every unary op against tensors (values, grad, grad of grad, hessian, vmap(grad))") {
  using enum kind;
  // Unary ops on their domains. The deep ones stand for the rule kinds on elementwise jets: a
  // transcendental's own rule (exp, tanh), the generic per-element rule (square).
  check<vector>("neg", [](const auto& x) { return -x; });
  check<vector>("abs", [](const auto& x) { return tw::abs(x); }, 0.2, 1);
  check_deep<vector>("exp", [](const auto& x) { return tw::exp(x); });
  check<vector>("expm1", [](const auto& x) { return tw::expm1(x); });
  check<vector>("log", [](const auto& x) { return tw::log(x); }, 0.3, 2);
  check<vector>("log1p", [](const auto& x) { return tw::log1p(x); }, 0.1, 2);
  check<vector>("sqrt", [](const auto& x) { return tw::sqrt(x); }, 0.3, 2);
  check<vector>("rsqrt", [](const auto& x) { return tw::rsqrt(x); }, 0.3, 2);
  check_deep<vector>("square", [](const auto& x) { return tw::square(x); });
  check<vector>("sin", [](const auto& x) { return tw::sin(x); });
  check<vector>("cos", [](const auto& x) { return tw::cos(x); });
  check<vector>("tan", [](const auto& x) { return tw::tan(x); });
  check_deep<vector>("tanh", [](const auto& x) { return tw::tanh(x); });
  check<vector>("sinh", [](const auto& x) { return tw::sinh(x); });
  check<vector>("cosh", [](const auto& x) { return tw::cosh(x); });
  check<vector>("asin", [](const auto& x) { return tw::asin(x); }, -0.8, 0.8);
  check<vector>("acos", [](const auto& x) { return tw::acos(x); }, -0.8, 0.8);
  check<vector>("atan", [](const auto& x) { return tw::atan(x); });
  check<vector>("sigmoid", [](const auto& x) { return tw::sigmoid(x); });
  check<vector>("softplus", [](const auto& x) { return tw::softplus(x); });
  check<vector>("relu", [](const auto& x) { return tw::relu(x); }, 0.1, 1);
  check<vector>("erf", [](const auto& x) { return tw::erf(x); });
  check<vector>("reciprocal", [](const auto& x) { return tw::reciprocal(x); }, 0.3, 2);
  // A reduction to a number inside an elementwise chain (the jets' dense fallback).
  check_deep<vector>("sum", [](const auto& x) { return tw::sum(tw::sin(x)) * x; });
  check<vector>("amax", [](const auto& x) { return tw::amax(tw::sin(x)) * x; });
  check<vector>("amin", [](const auto& x) { return tw::amin(tw::sin(x)) * x; });
  WARN("fixed checker, unary ops: " << cases << " (op, rule) cases");
  CHECK(cases == 26 * 5 + 4 * 2);
}
