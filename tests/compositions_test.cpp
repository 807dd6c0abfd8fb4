// Compositions of {vmap, grad, vjp, jvp, jacrev, jacfwd} up to depth 3 against numerical
// references. Each composition T1(T2(...)) is checked against T1's numerical definition
// (a loop for vmap, central differences for the derivatives) applied to the inner composition,
// which is itself checked one depth lower: the checks are inductive, so no nested finite
// differences are needed.
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
// A scalar function of a vector, and a vector function of a vector.
auto fs = [](auto x) { return tw::sum(tw::sin(x) * x + tw::exp(x * 0.3)); };
auto fv = [](auto x) { return tw::tanh(x * 1.5) * tw::sum(x); };
// A scalar function of a scalar.
auto f1 = [](auto x) { return tw::sin(x) * x * x; };

/// Loop reference for vmap over dim 0.
template <class F>
tensor<double> loop_map(F f, const tensor<double>& X) {
  std::vector<tensor<double>> rows;
  for (std::int64_t b = 0; b < X.shape()[0]; ++b) rows.push_back(as_tensor(f(row(X, b))));
  return stack(rows);
}
}  // namespace

TEST_CASE("depth 1: each transform against its numerical definition") {
  const tensor<double> x = sample({4}, -1, 1, 41), v = sample({4}, -1, 1, 42), X = sample({3, 4}, -1, 1, 43);
  require_close(tw::grad(fs)(x), fd_grad([](const tensor<double>& t) { return fs(t).item(); }, x), 1e-6);
  require_close(tw::jacrev(fv)(x), fd_jacobian(fv, x), 1e-6);
  require_close(tw::jacfwd(fv)(x), fd_jacobian(fv, x), 1e-6);
  require_close(tw::jacfwd(fv)(x), tw::jacrev(fv)(x), 1e-12);
  const auto [y, t] = tw::jvp(fv, std::tuple{x}, std::tuple{v});
  require_close(y, fv(x), 0);
  const tensor<double> Jv = tw::sum(fd_jacobian(fv, x) * v, -1);
  require_close(t, Jv, 1e-6);
  const auto [y2, vjp_fn] = tw::vjp(fv, x);
  const tensor<double> JTu = std::get<0>(vjp_fn(v));
  require_close(JTu, tw::sum(fd_jacobian(fv, x) * tw::reshape(v, {4, 1}), 0), 1e-6);
  // <u, J v> == <J^T u, v>
  require_close(tw::sum(v * t).item(), tw::sum(JTu * v).item(), 1e-12);
  require_close(tw::vmap(fv)(X), loop_map(fv, X), 0);
  const auto [ly, lin] = tw::linearize(fv, x);
  require_close(lin(v), t, 1e-12);
}

TEST_CASE("depth 2 compositions") {
  const tensor<double> x = sample({3}, -1, 1, 51), v = sample({3}, -1, 1, 52), X = sample({4, 3}, -1, 1, 53);
  const auto gfs = tw::grad(fs);
  // grad(grad) on scalars, hessian = jacfwd(jacrev) = jacrev(jacrev) = jacfwd(jacfwd) of a scalar function.
  require_close(tw::grad(tw::grad(f1))(0.7), fd_derivative([](double t) { return tw::grad(f1)(t); }, 0.7), 1e-6);
  const tensor<double> H = tw::hessian(fs)(x);
  require_close(H, fd_jacobian(gfs, x), 1e-6);
  require_close(tw::jacrev(tw::jacrev(fs))(x), H, 1e-12);
  require_close(tw::jacfwd(tw::jacfwd(fs))(x), H, 1e-12);
  require_close(tw::jacrev(tw::jacfwd(fs))(x), H, 1e-12);
  // vmap(grad), vmap(jacrev), vmap(jvp), vmap(hessian) against loops.
  require_close(tw::vmap(gfs)(X), loop_map(gfs, X), 1e-12);
  require_close(tw::vmap(tw::jacrev(fv))(X), loop_map(tw::jacrev(fv), X), 1e-12);
  auto jv = [](auto p, auto t) { return tw::jvp(fv, std::tuple{p}, std::tuple{t}).second; };
  const tensor<double> VJ = tw::vmap(jv)(X, X * 0.5);
  std::vector<tensor<double>> rows;
  for (std::int64_t b = 0; b < 4; ++b) rows.push_back(jv(row(X, b), row(X, b) * 0.5));
  require_close(VJ, stack(rows), 1e-12);
  require_close(tw::vmap(tw::hessian(fs))(X), loop_map(tw::hessian(fs), X), 1e-12);
  // grad(vmap), jvp(grad) = Hv, grad(jvp) = H v (by symmetry), vjp(grad).
  auto gv = [](auto m) { return tw::sum(tw::vmap(fs)(m)); };
  require_close(tw::grad(gv)(X), fd_grad([&](const tensor<double>& t) { return gv(t).item(); }, X), 1e-6);
  const tensor<double> Hv = tw::sum(H * v, -1);
  require_close(tw::jvp(gfs, std::tuple{x}, std::tuple{v}).second, Hv, 1e-12);
  require_close(tw::grad([&](auto p) { return tw::jvp(fs, std::tuple{p}, std::tuple{v}).second; })(x), Hv, 1e-12);
  const auto [g, vjp_g] = tw::vjp(gfs, x);
  require_close(std::get<0>(vjp_g(v)), Hv, 1e-12);
  // vmap(vmap)
  require_close(tw::vmap(tw::vmap(f1))(X), loop_map([](const tensor<double>& r) { return tw::vmap(f1)(r); }, X), 0);
}

