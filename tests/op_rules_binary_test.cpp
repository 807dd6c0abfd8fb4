// Table-driven rule checks of the elementwise binary ops (broadcasting, scalars either side);
// see tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

/// Broadcasting pairs: equal shapes, trailing broadcast, size-1 dims on both sides, a scalar
/// (rank 0) on either side, two scalars.
std::vector<sampler<2>> binary(double lo, double hi) {
  return {uniform<2>({shape_t{3}, shape_t{3}}, lo, hi),       uniform<2>({shape_t{2, 3}, shape_t{3}}, lo, hi),
          uniform<2>({shape_t{2, 1}, shape_t{1, 3}}, lo, hi), uniform<2>({shape_t{4}, shape_t{}}, lo, hi),
          uniform<2>({shape_t{}, shape_t{2, 2}}, lo, hi),     uniform<2>({shape_t{}, shape_t{}}, lo, hi)};
}

/// The row, on tw::fixed values too: two 3-vectors, a number on either side, a size-1 vector.
template <class Op>
auto binary_row(const char* name, Op op, double lo, double hi) {
  using enum kind;
  return with_fixed<on_fixed<vector, vector>, on_fixed<vector, number>, on_fixed<number, vector>,
                    on_fixed<single, vector>>(traced(with_scalars(prim<2>(name, op, binary(lo, hi)))), lo, hi);
}

}  // namespace

TEST_CASE("elementwise binary ops: every rule, both paths") {
  counter() = {};
  check_table(std::make_tuple(binary_row("add", tw::add_op{}, -2, 2), binary_row("sub", tw::sub_op{}, -2, 2),
                              binary_row("mul", tw::mul_op{}, -2, 2), binary_row("div", tw::div_op{}, 0.5, 2),
                              binary_row("pow", tw::pow_op{}, 0.5, 2), binary_row("maximum", tw::maximum_op{}, -2, 2),
                              binary_row("minimum", tw::minimum_op{}, -2, 2),
                              binary_row("atan2", tw::atan2_op{}, 0.3, 2)));
  counter().report("binary");
  REQUIRE(counter().total() > 500);
  REQUIRE(counter().per_rule["fixed vmap(grad)"] == 8 * 4);
}
