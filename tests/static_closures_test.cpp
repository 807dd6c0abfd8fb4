// Static-path programs whose functions capture values of enclosing transforms, or that vmap's
// automatic probes instantiate on values they cannot run on: each computes what the runtime path
// (a type-erased std::function of dyn::value) and functorch compute, checked against both the
// runtime path and an analytic value (issues 32 and 33).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <tuple>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {
using rfn = std::function<value(value)>;
using rfn2 = std::function<value(value, value)>;

/// Each program is written once, generic in how its functions are passed: as they are (the
/// static path) or type-erased (the runtime path).
struct static_path {
  template <class F>
  F operator()(F f) const {
    return f;
  }
  template <class F>
  F binary(F f) const {
    return f;
  }
};
struct runtime_path {
  template <class F>
  rfn operator()(F f) const {
    return f;
  }
  template <class F>
  rfn2 binary(F f) const {
    return f;
  }
};

tensor<double> plain(const tensor<double>& t) { return t; }
tensor<double> plain(double x) { return tensor<double>(x); }
tensor<double> plain(const value& v) { return v.to_tensor(); }

/// Runs program(path) on both paths; the static result must be a plain value (no wrapper and
/// no dyn::value), and both must equal `expected`.
template <class P>
void both_paths(P program, const tensor<double>& expected, double tol = 1e-12) {
  auto s = program(static_path{});
  static_assert(std::is_same_v<decltype(s), tensor<double>> || std::is_same_v<decltype(s), double>,
                "the static path returns a plain value");
  require_close(plain(s), expected, tol);
  require_close(plain(program(runtime_path{})), expected, tol);
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

}  // namespace

TEST_CASE("nested vmap closure: vmap(x -> vmap(y -> x + y)(Y))(X), both paths") {
  const tensor<double> X = sample({3}, -1, 1, 1), Y = sample({4}, -1, 1, 2);
  tensor<double> expected({3, 4}, std::vector<double>(12));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 4; ++j) expected.data()[i * 4 + j] = X(i) + Y(j);
  both_paths(
      [&](auto E) { return tw::vmap(E([&](auto x) { return tw::vmap(E([&](auto y) { return x + y; }))(Y); }))(X); },
      expected);

  // Three deep, each level capturing the ones outside: r[i][j][k] = X[i] * Y[j] + Z[k].
  const tensor<double> Z = sample({2}, -1, 1, 3);
  tensor<double> e3({3, 4, 2}, std::vector<double>(24));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      for (std::int64_t k = 0; k < 2; ++k) e3.data()[(i * 4 + j) * 2 + k] = X(i) * Y(j) + Z(k);
  both_paths(
      [&](auto E) {
        return tw::vmap(E([&](auto x) {
          return tw::vmap(E([&](auto y) { return tw::vmap(E([&](auto z) { return x * y + z; }))(Z); }))(Y);
        }))(X);
      },
      e3);
}

TEST_CASE("cat and stack of a plain and a batched value, in_dims none and 0, both paths") {
  const tensor<double> c = sample({2}, -1, 1, 4), X = sample({3, 2}, -1, 1, 5);
  tensor<double> cat_expected({3, 4}, std::vector<double>(12)), stack_expected({3, 2, 2}, std::vector<double>(12));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) {
      cat_expected.data()[i * 4 + j] = c(j);
      cat_expected.data()[i * 4 + 2 + j] = X(i, j);
      stack_expected.data()[i * 4 + j] = c(j);
      stack_expected.data()[i * 4 + 2 + j] = X(i, j);
    }
  both_paths(
      [&](auto E) {
        return tw::vmap(E.binary([](auto a, auto x) { return tw::cat(std::tuple{a, x}); }), tw::in_dims(tw::none, 0))(
            c, X);
      },
      cat_expected);
  both_paths(
      [&](auto E) {
        return tw::vmap(E.binary([](auto a, auto x) { return tw::stack(std::tuple{a, x}); }), tw::in_dims(tw::none, 0))(
            c, X);
      },
      stack_expected);
  // A closure: the plain value is captured, the batched one an argument; and three values.
  both_paths([&](auto E) { return tw::vmap(E([&](auto x) { return tw::stack(std::tuple{c, x}); }))(X); },
             stack_expected);
  const tensor<double> three = tw::vmap([&](auto x) { return tw::cat(std::tuple{x, c, x}, 0); })(X);
  REQUIRE(three.shape() == tw::shape_t{3, 6});
  require_close(tw::narrow(three, 1, 0, 2), X, 0);
  require_close(tw::narrow(three, 1, 2, 4), cat_expected, 0);
}