TEST_CASE("depth 3 compositions") {
  const tensor<double> X = sample({3, 3}, -1, 1, 61), V = sample({3, 3}, -1, 1, 62);
  // vmap(jacfwd(jacrev)) == vmap(hessian) checked above; here: vmap(grad(grad)) on scalars,
  // grad(grad(grad)), vmap(jvp(grad)), grad(vmap(grad)), jacrev(vmap(...)), vmap(vmap(grad)).
  const tensor<double> t = sample({5}, -1, 1, 63);
  const auto g2 = tw::grad(tw::grad(f1));
  require_close(tw::vmap(g2)(t), loop_map(g2, t), 1e-12);
  require_close(tw::grad(tw::grad(tw::grad(f1)))(0.4), fd_derivative([&](double s) { return g2(s); }, 0.4), 1e-6);
  auto hvp = [](auto p, auto d) { return tw::jvp(tw::grad(fs), std::tuple{p}, std::tuple{d}).second; };
  std::vector<tensor<double>> rows;
  for (std::int64_t b = 0; b < 3; ++b) rows.push_back(hvp(row(X, b), row(V, b)));
  require_close(tw::vmap(hvp)(X, V), stack(rows), 1e-12);
  auto gvg = [](auto m) { return tw::sum(tw::vmap(tw::grad(fs))(m) * m); };
  require_close(tw::grad(gvg)(X), fd_grad([&](const tensor<double>& m) { return gvg(m).item(); }, X), 1e-6);
  auto vf = [](auto m) { return tw::vmap(fs)(m); };
  require_close(tw::jacrev(vf)(X), fd_jacobian(vf, X), 1e-6);
  require_close(tw::jacfwd(vf)(X), tw::jacrev(vf)(X), 1e-12);
  const tensor<double> XX = sample({2, 3, 3}, -1, 1, 64);
  const auto vg = tw::vmap(tw::grad(fs));
  require_close(tw::vmap(vg)(XX), loop_map(vg, XX), 1e-12);
}

TEST_CASE("the runtime path gives the same compositions") {
  const tensor<double> x = sample({3}, -1, 1, 71), X = sample({4, 3}, -1, 1, 72);
  std::function<value(value)> fr = [](value p) { return fs(p); };
  std::function<value(value)> fvr = [](value p) { return fv(p); };
  require_close(tw::hessian(fr)(x).to_tensor(), tw::hessian(fs)(x), 1e-12);
  require_close(tw::jacrev(fvr)(x).to_tensor(), tw::jacrev(fv)(x), 1e-12);
  require_close(tw::jacfwd(fvr)(x).to_tensor(), tw::jacfwd(fv)(x), 1e-12);
  require_close(tw::vmap(tw::grad(fr))(X).to_tensor(), tw::vmap(tw::grad(fs))(X), 1e-12);
  const auto [y, t] = tw::jvp(fvr, std::tuple{x}, std::tuple{x});
  require_close(t.to_tensor(), tw::jvp(fv, std::tuple{x}, std::tuple{x}).second, 1e-12);
  (void)y;
}

TEST_CASE("jacrev and jacfwd with has_aux return (jacobian, aux)") {
  const tensor<double> x = sample({3}, -1, 1, 81);
  auto f = [](auto p) { return std::make_tuple(tw::sin(p) * 2.0, tw::sum(p)); };
  const auto [jr, aux_r] = tw::jacrev(f, tw::has_aux)(x);
  const auto [jf, aux_f] = tw::jacfwd(f, tw::has_aux)(x);
  const tensor<double> want = fd_jacobian([&](const tensor<double>& t) { return std::get<0>(f(t)); }, x);
  require_close(jr, want, 1e-6);
  require_close(jf, jr, 1e-12);
  require_close(aux_r.item(), tw::sum(x).item(), 0);
  require_close(aux_f.item(), tw::sum(x).item(), 0);
  // argnums and has_aux together
  auto g = [](auto p, auto q) { return std::make_tuple(p * q, q); };
  const auto [jq, aux_q] = tw::jacrev(g, tw::argnums<1>, tw::has_aux)(x, x * 2.0);
  require_close(jq, fd_jacobian([&](const tensor<double>& t) { return std::get<0>(g(x, t)); }, x * 2.0), 1e-6);
  require_close(aux_q, x * 2.0, 0);
}
