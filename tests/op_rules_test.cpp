// Table-driven check of every op's rules under every transform and both paths: one row per op,
// no per-op test code. For each op and sample input it checks
//   grad           against central finite differences,
//   grad(grad)     against finite differences of grad (second derivatives, scalar inputs),
//   vmap           against a loop over the batch,
//   vmap(grad)     against a loop of grad,
//   runtime path   against the static path, for grad and vmap(grad).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <tuple>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::dyn::value;
using tw::tensor;
using tw::shape_t;

namespace {

struct unary_row {
  const char* name;
  double lo, hi;  // sample domain
};

// Each row: the op as a generic function of one value, and its domain. Reductions and shape ops
// are checked through a scalar-valued composition so grad applies.
const auto unary_ops = std::make_tuple(
    std::make_pair(unary_row{"neg", -2, 2}, [](auto x) { return tw::neg(x); }),
    std::make_pair(unary_row{"sin", -2, 2}, [](auto x) { return tw::sin(x); }),
    std::make_pair(unary_row{"cos", -2, 2}, [](auto x) { return tw::cos(x); }),
    std::make_pair(unary_row{"exp", -2, 2}, [](auto x) { return tw::exp(x); }),
    std::make_pair(unary_row{"log", 0.2, 3}, [](auto x) { return tw::log(x); }),
    std::make_pair(unary_row{"tanh", -2, 2}, [](auto x) { return tw::tanh(x); }),
    std::make_pair(unary_row{"add scalar", -2, 2}, [](auto x) { return x + 1.5; }),
    std::make_pair(unary_row{"scalar sub", -2, 2}, [](auto x) { return 1.5 - x; }),
    std::make_pair(unary_row{"mul self", -2, 2}, [](auto x) { return x * x; }),
    std::make_pair(unary_row{"scalar div", 0.5, 2}, [](auto x) { return 2.0 / x; }),
    std::make_pair(unary_row{"div self+1", 0.5, 2}, [](auto x) { return x / (x + 1.0); }));

struct binary_row {
  const char* name;
  double lo, hi;
};
const auto binary_ops = std::make_tuple(
    std::make_pair(binary_row{"add", -2, 2}, [](auto x, auto y) { return x + y; }),
    std::make_pair(binary_row{"sub", -2, 2}, [](auto x, auto y) { return x - y; }),
    std::make_pair(binary_row{"mul", -2, 2}, [](auto x, auto y) { return x * y; }),
    std::make_pair(binary_row{"div", 0.5, 2}, [](auto x, auto y) { return x / y; }));

int cases = 0;

template <class Op>
void check_unary(const unary_row& row_, Op op) {
  INFO("op " << row_.name);
  // Scalars: grad and grad(grad) against finite differences, both paths.
  for (double x : {row_.lo + 0.1, 0.5 * (row_.lo + row_.hi) + 0.05, row_.hi - 0.1}) {
    auto f = [&](auto v) { return op(v) * 1.0; };
    const double d = tw::grad(f)(x);
    require_close(d, fd_derivative([&](double v) { return op(v); }, x), 1e-5);
    const double dd = tw::grad(tw::grad(f))(x);
    require_close(dd, fd_derivative([&](double v) { return tw::grad(f)(v); }, x), 1e-4);
    std::function<value(value)> fr = [&](value v) { return op(v); };
    require_close(tw::grad(fr)(x).item(), d, 1e-12);
    require_close(tw::grad(tw::grad(fr))(value(x)).item(), dd, 1e-12);
    cases += 4;
  }
  // Tensors of several shapes, including size-1 dims: sum(op(x)) under grad, vmap, vmap(grad).
  for (const tw::shape_t& s : {shape_t{4}, shape_t{2, 3}, shape_t{3, 1}}) {
    const tensor<double> x = sample(s, row_.lo, row_.hi, 7);
    auto f = [&](auto v) { return tw::sum(op(v)); };
    const tensor<double> g = tw::grad(f)(x);
    require_close(g, fd_grad([&](const tensor<double>& v) { return tw::sum(op(v)).item(); }, x), 1e-5);
    std::function<value(value)> fr = [&](value v) { return tw::sum(op(v)); };
    require_close(tw::grad(fr)(x).to_tensor(), g, 1e-12);

    // vmap over dim 0 equals a loop; and over the last dim.
    const tensor<double> vm = tw::vmap(op)(x);
    std::vector<tensor<double>> rows;
    for (std::int64_t b = 0; b < s[0]; ++b) rows.push_back(as_tensor(op(row(x, b))));
    require_close(vm, stack(rows), 1e-12);
    std::function<value(value)> opr = [&](value v) { return op(v); };
    require_close(tw::vmap(opr)(x).to_tensor(), vm, 1e-12);

    // vmap(grad) equals a loop of grad, both paths.
    const tensor<double> pg = tw::vmap(tw::grad(f))(x);
    std::vector<tensor<double>> grows;
    for (std::int64_t b = 0; b < s[0]; ++b) grows.push_back(as_tensor(tw::grad(f)(row(x, b))));
    require_close(pg, stack(grows), 1e-12);
    require_close(tw::vmap(tw::grad(fr))(x).to_tensor(), pg, 1e-12);
    cases += 5;
  }
}

template <class Op>
void check_binary(const binary_row& row_, Op op) {
  INFO("op " << row_.name);
  // Broadcasting pairs, scalars on either side.
  const std::vector<std::pair<tw::shape_t, tw::shape_t>> shapes = {
      {{3}, {3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{4}, {}}, {{}, {2, 2}}};
  for (const auto& [sa, sb] : shapes) {
    INFO("shapes " << tw::detail::shape_str(sa) << " " << tw::detail::shape_str(sb));
    const tensor<double> a = sample(sa, row_.lo, row_.hi, 3), b = sample(sb, row_.lo, row_.hi, 5);
    auto f = [&](auto x, auto y) { return tw::sum(op(x, y)); };
    const auto [ga, gb] = tw::grad(f, tw::argnums<0, 1>)(a, b);
    require_close(ga, fd_grad([&](const tensor<double>& v) { return tw::sum(op(v, b)).item(); }, a), 1e-5);
    require_close(gb, fd_grad([&](const tensor<double>& v) { return tw::sum(op(a, v)).item(); }, b), 1e-5);
    std::function<value(value, value)> fr = [&](value x, value y) { return tw::sum(op(x, y)); };
    const auto [ra, rb] = tw::grad(fr, tw::argnums<0, 1>)(a, b);
    require_close(ra.to_tensor(), ga, 1e-12);
    require_close(rb.to_tensor(), gb, 1e-12);
    cases += 3;
    if (sa.empty()) continue;
    // vmap over a's dim 0 with b unbatched, against a loop; vmap(grad) wrt both.
    const tensor<double> vm = tw::vmap(op, tw::in_dims(0, tw::none))(a, b);
    std::vector<tensor<double>> rows, grows;
    for (std::int64_t i = 0; i < sa[0]; ++i) {
      rows.push_back(as_tensor(op(row(a, i), b)));
      auto [gi, gbi] = tw::grad(f, tw::argnums<0, 1>)(row(a, i), b);
      grows.push_back(gbi);
      (void)gi;
    }
    require_close(vm, stack(rows), 1e-12);
    const auto [pa, pb] = tw::vmap(tw::grad(f, tw::argnums<0, 1>), tw::in_dims(0, tw::none))(a, b);
    require_close(pb, stack(grows), 1e-12);
    const auto [qa, qb] = tw::vmap(tw::grad(fr, tw::argnums<0, 1>), tw::in_dims(0, tw::none))(a, b);
    require_close(qa.to_tensor(), pa, 1e-12);
    require_close(qb.to_tensor(), pb, 1e-12);
    cases += 3;
  }
}

}  // namespace

TEST_CASE("every op: grad, grad(grad), vmap, vmap(grad), both paths") {
  cases = 0;
  std::apply([](const auto&... r) { (check_unary(r.first, r.second), ...); }, unary_ops);
  std::apply([](const auto&... r) { (check_binary(r.first, r.second), ...); }, binary_ops);
  WARN("op rule checker: " << cases << " (op, rule, sample) cases checked");
  REQUIRE(cases > 100);
}
