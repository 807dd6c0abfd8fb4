#pragma once
// Numerical references shared by the tests: central finite differences, closeness, loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tower/tower.hpp"

namespace tower::testing {

inline constexpr double fd_step = 1e-6;

/// Largest |a - b| relative to max(1, |b|), over all elements.
inline double max_rel_err(const tensor<double>& a, const tensor<double>& b) {
  REQUIRE(a.shape() == b.shape());
  double e = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    e = std::max(e, std::abs(a.data()[i] - b.data()[i]) / std::max(1.0, std::abs(b.data()[i])));
  return e;
}

inline void require_close(const tensor<double>& a, const tensor<double>& b, double tol = 1e-6) {
  INFO("got " << a << "\nexpected " << b);
  REQUIRE(max_rel_err(a, b) <= tol);
}

inline void require_close(double a, double b, double tol = 1e-6) {
  INFO("got " << a << ", expected " << b);
  REQUIRE(std::abs(a - b) <= tol * std::max(1.0, std::abs(b)));
}

/// Central finite-difference gradient of a scalar function of a tensor.
inline tensor<double> fd_grad(const std::function<double(const tensor<double>&)>& f, const tensor<double>& x) {
  tensor<double> g = zeros<double>(x.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    tensor<double> xp = x, xm = x;
    xp.data()[i] += fd_step;
    xm.data()[i] -= fd_step;
    g.data()[i] = (f(xp) - f(xm)) / (2 * fd_step);
  }
  return g;
}

/// Central finite-difference Jacobian of a tensor function (shape out_shape + in_shape); f may
/// return anything as_tensor accepts.
template <class F>
tensor<double> fd_jacobian(F f, const tensor<double>& x);

inline double fd_derivative(const std::function<double(double)>& f, double x) {
  return (f(x + fd_step) - f(x - fd_step)) / (2 * fd_step);
}

/// Row b of a [B, ...] tensor.
inline tensor<double> row(const tensor<double>& t, std::int64_t b) {
  shape_t s(t.shape().begin() + 1, t.shape().end());
  const std::int64_t n = numel_of(s);
  return tensor<double>(s, std::vector<double>(t.data() + b * n, t.data() + (b + 1) * n));
}

/// Stacks equally shaped tensors along a new dim 0.
inline tensor<double> stack(const std::vector<tensor<double>>& rows) {
  shape_t s = rows.at(0).shape();
  std::vector<double> data;
  for (const auto& r : rows) data.insert(data.end(), r.data(), r.data() + r.numel());
  s.insert(s.begin(), static_cast<std::int64_t>(rows.size()));
  return tensor<double>(s, data);
}

/// Deterministic test data in [lo, hi].
inline tensor<double> sample(shape_t s, double lo = -1.0, double hi = 1.0, unsigned seed = 1) {
  std::vector<double> v(static_cast<std::size_t>(numel_of(s)));
  unsigned x = seed * 2654435761u + 12345u;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = lo + (hi - lo) * ((x >> 8) & 0xFFFFFF) / double(0xFFFFFF);
  }
  return tensor<double>(std::move(s), std::move(v));
}

inline double as_double(double x) { return x; }
inline double as_double(const tensor<double>& t) { return t.item(); }
inline double as_double(const dyn::value& v) { return v.item(); }
inline tensor<double> as_tensor(const tensor<double>& t) { return t; }
inline tensor<double> as_tensor(double x) { return tensor<double>(x); }
inline tensor<double> as_tensor(const dyn::value& v) { return v.to_tensor(); }

template <class F>
tensor<double> fd_jacobian(F f, const tensor<double>& x) {
  const tensor<double> y0 = as_tensor(f(x));
  shape_t s = y0.shape();
  s.insert(s.end(), x.shape().begin(), x.shape().end());
  tensor<double> J = zeros<double>(s);
  const std::int64_t n = x.numel(), m = y0.numel();
  for (std::int64_t j = 0; j < n; ++j) {
    tensor<double> xp = x, xm = x;
    xp.data()[j] += fd_step;
    xm.data()[j] -= fd_step;
    const tensor<double> yp = as_tensor(f(xp)), ym = as_tensor(f(xm));
    for (std::int64_t i = 0; i < m; ++i) J.data()[i * n + j] = (yp.data()[i] - ym.data()[i]) / (2 * fd_step);
  }
  return J;
}

/// The hand-written gradient of the Lennard-Jones energy 4 (s^6 - s^3), s = 1 / |r|^2, for each
/// row r of a [B, 3] tensor: (24 s^4 - 48 s^7) r.
inline tensor<double> lennard_jones_gradient(const tensor<double>& R) {
  const std::int64_t n = R.shape()[0];
  std::vector<double> g(static_cast<std::size_t>(3 * n));
  for (std::int64_t b = 0; b < n; ++b) {
    const double* r = R.data() + 3 * b;
    const double s = 1.0 / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    const double c = 24 * std::pow(s, 4) - 48 * std::pow(s, 7);
    for (int k = 0; k < 3; ++k) g[static_cast<std::size_t>(3 * b + k)] = c * r[k];
  }
  return tensor<double>({n, 3}, std::move(g));
}

}  // namespace tower::testing
