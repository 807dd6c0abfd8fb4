// Newton's method with tw::hessian: minimise the Rosenbrock function in R^n.
//
//   f(x) = sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2,   minimum f = 0 at x = (1, ..., 1).
//
// Each step solves (H + mu I) p = g with H = hessian(f)(x) and g = grad(f)(x), mu = 0 where H is
// positive definite, else the smallest of 1e-3, 2e-3, 4e-3, ... for which tw::cholesky succeeds
// (a modified Newton method: -p is always a descent direction), then backtracks along -p until f
// decreases enough (Armijo). The program checks the Hessian at the start against central
// differences of the gradient, and that Newton reaches the known minimum.
#include <cmath>
#include <cstdio>

#include <tower/tower.hpp>

namespace tw = tower;

int main() {
  const std::int64_t n = 6;
  auto f = [n](const auto& x) {
    auto head = tw::narrow(x, 0, 0, n - 1), tail = tw::narrow(x, 0, 1, n - 1);
    return tw::sum(100.0 * tw::square(tail - tw::square(head)) + tw::square(1.0 - head));
  };
  auto value = [&](const tw::tensor<double>& x) { return f(x).item(); };

  tw::tensor<double> x = tw::full<double>({n}, -1.2);

  // The Hessian at the start against central differences of the gradient.
  const tw::tensor<double> H0 = tw::hessian(f)(x);
  double hessian_err = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    tw::tensor<double> xp = x, xm = x;
    xp.data()[j] += 1e-5;
    xm.data()[j] -= 1e-5;
    const tw::tensor<double> gp = tw::grad(f)(xp), gm = tw::grad(f)(xm);
    for (std::int64_t i = 0; i < n; ++i)
      hessian_err = std::max(hessian_err, std::abs(H0(i, j) - (gp(i) - gm(i)) / 2e-5));
  }
  std::printf("hessian at the start: [%lld, %lld], max |H - finite differences of grad| = %.2g\n",
              (long long)H0.shape()[0], (long long)H0.shape()[1], hessian_err);

  int iterations = 0;
  double gnorm = 0;
  for (; iterations < 100; ++iterations) {
    const tw::tensor<double> g = tw::grad(f)(x);
    gnorm = tw::norm(g).item();
    if (gnorm < 1e-10) break;
    const tw::tensor<double> H = tw::hessian(f)(x), I = tw::eye<double>(n);
    double mu = 0;
    for (;; mu = std::max(2 * mu, 1e-3)) {
      try {
        (void)tw::cholesky(H + mu * I);
        break;
      } catch (const tw::error&) {  // not positive definite: shift the spectrum
      }
    }
    const tw::tensor<double> p = tw::solve(H + mu * I, g);
    const double slope = tw::dot(g, p).item();
    const double fx = value(x);
    double t = 1;
    while (value(x - t * p) > fx - 1e-4 * t * slope && t > 1e-12) t /= 2;
    x = x - t * p;
    std::printf("step %2d: f = %.3e, |grad f| = %.3e, shift %g, step length %g\n", iterations + 1, value(x), gnorm, mu,
                t);
  }

  double dist = 0;
  for (std::int64_t i = 0; i < n; ++i) dist = std::max(dist, std::abs(x(i) - 1.0));
  std::printf("Newton: %d iterations, max |x - 1| = %.2g, f = %.2g, |grad f| = %.2g\n", iterations, dist, value(x),
              gnorm);
  return hessian_err < 1e-4 && iterations < 100 && dist < 1e-8 ? 0 : 1;
}
