// grad, grad_and_value, vmap and their compositions against numerical references.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

namespace {
// A loss users write: logistic regression on one example.
auto logistic = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };
}  // namespace

TEST_CASE("grad of a scalar function matches finite differences and the analytic derivative") {
  auto f = [](auto x) { return tw::sin(x) * tw::exp(x * 0.5) + x * x * x; };
  for (double x : {-1.3, 0.0, 0.7, 2.1}) {
    const double d = tw::grad(f)(x);
    require_close(d, fd_derivative([&](double v) { return f(v); }, x), 1e-6);
    const double analytic = std::cos(x) * std::exp(0.5 * x) + 0.5 * std::sin(x) * std::exp(0.5 * x) + 3 * x * x;
    require_close(d, analytic, 1e-12);
  }
}

TEST_CASE("grad(grad(f)) matches the analytic second derivative, and grad^3 the third") {
  auto f = [](auto x) { return x * tw::sin(x); };
  for (double x : {-0.4, 1.0, 2.5}) {
    require_close(tw::grad(tw::grad(f))(x), 2 * std::cos(x) - x * std::sin(x), 1e-12);
    require_close(tw::grad(tw::grad(tw::grad(f)))(x), -3 * std::sin(x) - x * std::cos(x), 1e-12);
  }
}

TEST_CASE("grad of a tensor function matches finite differences; argnums picks arguments") {
  const tensor<double> w = sample({5}, -1, 1, 2), x = sample({5}, -1, 1, 3);
  const tensor<double> g = tw::grad(logistic)(w, x, 1.0);
  require_close(g, fd_grad([&](const tensor<double>& v) { return logistic(v, x, 1.0).item(); }, w), 1e-6);

  const auto [gw, gy] = tw::grad(logistic, tw::argnums<0, 2>)(w, x, -1.0);
  require_close(gw, fd_grad([&](const tensor<double>& v) { return logistic(v, x, -1.0).item(); }, w), 1e-6);
  require_close(gy, fd_derivative([&](double y) { return logistic(w, x, y).item(); }, -1.0), 1e-6);
  const tensor<double> gx = tw::grad(logistic, tw::argnums<1>)(w, x, 1.0);
  require_close(gx, fd_grad([&](const tensor<double>& v) { return logistic(w, v, 1.0).item(); }, x), 1e-6);
}

TEST_CASE("grad_and_value and has_aux") {
  auto f = [](auto x) { return x * x * 3.0; };
  const auto [g, v] = tw::grad_and_value(f)(2.0);
  require_close(g, 12.0);
  require_close(v, 12.0);

  auto fa = [](auto x) { return std::make_tuple(tw::sin(x), x * 2.0); };
  const auto [ga, aux] = tw::grad(fa, tw::has_aux)(0.3);
  require_close(ga, std::cos(0.3));
  require_close(aux, 0.6);  // passed through, unwrapped
  const auto [gb, vb, auxb] = tw::grad_and_value(fa, tw::has_aux)(0.3);
  require_close(gb, std::cos(0.3));
  require_close(vb, std::sin(0.3));
  require_close(auxb, 0.6);
}

TEST_CASE("grad raises tower::error when f does not return a scalar") {
  const tensor<double> x = sample({3});
  REQUIRE_THROWS_WITH(tw::grad([](auto v) { return v * 2.0; })(x),
                      Catch::Contains("grad: f must return a scalar") && Catch::Contains("[3]"));
}

TEST_CASE("vmap(grad(f)) equals a loop of grad(f) over examples: per-example gradients") {
  const std::int64_t B = 6, d = 4;
  const tensor<double> w = sample({d}, -1, 1, 11), X = sample({B, d}, -2, 2, 12), Y = sample({B}, -1, 1, 13);
  const tensor<double> G = tw::vmap(tw::grad(logistic), tw::in_dims(tw::none, 0, 0))(w, X, Y);
  REQUIRE(G.shape() == shape_t{B, d});
  std::vector<tensor<double>> rows;
  for (std::int64_t b = 0; b < B; ++b) rows.push_back(tw::grad(logistic)(w, row(X, b), Y(b)));
  require_close(G, stack(rows), 1e-12);
}

