// Table-driven rule checks of comparisons, where, clamp, cast, stop_gradient and creation ops inside transforms (see
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

TEST_CASE("comparisons, where, clamp, cast and creation ops: every rule, both paths") {
  counter() = {};
  auto where_row = traced(prim<3>("where", tw::where_op{}, where_samples()));
  where_row.diff = {false, true, true};
  check_table(std::make_tuple(
      binary_row("eq", tw::eq_op{}, -1, 1), binary_row("ne", tw::ne_op{}, -1, 1), binary_row("lt", tw::lt_op{}, -1, 1),
      binary_row("le", tw::le_op{}, -1, 1), binary_row("gt", tw::gt_op{}, -1, 1), binary_row("ge", tw::ge_op{}, -1, 1),
      where_row,
      traced(row<2>(
          "where(x > y, x * y, y)", [](auto x, auto y) { return tw::where(tw::gt(x, y), x * y, y); }, binary(-2, 2))),
      with_fixed<on_fixed_deep<kind::vector>>(traced(
          with_scalars(row<1>("clamp(x, -0.5, 0.5) * x", [](auto x) { return tw::clamp(x, -0.5, 0.5) * x; },
                              {uniform<1>({shape_t{}}), uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 3}})})))),
      with_fixed<on_fixed<kind::vector, kind::vector>>(traced(row<2>(
          "clamp(x, y - 0.5, 0.5) * x", [](auto x, auto y) { return tw::clamp(x, y - 0.5, 0.5) * x; }, binary(-1, 1)))),
      doubles_only(
          with_scalars(row<1>("cast<double>(sin(x)) * x", [](auto x) { return tw::cast<double>(tw::sin(x)) * x; },
                              {uniform<1>({shape_t{}}), uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 3}})}))),
      traced(row<1>("x * zeros_like + ones_like + full_like",
                    [](auto x) { return x * tw::zeros_like(x) + tw::ones_like(x) * x + tw::full_like(x, 2.5) * x; },
                    {uniform<1>({shape_t{}}), uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 2}})}))));
  counter().report("comparisons, where, creation");
  REQUIRE(counter().total() > 300);
}

TEST_CASE("stop_gradient: the value in every form, no derivative through it at any level, both paths") {
  counter() = {};
  // Its value under every physical form of vmap; the rows have no derivative to check.
  auto sg_row =
      traced(with_scalars(prim<1>("stop_gradient", tw::stop_gradient_op{},
                                  {uniform<1>({shape_t{}}), uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 3}})})));
  sg_row.diff = {false};
  check_table(std::make_tuple(sg_row));
  counter().report("stop_gradient");
  REQUIRE(counter().total() > 10);
  // sum(x^2 stop_gradient(x)): gradient 2 x stop_gradient(x) = 2 x^2 (x^3 would give 3 x^2),
  // Hessian diag(2 x).
  auto f = [](auto x) { return tw::sum(x * x * tw::stop_gradient(x)); };
  std::function<tw::dyn::value(tw::dyn::value)> fr = [](tw::dyn::value x) {
    return tw::sum(x * x * tw::stop_gradient(x));
  };
  for (std::int64_t n : {3, 12}) {  // automatic rows and the batching rules
    const tw::tensor<double> X = sample({4, n}, -1, 1, 7), G = X * X * 2.0;
    tw::tensor<double> H = tw::zeros<double>({4, n, n});
    for (std::int64_t b = 0; b < 4; ++b)
      for (std::int64_t i = 0; i < n; ++i) H.data()[(b * n + i) * n + i] = 2 * X(b, i);
    require_close(tw::vmap(tw::grad(f))(X), G, 1e-14);
    require_close(tw::vmap(tw::grad(f), tw::strategy::batched)(X), G, 1e-14);
    require_close(tw::vmap(tw::grad(f), tw::strategy::packets)(X), G, 1e-14);
    require_close(tw::vmap(tw::jacfwd(f))(X), G, 1e-14);
    require_close(tw::vmap(tw::grad(fr))(X).to_tensor(), G, 1e-14);
    require_close(tw::vmap(tw::jacfwd(fr))(X).to_tensor(), G, 1e-14);
    require_close(tw::vmap(tw::hessian(f))(X), H, 1e-14);
    require_close(tw::vmap(tw::hessian(f), tw::strategy::batched)(X), H, 1e-14);
    require_close(tw::vmap(tw::jacrev(tw::jacrev(f)))(X), H, 1e-14);
    require_close(tw::vmap(tw::hessian(fr))(X).to_tensor(), H, 1e-14);
  }
  auto u = [](auto x) { return x * x * tw::stop_gradient(x); };
  CHECK(tw::grad(u)(0.7) == Approx(0.98).epsilon(1e-15));
  CHECK(tw::grad(tw::grad(u))(0.7) == Approx(1.4).epsilon(1e-15));
  CHECK(std::get<1>(tw::jvp(u, std::tuple{0.7}, std::tuple{1.0})) == Approx(0.98).epsilon(1e-15));
  const auto gv =
      tw::grad([](auto x) { return tw::sum(x * x * tw::stop_gradient(x)); })(tw::fixed<double, 3>{{0.5, -1.0, 2.0}});
  CHECK((gv[0] == 0.5 && gv[1] == 2.0 && gv[2] == 8.0));
}
