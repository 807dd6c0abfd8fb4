// Table-driven rule checks of linear algebra (matmul family, vecdot, dot, solve, cholesky, trace,
// outer);
// see tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

/// A well-conditioned square matrix: n I + a uniform perturbation (stacked for leading dims).
tw::tensor<double> well_conditioned(shape_t s, unsigned seed) {
  tw::tensor<double> a = sample(s, -1, 1, seed);
  const std::int64_t n = s.back();
  return tw::kernels::zip("add", a, tw::eye<double>(n) * static_cast<double>(n), [](double x, double y) { return x + y; });
}

/// Symmetric positive-definite matrices M Mᵀ + n I.
tw::tensor<double> spd(shape_t s, unsigned seed) {
  const tw::tensor<double> m = sample(s, -1, 1, seed);
  const std::int64_t n = s.back();
  return tw::matmul(m, tw::transpose(m, -1, -2)) + tw::eye<double>(n) * static_cast<double>(n);
}

}  // namespace

TEST_CASE("linear algebra: matmul family, vecdot, dot, solve, cholesky, trace, outer: every rule, both paths") {
  counter() = {};
  auto solve_samples = [](shape_t a, shape_t b) {
    return [=](unsigned seed) { return std::array<tw::tensor<double>, 2>{well_conditioned(a, seed), sample(b, -1, 1, seed + 3)}; };
  };
  check_table(std::make_tuple(
      prim<2>("matmul (stacks of matrices)", tw::matmul_op{},
              {uniform<2>({shape_t{2, 3}, shape_t{3, 4}}), uniform<2>({shape_t{2, 2, 3}, shape_t{3, 1}}),
               uniform<2>({shape_t{1, 2, 3}, shape_t{2, 3, 2}})}),
      row<2>("matmul (1-D operands)", [](auto a, auto b) { return tw::matmul(a, b); },
             {uniform<2>({shape_t{3}, shape_t{3}}), uniform<2>({shape_t{3}, shape_t{3, 2}}), uniform<2>({shape_t{2, 3}, shape_t{3}}),
              uniform<2>({shape_t{3}, shape_t{2, 3, 2}})}),
      row<2>("mm / mv", [](auto a, auto v) { return tw::mv(tw::mm(a, tw::transpose(a, 0, 1)), v); },
             {uniform<2>({shape_t{3, 2}, shape_t{3}})}),
      row<2>("bmm", [](auto a, auto b) { return tw::bmm(a, b); }, {uniform<2>({shape_t{2, 2, 3}, shape_t{2, 3, 2}})}),
      prim<2>("vecdot", tw::vecdot_op{},
              {uniform<2>({shape_t{3}, shape_t{3}}), uniform<2>({shape_t{2, 3}, shape_t{3}}), uniform<2>({shape_t{3}, shape_t{2, 3}}),
               uniform<2>({shape_t{2, 1, 3}, shape_t{4, 3}}), uniform<2>({shape_t{2, 3}, shape_t{2, 3}})}),
      row<2>("dot", [](auto x, auto y) { return tw::dot(x, y); }, {uniform<2>({shape_t{4}, shape_t{4}}), uniform<2>({shape_t{1}, shape_t{1}})}),
      row<2>("outer", [](auto a, auto b) { return tw::outer(a, b); }, {uniform<2>({shape_t{3}, shape_t{2}})}),
      row<1>("trace", [](auto a) { return tw::trace(a); }, {uniform<1>({shape_t{3, 3}}), uniform<1>({shape_t{2, 3}})}),
      prim<2>("solve", tw::solve_op{}, {solve_samples({3, 3}, {3, 2}), solve_samples({2, 2, 2}, {2, 1})}),
      row<2>("solve (vector right-hand side)", [](auto a, auto b) { return tw::solve(a, b); }, {solve_samples({3, 3}, {3})}),
      prim<1>("cholesky", tw::cholesky_op{},
              {[](unsigned seed) { return std::array<tw::tensor<double>, 1>{spd({3, 3}, seed)}; },
               [](unsigned seed) { return std::array<tw::tensor<double>, 1>{spd({2, 2, 2}, seed)}; }}),
      doubles_only(row<1>("cholesky of M Mᵀ + 3 I",
                          [](auto m) { return tw::cholesky(tw::matmul(m, tw::transpose(m, 0, 1)) + tw::eye<double>(3) * 3.0); },
                          {uniform<1>({shape_t{3, 3}})}))));
  counter().report("linalg");
  REQUIRE(counter().total() > 250);
}

TEST_CASE("linear algebra raises tower::error naming the op and the shapes") {
  const tw::tensor<double> a = sample({2, 3}), b = sample({2, 3});
  REQUIRE_THROWS_WITH(tw::matmul(a, b), Catch::Contains("matmul") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::mm(a, sample({3})), Catch::Contains("mm") && Catch::Contains("[3]"));
  REQUIRE_THROWS_WITH(tw::vecdot(a, sample({2})), Catch::Contains("vecdot") && Catch::Contains("[2, 3] and [2]"));
  REQUIRE_THROWS_WITH(tw::vecdot(sample({2, 3}), sample({3, 3})), Catch::Contains("vecdot") && Catch::Contains("broadcast"));
  REQUIRE_THROWS_WITH(tw::solve(tw::tensor<double>{{1.0, 2.0}, {2.0, 4.0}}, tw::tensor<double>{1.0, 1.0}),
                      Catch::Contains("solve") && Catch::Contains("singular"));
  REQUIRE_THROWS_WITH(tw::solve(a, b), Catch::Contains("solve") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::cholesky(tw::tensor<double>{{1.0, 2.0}, {2.0, 1.0}}), Catch::Contains("cholesky") && Catch::Contains("positive definite"));
  REQUIRE_THROWS_WITH(tw::matmul(sample({2, 2, 3}), sample({3, 3, 2})), Catch::Contains("matmul") && Catch::Contains("broadcastable"));
  // Under transforms, on both paths.
  REQUIRE_THROWS_WITH(tw::vmap([](auto x) { return tw::solve(x, x); })(tw::zeros<double>({2, 2, 2})), Catch::Contains("singular"));
  std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return tw::sum(tw::cholesky(x)); };
  REQUIRE_THROWS_WITH(tw::grad(f)(-tw::eye<double>(2)), Catch::Contains("positive definite"));
}
