#pragma once
// The functorch cross-check: runs a program in tower on both paths and compares every output leaf
// with functorch's numbers (tests/functorch/expected.hpp, written by tests/functorch/generate.py).
//
//   xcheck<1>("grad.sin_sum", [](auto x) { return tw::sum(tw::sin(x)); },
//             [&](auto f) { return tw::grad(f)(x3); });
//
// The body is the function the transforms see; `run` applies them. The static path runs
// run(body) (a generic lambda); the runtime path runs run(std::function<R(value, ...)>(body)).
// A program whose numbers differ from functorch's on purpose is checked with `differs`, against
// tower's own numbers, and is listed in docs/functorch_differences.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tests/check.hpp"
#include "tests/functorch/expected.hpp"
#include "tower/tower.hpp"

namespace tower::testing::functorch {

/// An input of the programs by name (a rank-0 input as a tensor; `number` gives it as a double).
inline tensor<double> input(std::string_view name) {
  for (const recorded& r : inputs())
    if (name == r.name) return tensor<double>(shape_t(r.shape.begin(), r.shape.end()), r.values);
  FAIL("no input " << name << " in tests/functorch/expected.hpp");
  return {};
}
inline double number(std::string_view name) { return input(name).item(); }

/// functorch's output leaves of program `name`, in pytree order.
inline std::vector<tensor<double>> recorded_outputs(std::string_view name) {
  std::vector<tensor<double>> r;
  for (const recorded& o : outputs())
    if (name == o.name) r.emplace_back(shape_t(o.shape.begin(), o.shape.end()), o.values);
  return r;
}

/// The leaves of a result, in pytree order, as tensors.
template <class X>
std::vector<tensor<double>> result_leaves(const X& x) {
  std::vector<tensor<double>> r;
  tree_for_each(
      [&](const auto& leaf) {
        using L = std::remove_cvref_t<decltype(leaf)>;
        if constexpr (std::is_arithmetic_v<L>) r.push_back(tensor<double>(static_cast<double>(leaf)));
        else r.push_back(as_tensor(leaf));
      },
      x);
  return r;
}

/// Same shapes, and every element equal within tol relative to max(1, |want|); NaN matches NaN and
/// an infinity matches the same infinity.
inline bool leaves_match(const std::vector<tensor<double>>& got, const std::vector<tensor<double>>& want,
                         double tol = 1e-10) {
  if (got.size() != want.size()) return false;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (got[k].shape() != want[k].shape()) return false;
    for (std::int64_t i = 0; i < got[k].numel(); ++i) {
      const double a = got[k].data()[i], b = want[k].data()[i];
      if (std::isnan(a) || std::isnan(b) || std::isinf(b)) {
        if (!(std::isnan(a) && std::isnan(b)) && a != b) return false;
      } else if (!(std::abs(a - b) <= tol * std::max(1.0, std::abs(b)))) {
        return false;
      }
    }
  }
  return true;
}

inline std::string describe(const std::vector<tensor<double>>& leaves) {
  std::ostringstream s;
  for (std::size_t k = 0; k < leaves.size(); ++k) s << "\n  leaf " << k << ": " << leaves[k];
  return s.str();
}

/// The programs a test case ran, so that it can check it covered every recorded one.
inline std::set<std::string>& programs_run() {
  static std::set<std::string> s;
  return s;
}

/// Every program recorded under `prefix` ran, and none ran twice or without a record.
inline void require_all_run(std::string_view prefix) {
  std::set<std::string> recorded_names, ran;
  for (const recorded& o : outputs())
    if (std::string_view(o.name).starts_with(prefix)) recorded_names.insert(o.name);
  for (const std::string& n : programs_run())
    if (std::string_view(n).starts_with(prefix)) ran.insert(n);
  CHECK(ran == recorded_names);
}

/// f as a type-erased function of N runtime values (the runtime path).
template <std::size_t N, class F>
auto erase(F f) {
  return [&f]<std::size_t... I>(std::index_sequence<I...>) {
    using R = decltype(f((static_cast<void>(I), std::declval<dyn::value>())...));
    return std::function<R(std::conditional_t<true, dyn::value, std::integral_constant<std::size_t, I>>...)>(f);
  }(std::make_index_sequence<N>{});
}

/// Runs `run` on both paths and compares with `want` (functorch's numbers unless given).
template <std::size_t N, class Body, class Run>
void run_both(const std::string& name, Body body, Run run, const std::vector<tensor<double>>& want) {
  INFO("program " << name << ", expected:" << describe(want));
  CHECK(programs_run().insert(name).second);
  REQUIRE(!want.empty());
  {
    const auto got = result_leaves(run(body));
    INFO("static path:" << describe(got));
    CHECK(leaves_match(got, want));
  }
  {
    const auto got = result_leaves(run(erase<N>(body)));
    INFO("runtime path:" << describe(got));
    CHECK(leaves_match(got, want));
  }
}

/// A program whose numbers tower must share with functorch.
template <std::size_t N, class Body, class Run>
void xcheck(const std::string& name, Body body, Run run) {
  run_both<N>(name, body, run, recorded_outputs(name));
}

/// A deliberate difference (docs/functorch_differences.md): tower gives `tower_values` on both
/// paths, and functorch's recorded numbers are not those (so a regenerated header that agrees
/// turns this back into an xcheck).
template <std::size_t N, class Body, class Run>
void differs(const std::string& name, Body body, Run run, const std::vector<tensor<double>>& tower_values) {
  const auto theirs = recorded_outputs(name);
  INFO("functorch:" << describe(theirs));
  CHECK(!leaves_match(tower_values, theirs));
  run_both<N>(name, body, run, tower_values);
}

}  // namespace tower::testing::functorch