TEST_CASE("vmap in_dims and out_dims, negative dims, unbatched outputs") {
  const tensor<double> X = sample({3, 4}, -1, 1, 21);
  auto rowsum = [](auto r) { return tw::sum(r); };
  const tensor<double> by_row = tw::vmap(rowsum)(X);
  const tensor<double> by_col = tw::vmap(rowsum, tw::in_dims(-1))(X);
  for (std::int64_t i = 0; i < 3; ++i) require_close(by_row(i), tw::sum(row(X, i)).item(), 1e-12);
  for (std::int64_t j = 0; j < 4; ++j) {
    double s = 0;
    for (std::int64_t i = 0; i < 3; ++i) s += X(i, j);
    require_close(by_col(j), s, 1e-12);
  }
  // out_dims(1): the batch goes to dim 1 of the output.
  const tensor<double> t = tw::vmap([](auto r) { return r * 2.0; }, tw::in_dims(0), tw::out_dims(1))(X);
  REQUIRE(t.shape() == shape_t{4, 3});
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 4; ++j) REQUIRE(t(j, i) == 2 * X(i, j));
  // An output that ignores the batch is broadcast along it.
  const tensor<double> c = tw::vmap([](auto) { return 7.0; })(X);
  REQUIRE(c.shape() == shape_t{3});
  REQUIRE(c(2) == 7.0);
}