TEST_CASE("a vmap inside grad capturing the grad's value: grad(x -> sum(vmap(y -> x * y)(X)))(0.7), both paths") {
  const tensor<double> X = sample({5}, -1, 1, 6);
  both_paths(
      [&](auto E) {
        return tw::grad(E([&](auto x) { return tw::sum(tw::vmap(E([&](auto y) { return x * y; }))(X)); }))(0.7);
      },
      tensor<double>(tw::sum(X).item()));
  // Second order through the closure: d2/dx2 sum(vmap(y -> x^2 y)(X)) = 2 sum(X).
  both_paths(
      [&](auto E) {
        return tw::grad(E([&](auto x1) {
          return tw::grad(E([&](auto x) { return tw::sum(tw::vmap(E([&](auto y) { return x * x * y; }))(X)); }))(x1);
        }))(0.7);
      },
      tensor<double>(2 * tw::sum(X).item()));
}

TEST_CASE(
    "a grad inside vmap capturing the vmap's per-example value: vmap(x -> grad(y -> sum(x * y))(y0))(X), both paths") {
  const tensor<double> X = sample({3, 2}, -1, 1, 7), y0 = sample({2}, -1, 1, 8);
  both_paths(
      [&](auto E) {
        return tw::vmap(E([&](auto x) { return tw::grad(E([&](auto y) { return tw::sum(x * tw::sin(y)); }))(y0); }))(X);
      },
      X * tw::cos(y0));
  // The captured value and the argument both nonlinear: d/dy sum(sin(x y)) = x cos(x y).
  both_paths(
      [&](auto E) {
        return tw::vmap(E([&](auto x) { return tw::grad(E([&](auto y) { return tw::sum(tw::sin(x * y)); }))(y0); }))(X);
      },
      X * tw::cos(X * y0));
  // A grad over a weight, inside vmap, inside grad: d/dw sum_i sum_j w Y_j x_i ... per example.
  const tensor<double> Y = sample({4}, -1, 1, 9), xs = sample({3}, -1, 1, 10);
  both_paths(
      [&](auto E) {
        return tw::vmap(E([&](auto x) {
          return tw::grad(E([&](auto w) { return tw::sum(tw::vmap(E([&](auto y) { return w * y * x; }))(Y)); }))(0.3);
        }))(xs);
      },
      xs * tw::sum(Y).item());
}

TEST_CASE("d/dx [x * d/dy (x y)] = 2x: the inner gradient is tracked by the outer grad, both paths") {
  for (double x0 : {1.5, -0.4}) {
    both_paths(
        [&](auto E) {
          return tw::grad(E([&](auto x) { return x * tw::grad(E([&](auto y) { return x * y; }))(1.0); }))(x0);
        },
        tensor<double>(2 * x0));
    // d/dx [x * d/dy (x + y)] = 1: no dependence to carry, no perturbation confusion.
    both_paths(
        [&](auto E) {
          return tw::grad(E([&](auto x) { return x * tw::grad(E([&](auto y) { return x + y; }))(1.0); }))(x0);
        },
        tensor<double>(1.0));
    // A live vmap between the two grads that the inner one does not see (it runs above it):
    // d/dx sum_k z_k * d/dy (x y) = sum(Z).
    const tensor<double> Z = sample({3}, -1, 1, 11);
    both_paths(
        [&](auto E) {
          return tw::grad(E([&](auto x) {
            return tw::sum(
                tw::vmap(E([&](auto z) { return z * tw::grad(E([&](auto y) { return x * y * x0; }))(1.0); }))(Z));
          }))(x0);
        },
        tensor<double>(tw::sum(Z).item() * x0));
  }
}

TEST_CASE("vmap(jacrev(model)) where model takes grad over parameters it closes over, both paths") {
  // model(x) = d/dw sum(sin(w x)) = x cos(w x); its Jacobian in x is diag(cos(w x) - w x sin(w x)).
  const tensor<double> X = sample({3, 2}, -1, 1, 12), w = sample({2}, -1, 1, 13);
  tensor<double> expected({3, 2, 2}, std::vector<double>(12));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) {
      const double wx = w(j) * X(i, j);
      expected.data()[i * 4 + j * 3] = std::cos(wx) - wx * std::sin(wx);
    }
  both_paths(
      [&](auto E) {
        auto model = E([&](auto x) { return tw::grad(E([&](auto ww) { return tw::sum(tw::sin(ww * x)); }))(w); });
        return tw::vmap(tw::jacrev(model))(X);
      },
      expected);
  both_paths(
      [&](auto E) {
        auto model = E([&](auto x) { return tw::grad(E([&](auto ww) { return tw::sum(tw::sin(ww * x)); }))(w); });
        return tw::vmap(tw::jacfwd(model))(X);
      },
      expected);
}

