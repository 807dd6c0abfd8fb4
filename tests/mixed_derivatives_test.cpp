// Second derivatives across two arguments, d/dx (d/dy f): every pair of grad, jacrev and jacfwd,
// the inner transform differentiating y and the outer x. On numbers and on tw::fixed values these
// run without a tape, one transform's forward-mode numbers inside the other's; the inner one must
// seed above the level x already carries (scalar_dual.hpp, seed_number_t), or both derivatives
// share one level and the result is a wrong number (it was zero). Checked against the analytic
// derivative, the tensor (tape) path, the runtime path and, per example, vmap.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::dyn::value;
using tw::testing::require_close;

namespace {
// g(x, y) = sin(x y) + x^2 y: d^2 g / dx dy = cos(x y) - x y sin(x y) + 2 x.
constexpr auto g = [](auto x, auto y) { return tw::sin(x * y) + x * x * y; };
double mixed(double x, double y) { return std::cos(x * y) - x * y * std::sin(x * y) + 2 * x; }

// f(x, y) = sum(sin(x * y) + x * x * y) on vectors: the mixed Hessian is diagonal, mixed(x_i, y_i).
constexpr auto f = [](auto x, auto y) { return tw::sum(tw::sin(x * y) + x * x * y); };

// The transforms as templates of (function, argnum), so that every pair is spelled once.
struct grad_t {
  template <int K, class F>
  static auto of(F fn) {
    return tw::grad(fn, tw::argnums<K>);
  }
};
struct jacrev_t {
  template <int K, class F>
  static auto of(F fn) {
    return tw::jacrev(fn, tw::argnums<K>);
  }
};
struct jacfwd_t {
  template <int K, class F>
  static auto of(F fn) {
    return tw::jacfwd(fn, tw::argnums<K>);
  }
};

template <class Outer, class Inner>
void check_pair(const char* name) {
  INFO(name);
  const double x = 0.3, y = 1.1;
  // Numbers: the tape-free path (g holds no values).
  require_close(Outer::template of<0>(Inner::template of<1>(g))(x, y), mixed(x, y), 1e-12);
  // The runtime path.
  std::function<value(value, value)> gr = [](value a, value b) { return g(a, b); };
  require_close(Outer::template of<0>(Inner::template of<1>(gr))(value(x), value(y)).item(), mixed(x, y), 1e-12);

  // tw::fixed vectors (forward mode on fixed values) against tensors (the tape), element by element.
  tw::fixed<double, 3> xf{{0.3, 0.7, -0.5}}, yf{{1.1, -0.4, 0.9}};
  tw::tensor<double> xt = tw::to_tensor(xf), yt = tw::to_tensor(yf);
  if constexpr (!std::is_same_v<Outer, grad_t>) {  // (grad needs a number: d/dy f is a vector here)
    const auto Hf = Outer::template of<0>(Inner::template of<1>(f))(xf, yf);
    const tw::tensor<double> Ht = Outer::template of<0>(Inner::template of<1>(f))(xt, yt);
    REQUIRE(Ht.shape() == tw::shape_t{3, 3});
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        require_close(Hf[i][j], Ht(i, j), 1e-12);
        require_close(Ht(i, j), i == j ? mixed(xf[i], yf[i]) : 0.0, 1e-12);
      }
  }

  // Per example: vmap over [B] numbers runs the pair once per example on numbers.
  const tw::tensor<double> X({5}, {0.3, -0.2, 0.9, 1.4, -1.1}), Y({5}, {1.1, 0.5, -0.7, 0.2, 2.0});
  const tw::tensor<double> M = tw::vmap(Outer::template of<0>(Inner::template of<1>(g)))(X, Y);
  for (int b = 0; b < 5; ++b) require_close(M(b), mixed(X(b), Y(b)), 1e-12);
}
}  // namespace

TEST_CASE("d/dx (d/dy f) for every pair of grad, jacrev, jacfwd: numbers, tw::fixed, runtime path, vmap") {
  check_pair<grad_t, grad_t>("grad(grad)");
  check_pair<grad_t, jacrev_t>("grad(jacrev)");
  check_pair<grad_t, jacfwd_t>("grad(jacfwd)");
  check_pair<jacrev_t, grad_t>("jacrev(grad)");
  check_pair<jacrev_t, jacrev_t>("jacrev(jacrev)");
  check_pair<jacrev_t, jacfwd_t>("jacrev(jacfwd)");
  check_pair<jacfwd_t, grad_t>("jacfwd(grad)");
  check_pair<jacfwd_t, jacrev_t>("jacfwd(jacrev)");
  check_pair<jacfwd_t, jacfwd_t>("jacfwd(jacfwd)");
}

TEST_CASE("d/dy (d/dx f): the inner transform on the first argument, the outer on the second") {
  // The same with the roles swapped: x carries the inner level, y the outer one.
  const double x = 0.3, y = 1.1;
  require_close(tw::grad(tw::grad(g, tw::argnums<0>), tw::argnums<1>)(x, y), mixed(x, y), 1e-12);
  require_close(tw::jacfwd(tw::jacrev(g, tw::argnums<0>), tw::argnums<1>)(x, y), mixed(x, y), 1e-12);
  tw::fixed<double, 2> xf{{0.3, 0.7}}, yf{{1.1, -0.4}};
  const auto H = tw::jacfwd(tw::jacrev(f, tw::argnums<0>), tw::argnums<1>)(xf, yf);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) require_close(H[i][j], i == j ? mixed(xf[i], yf[i]) : 0.0, 1e-12);
}