TEST_CASE("vmap errors: batch-size mismatch and in_dims out of range name the arguments") {
  const tensor<double> a = sample({3, 2}), b = sample({4, 2});
  auto f = [](auto x, auto y) { return x + y; };
  REQUIRE_THROWS_WITH(tw::vmap(f)(a, b),
                      Catch::Contains("argument 0 has size 3") && Catch::Contains("argument 1 has size 4"));
  REQUIRE_THROWS_WITH(tw::vmap(f, tw::in_dims(2, 0))(a, a), Catch::Contains("in_dims[0] = 2 is out of range"));
  std::function<value(value, value)> fr = [](value x, value y) { return x + y; };
  REQUIRE_THROWS_WITH(tw::vmap(fr)(a, b),
                      Catch::Contains("argument 0 has size 3") && Catch::Contains("argument 1 has size 4"));
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

TEST_CASE("compositions: grad(vmap), vmap(vmap), vmap(grad(grad))") {
  const tensor<double> X = sample({3, 2}, -1, 1, 31);
  // grad of a sum over a vmapped function equals the per-row gradients.
  auto h = [](auto x) { return tw::sum(tw::vmap([](auto r) { return tw::sum(tw::sin(r) * r); })(x)); };
  const tensor<double> gh = tw::grad(h)(X);
  require_close(gh, fd_grad([&](const tensor<double>& v) { return h(v).item(); }, X), 1e-6);
  // vmap(vmap(f)) is elementwise.
  const tensor<double> sq = tw::vmap(tw::vmap([](auto a) { return a * a; }))(X);
  require_close(sq, X * X, 0);
  // per-example second derivatives.
  const tensor<double> v = sample({5}, -2, 2, 32);
  const tensor<double> d2 = tw::vmap(tw::grad(tw::grad([](auto a) { return a * a * a; })))(v);
  require_close(d2, v * 6.0, 1e-12);
}

TEST_CASE("perturbation confusion: d/dx [x * d/dy (x + y)] at x = 1 is 1, both paths") {
  auto outer = [](auto x) {
    auto inner = tw::grad([&](auto y) { return x + y; });
    return x * inner(1.0);
  };
  require_close(tw::grad(outer)(1.0), 1.0, 0);
  std::function<value(value)> outer_r = [](value x) {
    std::function<value(value)> inner = [&](value y) { return x + y; };
    return x * tw::grad(inner)(value(1.0));
  };
  require_close(tw::grad(outer_r)(1.0).item(), 1.0, 0);
  // The runtime path carries the captured level: d/dx [x * d/dy (x * y)] = 2x.
  std::function<value(value)> outer_r2 = [](value x) {
    std::function<value(value)> inner = [&](value y) { return x * y; };
    return x * tw::grad(inner)(value(1.0));
  };
  require_close(tw::grad(outer_r2)(1.5).item(), 3.0, 1e-12);
  // So does the static path: the inner grad runs above the captured level, and its gradient is
  // tracked by the outer grad (transforms/static/level.hpp, closure_level).
  auto outer2 = [](auto x) {
    auto inner = tw::grad([&](auto y) { return x * y; });
    return x * inner(1.0);
  };
  require_close(tw::grad(outer2)(1.5), 3.0, 1e-12);
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

TEST_CASE("a captureless function transformed inside another transform runs below the live levels, both paths") {
  // g holds no values, so grad(g)(c) inside a live transform runs at the level its argument
  // predicts with the live transforms above it hidden (transforms/static/level.hpp), not at a second level.
  auto g = [](auto y) { return y * y * y; };  // g'(y) = 3 y^2, g''(y) = 6 y
  static_assert(!tw::detail::may_capture_values<decltype(g)>());
  static_assert(!tw::detail::may_capture_values<decltype(tw::vmap(tw::hessian(g)))>());
  const double k = 2.0;
  auto h = [k](auto y) { return k * y; };  // holds a value: may have captured a transform's
  static_assert(tw::detail::may_capture_values<decltype(h)>());
  static_assert(tw::detail::may_capture_values<decltype(tw::grad(h))>());

  // d/dx [x * g'(2)] = 12, inside grad; and per example inside vmap.
  auto scaled = [](auto x) { return x * tw::grad([](auto y) { return y * y * y; })(2.0); };
  require_close(tw::grad(scaled)(0.7), 12.0, 1e-12);
  std::function<value(value)> scaled_r = [](value x) {
    std::function<value(value)> gr = [](value y) { return y * y * y; };
    return x * tw::grad(gr)(value(2.0));
  };
  require_close(tw::grad(scaled_r)(0.7).item(), 12.0, 1e-12);
  const tensor<double> X({4}, {0.5, -1.0, 2.0, 3.0});
  const tensor<double> Y = tw::vmap(scaled)(X);
  for (std::int64_t b = 0; b < 4; ++b) require_close(Y.data()[b], 12.0 * X.data()[b], 1e-12);

  // A composite (hessian = jacfwd(jacrev)) of a captureless function on a constant, per example.
  auto with_hessian = [](auto x) {
    const tensor<double> c({2}, {1.0, 2.0});
    auto q = [](auto v) { return tw::sum(v * v * v); };  // Hessian diag(6 v)
    return x * tw::sum(tw::hessian(q)(c));
  };
  const tensor<double> Z = tw::vmap(with_hessian)(X);
  for (std::int64_t b = 0; b < 4; ++b) require_close(Z.data()[b], 18.0 * X.data()[b], 1e-12);

  // An error inside the hidden region puts the hidden entries back. (throws holds a value, so the
  // outer grad takes the tape and its interpreter is live: a grad of numbers that holds none runs
  // forward mode, with no interpreter.)
  auto throws = [k](auto x) {
    auto bad = [](auto y) {
      const tensor<double> a({2}, {1.0, 2.0});
      return tw::sum(a * y);  // y has 3 elements: a shape error at run time
    };
    REQUIRE_THROWS_AS(tw::grad(bad)(tensor<double>({3}, {1.0, 2.0, 3.0})), tw::error);
    REQUIRE(tw::interpreter_stack_depth() == 1);
    return x * x * (k / 2.0);
  };
  require_close(tw::grad(throws)(1.5), 3.0, 1e-12);
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

TEST_CASE("a transform depth chosen at run time: the n-th derivative") {
  std::function<value(value)> f = [](value x) { return tw::exp(x * 2.0); };
  for (int n = 0; n <= 4; ++n) {
    std::function<value(value)> g = f;
    for (int i = 0; i < n; ++i) g = tw::grad(g);
    require_close(g(value(0.3)).item(), std::pow(2.0, n) * std::exp(0.6), 1e-12);
  }
}

TEST_CASE("float arguments: Jacobians and Hessians in every form stay float and equal double's to float precision") {
  // Constants are double literals, as users write them: beside floats they are floats (as
  // beside a tensor<float>), in the tangents jacfwd seeds and the jets vmap(hessian) runs on.
  auto f = [](auto x) { return tw::sum(tw::tanh(x) * x) + tw::log(1.0 + tw::sum(x * x)); };
  auto g = [](auto x) { return tw::sin(x) * 2.0 + 0.5 * x * x; };
  const tensor<double> X = sample({5, 3}, -1, 1, 41);
  const std::vector<float> xs(X.data(), X.data() + X.numel());
  const tensor<float> Xf({5, 3}, xs), xf({3}, std::vector<float>(xs.begin(), xs.begin() + 3));
  const tensor<double> x = row(X, 0);
  auto as_double = [](const tensor<float>& t) {
    return tensor<double>(t.shape(), std::vector<double>(t.data(), t.data() + t.numel()));
  };
  auto check = [&](const auto& got, const tensor<double>& want) {
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(got)>, tensor<float>>, "a float result");
    require_close(as_double(got), want, 2e-5);
  };
  check(tw::jacrev(g)(xf), tw::jacrev(g)(x));
  check(tw::jacfwd(g)(xf), tw::jacrev(g)(x));
  const tensor<double> H = tw::hessian(f)(x);
  check(tw::hessian(f)(xf), H);
  check(tw::jacfwd(tw::jacfwd(f))(xf), H);
  check(tw::jacrev(tw::jacrev(f))(xf), H);
  check(tw::jacrev(tw::jacfwd(f))(xf), H);
  const tensor<double> Hs = tw::vmap(tw::hessian(f), tw::strategy::batched)(X);
  check(tw::vmap(tw::hessian(f))(Xf), Hs);  // rows of 3: elementwise jets per example
  check(tw::vmap(tw::hessian(f), tw::strategy::batched)(Xf), Hs);
  check(tw::vmap(tw::hessian(f), tw::strategy::packets)(Xf), Hs);
  const tensor<double> Js = tw::vmap(tw::jacrev(g), tw::strategy::batched)(X);
  check(tw::vmap(tw::jacfwd(g))(Xf), Js);
  check(tw::vmap(tw::jacfwd(g), tw::strategy::batched)(Xf), Js);
  check(tw::vmap(tw::jacrev(g))(Xf), Js);
  // On tw::fixed values of floats (jets directly) and on a float number.
  const tw::fixed<float, 3> xv{{xs[0], xs[1], xs[2]}};
  const auto Hv = tw::hessian(f)(xv);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(Hv[0][0])>, float>, "a float Hessian");
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 3; ++j) CHECK(Hv[i][j] == Approx(H(i, j)).epsilon(2e-5));
  auto u = [](auto a) { return tw::tanh(a) * a + 1.0 / (1.0 + a * a); };
  const float d2 = tw::grad(tw::grad(u))(xs[0]);
  CHECK(d2 == Approx(tw::grad(tw::grad(u))(static_cast<double>(xs[0]))).epsilon(2e-5));
}

