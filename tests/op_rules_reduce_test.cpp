// Table-driven rule checks of the reductions (all dims, given dims, keepdim); see
// tests/op_checker.hpp.
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

tw::reduction_dims all() { return {{}, false, true}; }
tw::reduction_dims last_keep() { return {{-1}, true, false}; }
tw::reduction_dims first() { return {{0}, false, false}; }
tw::reduction_dims outer_two() { return {{0, 2}, false, false}; }

}  // namespace

TEST_CASE("primitive reductions: sum, prod, amax, amin: every rule, both paths") {
  counter() = {};
  check_table(std::make_tuple(prim<1>("sum", tw::sum_op{}, any_rank()),
                              prim<1>("sum dim 0", tw::sum_op{{0}, false, false}, rank1_up()),
                              prim<1>("sum dim -1 keepdim", tw::sum_op{{-1}, true, false}, rank1_up()),
                              prim<1>("sum dims {0, 2}", tw::sum_op{{0, 2}, false, false}, rank3()),
                              prim<1>("prod", tw::prod_op{{}, all()}, any_rank(0.5, 1.5)),
                              prim<1>("prod dim 0", tw::prod_op{{}, first()}, rank1_up(0.5, 1.5)),
                              prim<1>("prod dim -1 keepdim", tw::prod_op{{}, last_keep()}, rank1_up(0.5, 1.5)),
                              prim<1>("amax", tw::amax_op{{}, all()}, any_rank()),
                              prim<1>("amax dim -1 keepdim", tw::amax_op{{}, last_keep()}, rank1_up()),
                              prim<1>("amax dims {0, 2}", tw::amax_op{{}, outer_two()}, rank3()),
                              prim<1>("amin", tw::amin_op{{}, all()}, any_rank()),
                              prim<1>("amin dim 0", tw::amin_op{{}, first()}, rank1_up())));
  counter().report("primitive reductions");
  REQUIRE(counter().total() > 400);
}

TEST_CASE("reductions raise tower::error naming the op and the shapes") {
  const tw::tensor<double> x = sample({2, 3});
  REQUIRE_THROWS_WITH(tw::sum(x, 2), Catch::Contains("sum") && Catch::Contains("dim 2"));
  REQUIRE_THROWS_WITH(tw::amax(x, {0, 0}), Catch::Contains("amax") && Catch::Contains("repeated"));
  REQUIRE_THROWS_WITH(tw::norm(x, 3.0), Catch::Contains("norm"));
  REQUIRE_THROWS_WITH(tw::dot(x, x), Catch::Contains("dot") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::var(tw::tensor<double>({1}, {1.0})), Catch::Contains("var"));
}
