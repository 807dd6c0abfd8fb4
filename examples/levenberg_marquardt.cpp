// Levenberg-Marquardt with tw::jacfwd: fit y = a exp(-b t) + c to data.
//
// The residuals r(theta) = model(theta, t) - y are a function R^3 -> R^m; jacfwd gives their
// Jacobian J [m, 3] in three forward-mode passes (one per parameter, vmapped). Each step solves
// (J^T J + lambda diag(J^T J)) delta = -J^T r; a step that lowers the cost is taken and lambda
// shrinks (towards Gauss-Newton), else lambda grows (towards gradient descent). The program
// checks J against the analytic Jacobian and that the fit recovers the parameters the data were
// made with.
#include <cmath>
#include <cstdio>

#include <tower/tower.hpp>

namespace tw = tower;

int main() {
  const std::int64_t m = 40;
  const double a_true = 2.0, b_true = 1.3, c_true = 0.5;
  tw::tensor<double> t = tw::zeros<double>({m}), y = tw::zeros<double>({m});
  for (std::int64_t i = 0; i < m; ++i) {
    t.data()[i] = 4.0 * static_cast<double>(i) / static_cast<double>(m - 1);
    y.data()[i] = a_true * std::exp(-b_true * t(i)) + c_true;
  }

  auto residuals = [&](const auto& theta) {  // theta = (a, b, c): [3] -> [m]
    auto a = tw::narrow(theta, 0, 0, 1), b = tw::narrow(theta, 0, 1, 1), c = tw::narrow(theta, 0, 2, 1);
    return a * tw::exp(-b * t) + c - y;
  };
  auto cost = [&](const tw::tensor<double>& theta) { return 0.5 * tw::sum(tw::square(residuals(theta))).item(); };

  tw::tensor<double> theta({3}, std::vector<double>{1.0, 0.5, 0.0});

  // The Jacobian at the start against d/da = e^{-bt}, d/db = -a t e^{-bt}, d/dc = 1.
  const tw::tensor<double> J0 = tw::jacfwd(residuals)(theta);
  double jacobian_err = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    const double e = std::exp(-theta(1) * t(i));
    jacobian_err = std::max(
        {jacobian_err, std::abs(J0(i, 0) - e), std::abs(J0(i, 1) + theta(0) * t(i) * e), std::abs(J0(i, 2) - 1.0)});
  }
  std::printf("jacfwd: J [%lld, %lld], max |J - analytic| = %.2g\n", (long long)J0.shape()[0], (long long)J0.shape()[1],
              jacobian_err);

  double lambda = 1e-3;
  int iterations = 0;
  for (; iterations < 200; ++iterations) {
    const tw::tensor<double> r = residuals(theta), J = tw::jacfwd(residuals)(theta);
    const tw::tensor<double> JtJ = tw::matmul(tw::transpose(J, 0, 1), J), Jtr = tw::matmul(tw::transpose(J, 0, 1), r);
    if (tw::norm(Jtr).item() < 1e-12) break;
    const tw::tensor<double> delta = tw::solve(JtJ + lambda * (JtJ * tw::eye<double>(3)), -Jtr);
    const tw::tensor<double> next = theta + delta;
    if (cost(next) < cost(theta)) {
      theta = next;
      lambda = std::max(lambda / 3, 1e-12);
    } else {
      lambda *= 2;
    }
  }

  const double err = std::max({std::abs(theta(0) - a_true), std::abs(theta(1) - b_true), std::abs(theta(2) - c_true)});
  std::printf("Levenberg-Marquardt: %d iterations, (a, b, c) = (%.9f, %.9f, %.9f), cost %.2g\n", iterations, theta(0),
              theta(1), theta(2), cost(theta));
  std::printf("max |parameter - truth| = %.2g\n", err);
  return jacobian_err < 1e-12 && iterations < 200 && err < 1e-8 ? 0 : 1;
}