TEST_CASE("tw::cast: a function computing partly in float has double's derivatives to float precision") {
  // Mixed precision as JAX's astype: sin in float, the rest in double; every gradient comes back
  // in the argument's element type.
  auto mixed = [](auto x) { return tw::sum(tw::cast<double>(tw::sin(tw::cast<float>(x)) * 2.0f) * x); };
  auto plain = [](auto x) { return tw::sum(tw::sin(x) * 2.0 * x); };
  for (std::int64_t n : {3, 12}) {  // automatic rows and the batching rules
    const tensor<double> X = sample({5, n}, -1, 1, 43);
    const tensor<double> G = tw::vmap(tw::grad(plain))(X);
    require_close(tw::vmap(tw::grad(mixed))(X), G, 1e-6);
    require_close(tw::vmap(tw::jacfwd(mixed))(X), G, 1e-6);
    require_close(tw::vmap(tw::grad(mixed), tw::strategy::packets)(X), G, 1e-6);
    require_close(tw::vmap(tw::hessian(mixed))(X), tw::vmap(tw::hessian(plain))(X), 1e-6);
  }
  const tensor<float> y = tw::cast<float>(tensor<double>({2}, {0.1, 2.5}));
  CHECK(y(0) == 0.1f);
  auto cube = [](auto a) { return tw::cast<double>(tw::cast<float>(a) * tw::cast<float>(a) * tw::cast<float>(a)); };
  CHECK(tw::grad(tw::grad(cube))(0.5) == Approx(3.0).epsilon(1e-6));
  std::function<value(value)> fr = [](value x) { return tw::sum(tw::cast<double>(x) * x); };
  require_close(tw::grad(fr)(value(tensor<double>({2}, {1, 2}))).to_tensor(), tensor<double>({2}, {2, 4}), 0);
}

