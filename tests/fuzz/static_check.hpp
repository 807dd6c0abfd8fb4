#pragma once
// The check of the generated static-path samples (static_programs_seed*_test.cpp, written by
// gen_static_programs.py): a program g on the static path (a tensor<double> input) and on the
// runtime path (the same generic code on a dyn::value) gives the same numbers, NaN for NaN.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tower::testing {

template <class G>
void check_static_program(const std::string& name, const G& g, shape_t s, unsigned seed) {
  INFO(name << " at " << detail::shape_str(s));
  const tensor<double> x = sample(s, -1, 1, seed);
  const tensor<double> want = as_tensor(g(dyn::value(x)));
  const tensor<double> got = as_tensor(g(x));
  INFO("static " << got << "\nruntime " << want);
  REQUIRE(got.shape() == want.shape());
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.data()[i], b = want.data()[i];
    REQUIRE(std::isnan(a) == std::isnan(b));
    if (!std::isnan(b)) REQUIRE(std::abs(a - b) <= 1e-9 * (1 + std::abs(b)));
  }
}

}  // namespace tower::testing
