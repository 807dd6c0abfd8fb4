// Table-driven rule checks of comparisons, where, and creation ops inside transforms (see
// tests/op_checker.hpp).
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

template <class Op>
auto binary_row(const char* name, Op op, double lo, double hi) {
  return traced(with_scalars(prim<2>(name, op, binary(lo, hi))));
}

/// (cond, a, b) with a 0/1 condition; the condition is not differentiated.
std::vector<sampler<3>> where_samples() {
  std::vector<std::array<shape_t, 3>> shapes = {{shape_t{4}, shape_t{4}, shape_t{4}},
                                                {shape_t{2, 3}, shape_t{3}, shape_t{}},
                                                {shape_t{2, 1}, shape_t{1, 3}, shape_t{2, 3}},
                                                {shape_t{}, shape_t{}, shape_t{}}};
  std::vector<sampler<3>> r;
  for (const auto& s : shapes)
    r.push_back([s](unsigned seed) {
      auto x = uniform<3>(s)(seed);
      x[0] = tw::gt(x[0], 0.0);
      return x;
    });
  return r;
}

}  // namespace

TEST_CASE("comparisons, where and creation ops: every rule, both paths") {
  counter() = {};
  auto where_row = traced(prim<3>("where", tw::where_op{}, where_samples()));
  where_row.diff = {false, true, true};
  check_table(std::make_tuple(
      binary_row("eq", tw::eq_op{}, -1, 1), binary_row("ne", tw::ne_op{}, -1, 1), binary_row("lt", tw::lt_op{}, -1, 1),
      binary_row("le", tw::le_op{}, -1, 1), binary_row("gt", tw::gt_op{}, -1, 1), binary_row("ge", tw::ge_op{}, -1, 1),
      where_row,
      traced(row<2>(
          "where(x > y, x * y, y)", [](auto x, auto y) { return tw::where(tw::gt(x, y), x * y, y); }, binary(-2, 2))),
      traced(row<1>("x * zeros_like + ones_like + full_like",
                    [](auto x) { return x * tw::zeros_like(x) + tw::ones_like(x) * x + tw::full_like(x, 2.5) * x; },
                    {uniform<1>({shape_t{}}), uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 2}})}))));
  counter().report("comparisons, where, creation");
  REQUIRE(counter().total() > 300);
}
