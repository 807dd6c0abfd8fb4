// Table-driven rule checks of reductions inside elementwise chains and of small compositions
// (dot, vecdot, a Lennard-Jones force, where), on tensors and on tw::fixed values, where a
// reduction turns elementwise jets dense; see tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

std::vector<sampler<1>> any_rank(double lo = -1, double hi = 1) {
  return {uniform<1>({shape_t{}}, lo, hi), uniform<1>({shape_t{4}}, lo, hi), uniform<1>({shape_t{2, 3}}, lo, hi)};
}
std::vector<sampler<2>> vectors(double lo = -1, double hi = 1) {
  return {uniform<2>({shape_t{4}, shape_t{4}}, lo, hi), uniform<2>({shape_t{1}, shape_t{1}}, lo, hi)};
}

}  // namespace

TEST_CASE(
    "reductions inside elementwise chains, dot, vecdot, Lennard-Jones, where: every rule, both paths, fixed values") {
  counter() = {};
  using enum kind;
  // The deep forms stand for the rule kinds on elementwise jets: the dense fallback after a
  // reduction (sum), a product of two vectors (dot), a force (Lennard-Jones).
  check_table(std::make_tuple(
      with_fixed<on_fixed_deep<vector>>(row<1>(
          "sum(sin(x)) * x", [](auto x) { return tw::sum(tw::sin(x)) * x; }, any_rank())),
      with_fixed<on_fixed<vector>>(row<1>(
          "amax(sin(x)) * x", [](auto x) { return tw::amax(tw::sin(x)) * x; }, any_rank())),
      with_fixed<on_fixed<vector>>(row<1>(
          "amin(sin(x)) * x", [](auto x) { return tw::amin(tw::sin(x)) * x; }, any_rank())),
      with_fixed<on_fixed_deep<vector, vector>>(row<2>(
          "dot(a, b) * a", [](auto a, auto b) { return tw::dot(a, b) * a; }, vectors())),
      with_fixed<on_fixed<vector, vector>>(row<2>(
          "vecdot(exp(a), b) + b", [](auto a, auto b) { return tw::vecdot(tw::exp(a), b) + b; }, vectors())),
      with_fixed<on_fixed_deep<vector, number>>(
          row<2>("Lennard-Jones force",
                 [](auto r, auto c) {
                   auto s = c / tw::sum(r * r);
                   auto s3 = s * s * s;
                   return 4.0 * (s3 * s3 - s3) * r;
                 },
                 {uniform<2>({shape_t{3}, shape_t{}}, 0.6, 1.4), uniform<2>({shape_t{2, 3}, shape_t{}}, 0.6, 1.4)}),
          0.6, 1.4),
      with_fixed<on_fixed<vector, vector>>(row<2>(
          "where(a > b, a * b, a - b)", [](auto a, auto b) { return tw::where(tw::gt(a, b), a * b, a - b); },
          vectors(-2, 2)))));
  counter().report("chains");
  REQUIRE(counter().total() > 300);
  REQUIRE(counter().per_rule["fixed vmap(grad)"] == 7);
  REQUIRE(counter().per_rule["fixed hessian (exact)"] == 4);  // sum (1), dot (2 arguments), Lennard-Jones (1)
  REQUIRE(counter().per_rule["fixed vmap(hessian)"] == 1);
}