TEST_CASE("vmap(grad(g)) where g calls grad itself: vmap's automatic probes decline, both paths") {
  // g(x) = sum(grad(f)(x) * x) with f = sum(v^3): g = 3 sum(x^3), grad g = 9 x^2 per example.
  const tensor<double> X = sample({4, 3}, -1, 1, 14), x1 = sample({5}, -1, 1, 15);
  auto g = [](auto x) { return tw::sum(tw::grad([](auto v) { return tw::sum(v * v * v); })(x) * x); };
  both_paths([&](auto E) { return tw::vmap(tw::grad(E(g)))(X); }, X * X * 9.0);
  // On numbers: g2(x) = grad(v^3)(x) * x = 3 x^3.
  auto g2 = [](auto x) { return tw::grad([](auto v) { return v * v * v; })(x) * x; };
  both_paths([&](auto E) { return tw::vmap(tw::grad(E(g2)))(x1); }, x1 * x1 * 9.0);
  // The same with strategy::batched and with jacrev around g.
  require_close(tw::vmap(tw::grad(g), tw::strategy::batched)(X), X * X * 9.0, 1e-12);
  // A trace-like inner function on [2, 2] examples: g3(m) = sum(grad(trace)(m) * m * m) = m00^2 + m11^2.
  const tensor<double> M = sample({3, 2, 2}, -1, 1, 16);
  auto g3 = [](auto m) { return tw::sum(tw::grad([](auto a) { return tw::trace(a); })(m) * m * m); };
  const tensor<double> eye = tw::eye<double>(2);
  both_paths([&](auto E) { return tw::vmap(tw::grad(E(g3)))(M); }, M * eye * 2.0);
}

TEST_CASE("vmap(hessian(f))(A, X) with two batched tensors, both paths and strategy::batched") {
  // f(x, a) = sum(a x^3): H = diag(6 a x) per example.
  const tensor<double> X = sample({3, 2}, -1, 1, 17), A = sample({3, 2}, -1, 1, 18);
  tensor<double> expected({3, 2, 2}, std::vector<double>(12));
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) expected.data()[i * 4 + j * 3] = 6 * A(i, j) * X(i, j);
  auto f = [](auto x, auto a) { return tw::sum(a * x * x * x); };
  both_paths([&](auto E) { return tw::vmap(tw::hessian(E.binary(f)))(X, A); }, expected);
  require_close(tw::vmap(tw::hessian(f), tw::strategy::batched)(X, A), expected, 1e-12);
}

TEST_CASE("vmap(jacfwd(f, argnums<1>)) where f does not depend on argument 1 gives zeros, both paths") {
  const tensor<double> X = sample({3, 2}, -1, 1, 19), Z = sample({3, 2}, -1, 1, 20);
  auto f = [](auto x, auto z) {
    (void)z;
    return tw::sin(x);
  };
  both_paths([&](auto E) { return tw::vmap(tw::jacfwd(E.binary(f), tw::argnums<1>))(X, Z); },
             tw::zeros<double>({3, 2, 2}));
  both_paths([&](auto E) { return tw::vmap(tw::jacrev(E.binary(f), tw::argnums<1>))(X, Z); },
             tw::zeros<double>({3, 2, 2}));
  // Scalars: d/dz sin(x) = 0 per example.
  const tensor<double> x1 = sample({4}, -1, 1, 21), z1 = sample({4}, -1, 1, 22);
  both_paths([&](auto E) { return tw::vmap(tw::jacfwd(E.binary(f), tw::argnums<1>))(x1, z1); }, tw::zeros<double>({4}));
}

TEST_CASE("third-order Jacobians of f(x) = x sin x on R^2: all eight jacfwd/jacrev compositions, both paths") {
  const tensor<double> x({2}, {0.3, -0.8});
  tensor<double> expected = tw::zeros<double>({2, 2, 2, 2});
  for (std::int64_t i = 0; i < 2; ++i) expected.data()[i * 15] = -3 * std::sin(x(i)) - x(i) * std::cos(x(i));
  auto f = [](auto v) { return v * tw::sin(v); };
  auto fwd = [](auto g) { return tw::jacfwd(g); };
  auto rev = [](auto g) { return tw::jacrev(g); };
  auto check = [&](auto a, auto b, auto c) { both_paths([&](auto E) { return a(b(c(E(f))))(x); }, expected, 1e-12); };
  check(fwd, fwd, fwd);
  check(fwd, fwd, rev);
  check(fwd, rev, fwd);
  check(fwd, rev, rev);
  check(rev, fwd, fwd);
  check(rev, fwd, rev);
  check(rev, rev, fwd);
  check(rev, rev, rev);
}
