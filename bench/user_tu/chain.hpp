#pragma once
// The 10-op chain of chain_grad.cpp and vmap_grad_batch1.cpp, and its derivative written by hand.
#include <cmath>

#include <tower/tower.hpp>

inline constexpr auto chain = [](auto x) {
  auto a = tower::sin(x) * x;
  auto b = tower::exp((a + 1.0) * 0.1);
  auto c = tower::cos(b - x);
  return tower::tanh(c * c) * x;
};

inline double dchain_hand(double x) {
  const double s = std::sin(x), a = s * x, b = std::exp((a + 1.0) * 0.1), c = std::cos(b - x), t = std::tanh(c * c);
  const double da = std::cos(x) * x + s, db = b * 0.1 * da, dc = -std::sin(b - x) * (db - 1.0);
  return (1.0 - t * t) * 2.0 * c * dc * x + t;
}
