// Table-driven rule checks of the elementwise unary ops (trigonometric, hyperbolic, activations) (see tests/op_checker.hpp for what each
// row is checked for). A new op is a new row; no new test code.
#include <catch2/catch.hpp>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

/// Samples of one argument: a scalar (rank 0), a vector, a matrix, a matrix with a size-1 dim.
std::vector<sampler<1>> unary(double lo, double hi) {
  return {uniform<1>({shape_t{}}, lo, hi), uniform<1>({shape_t{4}}, lo, hi), uniform<1>({shape_t{2, 3}}, lo, hi),
          uniform<1>({shape_t{3, 1}}, lo, hi)};
}

/// The row, on tw::fixed values too (a 3-vector in [fixed_lo, fixed_hi]); Deep: with the deep checks.
template <bool Deep = false, class Op>
auto unary_row(const char* name, Op op, double lo, double hi, double fixed_lo = -1, double fixed_hi = 1) {
  return with_fixed<fixed_form<Deep, kind::vector>>(traced(with_scalars(prim<1>(name, op, unary(lo, hi)))), fixed_lo,
                                                    fixed_hi);
}

}  // namespace

TEST_CASE("elementwise unary ops (trigonometric, hyperbolic, activations): every rule, both paths") {
  counter() = {};
  check_table(std::make_tuple(unary_row("sin", tw::sin_op{}, -2, 2), unary_row("cos", tw::cos_op{}, -2, 2),
                              unary_row("tan", tw::tan_op{}, -1.2, 1.2), unary_row<true>("tanh", tw::tanh_op{}, -2, 2),
                              unary_row("sinh", tw::sinh_op{}, -2, 2), unary_row("cosh", tw::cosh_op{}, -2, 2),
                              unary_row("asin", tw::asin_op{}, -0.9, 0.9, -0.8, 0.8),
                              unary_row("acos", tw::acos_op{}, -0.9, 0.9, -0.8, 0.8),
                              unary_row("atan", tw::atan_op{}, -2, 2), unary_row("sigmoid", tw::sigmoid_op{}, -3, 3),
                              unary_row("softplus", tw::softplus_op{}, -3, 3),
                              unary_row("relu", tw::relu_op{}, -2, 2, 0.1, 1), unary_row("erf", tw::erf_op{}, -2, 2)));
  counter().report("unary (trig, activations)");
  REQUIRE(counter().total() > 500);
  REQUIRE(counter().per_rule["fixed vmap(grad)"] == 13);
  REQUIRE(counter().per_rule["fixed vmap(hessian)"] == 1);
}
