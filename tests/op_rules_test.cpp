// Table-driven rule checks of the elementwise unary ops (exp / log / power family, and
// compositions with scalar operands) (see tests/op_checker.hpp for what each
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

template <class Op>
auto unary_row(const char* name, Op op, double lo, double hi) {
  return traced(with_scalars(prim<1>(name, op, unary(lo, hi))));
}

}  // namespace

TEST_CASE("elementwise unary ops (exp, log, powers): every rule, both paths") {
  counter() = {};
  // On tw::fixed values too; the deep forms stand for the rule kinds on elementwise jets: a
  // transcendental's own rule (exp), the generic per-element rule (square).
  using V = on_fixed<kind::vector>;
  using deep = on_fixed_deep<kind::vector>;
  check_table(std::make_tuple(
      with_fixed<V>(unary_row("neg", tw::neg_op{}, -2, 2)),
      with_fixed<V>(unary_row("abs", tw::abs_op{}, -2, 2), 0.2, 1), unary_row("sign", tw::sign_op{}, -2, 2),
      with_fixed<deep>(unary_row("exp", tw::exp_op{}, -2, 2)), with_fixed<V>(unary_row("expm1", tw::expm1_op{}, -2, 2)),
      with_fixed<V>(unary_row("log", tw::log_op{}, 0.2, 3), 0.3, 2),
      with_fixed<V>(unary_row("log1p", tw::log1p_op{}, -0.5, 2), 0.1, 2),
      with_fixed<V>(unary_row("sqrt", tw::sqrt_op{}, 0.2, 3), 0.3, 2),
      with_fixed<V>(unary_row("rsqrt", tw::rsqrt_op{}, 0.2, 3), 0.3, 2),
      with_fixed<deep>(unary_row("square", tw::square_op{}, -2, 2)),
      with_fixed<V>(unary_row("reciprocal", tw::reciprocal_op{}, 0.3, 2), 0.3, 2)));
  counter().report("unary (exp, log, powers)");
  REQUIRE(counter().total() > 500);
  REQUIRE(counter().per_rule["fixed vmap(grad)"] == 10);
  REQUIRE(counter().per_rule["fixed vmap(hessian)"] == 2);
}

TEST_CASE("compositions with scalar operands on either side: every rule, both paths") {
  counter() = {};
  auto comp = [](const char* name, auto f, double lo, double hi) {
    return traced(with_scalars(row<1>(name, f, unary(lo, hi))));
  };
  check_table(std::make_tuple(comp(
                                  "add scalar", [](auto x) { return x + 1.5; }, -2, 2),
                              comp(
                                  "scalar sub", [](auto x) { return 1.5 - x; }, -2, 2),
                              comp(
                                  "mul self", [](auto x) { return x * x; }, -2, 2),
                              comp(
                                  "scalar div", [](auto x) { return 2.0 / x; }, 0.5, 2),
                              comp("div self+1", [](auto x) { return x / (x + 1.0); }, 0.5, 2)));
  counter().report("scalar operands");
  REQUIRE(counter().total() > 200);
}
