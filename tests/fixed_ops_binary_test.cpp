// Every binary op on tw::fixed values — vector with vector, with a number on either side, with a
// size-1 vector — and where, dot, vecdot and a Lennard-Jones force, through the fixed checker
// (fixed_checker.hpp): values, grad, hessian and vmap(grad) with fixed_rows against the tensor
// path. (Unary ops: fixed_ops_unary_test.cpp.)
#include <catch2/catch.hpp>

#include <string>

#include "tests/fixed_checker.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tw::testing::fixed_checker;

TEST_CASE("fixed: every binary op against tensors (values, grad, hessian, vmap(grad))") {
  using enum kind;
  auto binary = [](const std::string& name, auto f, double lo, double hi) {
    check<vector, vector>(name, f, lo, hi);
    check<vector, number>(name + " (vector, number)", f, lo, hi);
    check<number, vector>(name + " (number, vector)", f, lo, hi);
    check<single, vector>(name + " (size 1, vector)", f, lo, hi);
  };
  binary("add", [](const auto& a, const auto& b) { return a + b; }, -1, 1);
  binary("sub", [](const auto& a, const auto& b) { return a - b; }, -1, 1);
  binary("mul", [](const auto& a, const auto& b) { return a * b; }, -1, 1);
  binary("div", [](const auto& a, const auto& b) { return a / b; }, 0.5, 2);
  binary("pow", [](const auto& a, const auto& b) { return tw::pow(a, b); }, 0.5, 2);
  binary("maximum", [](const auto& a, const auto& b) { return tw::maximum(a, b); }, -1, 1);
  binary("minimum", [](const auto& a, const auto& b) { return tw::minimum(a, b); }, -1, 1);
  binary("atan2", [](const auto& a, const auto& b) { return tw::atan2(a, b); }, 0.5, 2);
  // where with a comparison (not differentiated) choosing between two differentiated values.
  check<vector, vector>("where(gt)", [](const auto& a, const auto& b) { return tw::where(tw::gt(a, b), a * b, a - b); });
  // Reductions to a number, and compositions; the deep ones compare the Hessian with the tensor
  // path's exactly.
  check_deep<vector, vector>("dot", [](const auto& a, const auto& b) { return tw::dot(a, b) * a; });
  check<vector, vector>("vecdot", [](const auto& a, const auto& b) { return tw::vecdot(tw::exp(a), b) + b; });
  check_deep<vector, number>("lennard-jones", [](const auto& r, const auto& c) {
    auto s = c / tw::sum(r * r);
    auto s3 = s * s * s;
    return 4.0 * (s3 * s3 - s3) * r;
  }, 0.6, 1.4);
  WARN("fixed checker, binary ops: " << cases << " (op, rule) cases");
  CHECK(cases == 8 * 17 + 5 + 7 + 5 + 5);
}
