// Mixing the paths: static transforms around type-erased (runtime) code, and runtime transforms
// around generic code, against analytic derivatives and the pure paths.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {
// f(x) = x sin x, erased.
const std::function<value(value)> erased = [](value x) { return tw::sin(x) * x; };
double f1(double x) { return std::sin(x) + x * std::cos(x); }      // f'
double f2(double x) { return 2 * std::cos(x) - x * std::sin(x); }  // f''
}  // namespace

TEST_CASE("static grad around runtime code") {
  for (double x : {-1.0, 0.5, 2.0}) {
    require_close(tw::grad([&](auto v) { return erased(v); })(x), f1(x), 1e-12);
    // static ops before and after the runtime call
    auto g = tw::grad([&](auto v) { return erased(tw::exp(v)) * v; })(x);
    const double s = std::exp(x);
    require_close(g, f1(s) * s * x + std::sin(s) * s, 1e-12);
    // nested static grads around runtime code
    require_close(tw::grad(tw::grad([&](auto v) { return erased(v); }))(x), f2(x), 1e-12);
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

TEST_CASE("static vmap and jvp around runtime code") {
  const tensor<double> X = sample({5}, -2, 2, 3);
  const tensor<double> y = tw::vmap([&](auto v) { return erased(v); })(X).to_tensor();
  const tensor<double> g = tw::vmap(tw::grad([&](auto v) { return erased(v); }))(X);
  for (std::int64_t i = 0; i < 5; ++i) {
    require_close(y(i), std::sin(X(i)) * X(i), 1e-12);
    require_close(g(i), f1(X(i)), 1e-12);
  }
  const auto [p, t] = tw::jvp([&](auto v) { return erased(v); }, std::tuple{0.7}, std::tuple{2.0});
  require_close(p.item(), std::sin(0.7) * 0.7, 1e-12);
  require_close(t.item(), 2.0 * f1(0.7), 1e-12);
}

TEST_CASE("runtime transforms around generic code, and static transforms inside erased functions") {
  // A generic lambda called with dyn values runs on the runtime path.
  auto generic = [](auto x) { return tw::sin(x) * x; };
  std::function<value(value)> g = [&](value x) { return tw::grad(generic)(x); };  // static API, dyn values
  require_close(tw::grad(g)(0.3).item(), f2(0.3), 1e-12);
  require_close(tw::vmap(g)(tensor<double>({2}, {0.3, 0.9})).to_tensor()(1), f1(0.9), 1e-12);
}

TEST_CASE("jvp of a generic function at dyn::value primals runs it on the runtime path") {
  // jvp's output check once instantiated f on static duals of dyn::value (a compile error).
  const tw::tensor<double> x({2, 3}, {1, 2, 3, 4, 5, 6});
  auto f = [](auto y) { return tw::softplus(y) * y; };
  auto g = [f](auto v) { return tw::jvp(f, std::tuple{v}, std::tuple{tw::ones_like(v)}).second; };
  const tw::tensor<double> want = g(x);
  require_close(g(tw::dyn::value(x)).to_tensor(), want, 1e-14);
  require_close(tw::vmap(g)(tw::dyn::value(x)).to_tensor(), want, 1e-14);
  require_close(tw::grad([g](auto v) { return tw::sum(g(v)); })(tw::dyn::value(x)).to_tensor(),
                tw::grad([g](auto v) { return tw::sum(g(v)); })(x), 1e-12);
}
