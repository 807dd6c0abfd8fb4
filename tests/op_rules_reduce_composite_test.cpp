// Table-driven rule checks of the reductions composed of primitives (mean, logsumexp, var, norm);
// see tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include <limits>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

std::vector<sampler<1>> any_rank(double lo = -1, double hi = 1) {
  return {uniform<1>({shape_t{}}, lo, hi), uniform<1>({shape_t{4}}, lo, hi), uniform<1>({shape_t{2, 3}}, lo, hi),
          uniform<1>({shape_t{3, 1}}, lo, hi)};
}
std::vector<sampler<1>> rank1_up(double lo = -1, double hi = 1) {
  return {uniform<1>({shape_t{4}}, lo, hi), uniform<1>({shape_t{2, 3}}, lo, hi),
          uniform<1>({shape_t{3, 1, 2}}, lo, hi)};
}
std::vector<sampler<1>> rank3(double lo = -1, double hi = 1) { return {uniform<1>({shape_t{2, 3, 2}}, lo, hi)}; }

}  // namespace

TEST_CASE("composite reductions: mean, logsumexp, var, norm: every rule, both paths") {
  counter() = {};
  const double inf = std::numeric_limits<double>::infinity();
  check_table(std::make_tuple(
      row<1>(
          "mean", [](auto x) { return tw::mean(x); }, any_rank()),
      row<1>(
          "mean dim -1 keepdim", [](auto x) { return tw::mean(x, -1, true); }, rank1_up()),
      row<1>(
          "logsumexp", [](auto x) { return tw::logsumexp(x); }, any_rank(-3, 3)),
      row<1>(
          "logsumexp dim 0", [](auto x) { return tw::logsumexp(x, 0); }, rank1_up(-3, 3)),
      row<1>(
          "logsumexp dims {0, 2} keepdim", [](auto x) { return tw::logsumexp(x, {0, 2}, true); }, rank3(-3, 3)),
      row<1>("var", [](auto x) { return tw::var(x); }, {uniform<1>({shape_t{4}}), uniform<1>({shape_t{2, 3}})}),
      row<1>(
          "var dim -1 correction 0", [](auto x) { return tw::var(x, -1, false, 0.0); }, rank1_up()),
      row<1>(
          "norm p=2", [](auto x) { return tw::norm(x); }, any_rank()),
      row<1>(
          "norm p=1 dim -1", [](auto x) { return tw::norm(x, 1.0, -1); }, rank1_up()),
      row<1>("norm p=inf", [inf](auto x) { return tw::norm(x, inf); }, any_rank())));
  counter().report("composite reductions");
  REQUIRE(counter().total() > 320);
}