TEST_CASE("forward mode keeps one type through f: a reassigned variable, a braced list, dropout") {
  // A tangent gets every level of its primal when jvp seeds it (jacfwd's basis under vmap, a
  // tangent given inside a grad), so x's tangent and an op's on x have one type.
  auto f = [](auto x) {
    auto h = x;
    for (int i = 0; i < 3; ++i) h = tw::tanh(h * 0.5 + 0.1);
    return tw::sum(h * x);
  };
  for (std::int64_t n : {3, 10}) {  // automatic rows and the batching rules
    const tensor<double> X = sample({4, n}, -1, 1, 47);
    const tensor<double> H = tw::vmap(tw::jacrev(tw::jacrev(f)))(X), G = tw::vmap(tw::grad(f))(X);
    require_close(tw::vmap(tw::jacfwd(f))(X), G, 1e-13);
    require_close(tw::vmap(tw::hessian(f))(X), H, 1e-12);
    require_close(tw::vmap(tw::hessian(f), tw::strategy::batched)(X), H, 1e-12);
    require_close(tw::vmap(tw::jacfwd(tw::jacfwd(f)))(X), H, 1e-12);
    require_close(tw::vmap(tw::jacrev(tw::jacfwd(f)))(X), H, 1e-12);
    std::function<value(value)> fr = [&](value x) { return f(x); };
    require_close(tw::vmap(tw::hessian(fr))(X).to_tensor(), H, 1e-12);
    const tensor<double> x = row(X, 0), v = row(X, 1);
    require_close(tw::jacrev(tw::jacfwd(f))(x), row(H, 0), 1e-12);
    require_close(tw::jacfwd(tw::jacfwd(f))(x), row(H, 0), 1e-12);
    // grad of a jvp: d/dy <grad f(y), v> = H v
    auto Hv = tw::grad([&](auto y) { return std::get<1>(tw::jvp(f, std::tuple{y}, std::tuple{v})); })(x);
    require_close(Hv, tw::matmul(row(H, 0), v), 1e-12);
    // A braced list of x and sin(x): torch.stack([x, x.sin()]).
    auto st = [](auto y) { return tw::stack({y, tw::sin(y)}, 0); };
    require_close(tw::vmap(tw::jacfwd(st))(X), tw::vmap(tw::jacrev(st))(X), 1e-14);
    // dropout's two forms (eval and training) have one type: d/dx dropout(x) = mask / (1 - p).
    tw::manual_seed(3);
    const tensor<double> J =
        tw::vmap(tw::jacfwd([](auto y) { return tw::dropout(y, 0.5); }), tw::randomness::different)(X);
    std::int64_t kept = 0;
    for (std::int64_t b = 0; b < 4; ++b)
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const double d = J.data()[(b * n + i) * n + j];
          CHECK((i == j ? (d == 0.0 || d == 2.0) : d == 0.0));
          kept += i == j && d == 2.0;
        }
    CHECK((kept > 0 && kept < 4 * n));
  }
}
