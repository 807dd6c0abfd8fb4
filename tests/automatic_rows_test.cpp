// strategy::automatic's fixed rows (fused_fixed.hpp, vmap_transform::plan): vmap of a first-order
// transform (or a Hessian) over one [B, N] tensor with N <= TOWER_AUTOMATIC_FIXED_ROWS runs the
// per-example loop on tw::fixed rows, with the numbers of batching rules; every case it must
// decline (other layouts, sizes, unbatched tensors, ops without a rule for fixed values, errors)
// runs batching rules as before. Which form ran is observed by counting the calls of f with a
// tw::fixed argument (or, for Hessians, an elementwise jet). The limit is set here (8, the
// default) so that the sizes below stay what they test if the default changes.
#define TOWER_AUTOMATIC_FIXED_ROWS 8
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::testing::require_close;
using tw::testing::sample;

namespace {
constexpr std::int64_t B = 70;  // more than one block of 64 examples, and a tail

// f, counting its calls on tw::fixed values (the fixed path) in `calls`.
template <class F>
auto counting(F f, int& calls) {
  return [f, &calls](auto... x) {
    if constexpr ((tw::is_fixed_v<decltype(x)> || ...) || (tw::is_elementwise_jet_v<decltype(x)> || ...)) ++calls;
    return f(x...);
  };
}

auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};
}  // namespace

TEST_CASE("automatic rows: vmap(grad(f)) over [B, 3] is the fixed loop, with the hand-written numbers") {
  const tw::tensor<double> R = sample({B, 3}, 0.6, 1.4, 5);
  const tw::tensor<double> E = tw::testing::lennard_jones_gradient(R);
  int calls = 0;
  auto f = counting(energy, calls);
  require_close(tw::vmap(tw::grad(f))(R), E, 1e-12);
  CHECK(calls == B);
  // Bit for bit what in_dims(fixed_rows<3>) gives; batching rules agree to rounding.
  require_close(tw::vmap(tw::grad(f))(R), tw::vmap(tw::grad(f), tw::in_dims(tw::fixed_rows<3>))(R), 0);
  calls = 0;
  require_close(tw::vmap(tw::grad(f), tw::strategy::batched)(R), E, 1e-12);
  require_close(tw::vmap(tw::grad(f), tw::chunk_size(16))(R), E, 1e-12);
  CHECK(calls == 0);
  // in_dims spelled out, -2 for dim 0, out_dims, grad_and_value.
  require_close(tw::vmap(tw::grad(f), tw::in_dims(-2))(R), E, 1e-12);
  CHECK(calls == B);
  require_close(tw::vmap(tw::grad(f), tw::in_dims(0), tw::out_dims(1))(R), tw::movedim(E, 0, 1), 1e-12);
  CHECK(calls == 2 * B);
  auto [g, v] = tw::vmap(tw::grad_and_value(f))(R);
  require_close(g, E, 1e-12);
  require_close(v, tw::vmap(energy)(R), 1e-13);
  CHECK(calls == 3 * B);
  // A type-erased f takes the runtime path (batching rules there), with the same numbers.
  std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value r) { return energy(r); };
  require_close(tw::vmap(tw::grad(erased))(R).to_tensor(), E, 1e-12);
  CHECK(calls == 3 * B);
  // Float rows too.
  const std::vector<float> rf(R.data(), R.data() + 3 * B);
  const tw::tensor<float> Rf({B, 3}, rf);
  calls = 0;
  const tw::tensor<float> Gf = tw::vmap(tw::grad(f))(Rf);
  CHECK(calls == B);
  const tw::tensor<float> Gb = tw::vmap(tw::grad(f), tw::strategy::batched)(Rf);
  REQUIRE(Gf.shape() == Gb.shape());
  for (std::int64_t i = 0; i < Gf.numel(); ++i) CHECK(Gf.data()[i] == Approx(Gb.data()[i]).epsilon(1e-5));
}

TEST_CASE("automatic rows: every row size up to the limit, batched numbers and unbatched ones") {
  auto loss = [](auto x, auto y, auto c) { return tw::sum(tw::sin(x) * y) * c + tw::log(1.0 + tw::sum(x * x)); };
  int calls = 0;
  auto f = counting(loss, calls);
  const tw::tensor<double> Y = sample({B}, -1, 1, 9);
  auto check_size = [&](std::int64_t n) {
    const tw::tensor<double> X = sample({B, n}, -1, 1, static_cast<unsigned>(10 + n));
    calls = 0;
    const auto fast = tw::vmap(tw::grad(f, tw::argnums<0, 1>), tw::in_dims(0, 0, tw::none))(X, Y, 0.7);
    const int fast_calls = calls;
    const auto ref =
        tw::vmap(tw::grad(f, tw::argnums<0, 1>), tw::in_dims(0, 0, tw::none), tw::strategy::batched)(X, Y, 0.7);
    require_close(std::get<0>(fast), std::get<0>(ref), 1e-13);
    require_close(std::get<1>(fast), std::get<1>(ref), 1e-13);
    // A loop of grad over examples agrees too.
    for (std::int64_t b = 0; b < B; b += 23) {
      const auto gb = tw::grad(loss, tw::argnums<0, 1>)(tw::testing::row(X, b), Y.data()[b], 0.7);
      require_close(tw::testing::row(std::get<0>(fast), b), std::get<0>(gb), 1e-13);
      CHECK(std::get<1>(fast).data()[b] == Approx(std::get<1>(gb)).epsilon(1e-13));
    }
    return fast_calls;
  };
  for (std::int64_t n = 1; n <= TOWER_AUTOMATIC_FIXED_ROWS; ++n) CHECK(check_size(n) == B);
  CHECK(check_size(TOWER_AUTOMATIC_FIXED_ROWS + 1) == 0);  // larger rows: batching rules
}

TEST_CASE("automatic rows: the cases it declines run batching rules, with the same numbers and errors") {
  int calls = 0;
  auto f = counting(energy, calls);
  const tw::tensor<double> R = sample({B, 3}, 0.6, 1.4, 5);
  const auto E = tw::vmap(tw::grad(energy), tw::strategy::batched)(R);
  // The batch along dim 1.
  require_close(tw::vmap(tw::grad(f), tw::in_dims(1))(tw::movedim(R, 0, 1)), E, 1e-13);
  // [B, 3, 1] and [B] rows: not [B, N].
  require_close(tw::vmap(tw::grad(f))(tw::reshape(R, {B, 3, 1})), tw::reshape(E, {B, 3, 1}), 1e-13);
  CHECK(calls == 0);
  // Two [B, N] arguments, and an unbatched tensor: declined.
  auto two = counting([](auto x, auto y) { return tw::sum(x * y * x); }, calls);
  const tw::tensor<double> S = sample({B, 3}, -1, 1, 6);
  require_close(tw::vmap(tw::grad(two))(R, S), tw::vmap(tw::grad(two), tw::strategy::batched)(R, S), 1e-13);
  const tw::tensor<double> w = sample({3}, -1, 1, 7);
  require_close(tw::vmap(tw::grad(two), tw::in_dims(0, tw::none))(R, w),
                tw::vmap(tw::grad(two), tw::in_dims(0, tw::none), tw::strategy::batched)(R, w), 1e-13);
  CHECK(calls == 0);
  // An op without a rule for fixed values (matmul with a captured matrix): batching rules.
  const tw::tensor<double> A = sample({2, 3}, -1, 1, 8);
  auto mm = counting([A](auto x) { return tw::sum(tw::tanh(tw::matmul(A, x))); }, calls);
  const auto G = tw::vmap(tw::grad(mm))(R);
  for (std::int64_t b = 0; b < B; b += 17)
    require_close(tw::testing::row(G, b), tw::grad(mm)(tw::testing::row(R, b)), 1e-13);
  CHECK(calls == 0);
  // An op that takes fixed values only in part (sum over dim 0 with keepdim) throws on the fixed
  // loop's first example; batching rules then run f, with their numbers.
  auto kept = counting([](auto x) { return tw::sum(tw::sum(x * x, 0, true)); }, calls);
  require_close(tw::vmap(tw::grad(kept))(R), 2.0 * R, 1e-13);
  CHECK(calls == 1);
  calls = 0;
  // Type-erased code inside f: it cannot take fixed values of duals, so batching rules.
  const std::function<tw::dyn::value(tw::dyn::value)> erased = [](tw::dyn::value r) { return energy(r); };
  auto via_erased = counting([&](auto r) { return erased(r); }, calls);
  require_close(tw::vmap(tw::grad(via_erased))(R), E, 1e-12);
  CHECK(calls == 0);
  // norm with p read at run time (a composite whose branches take abs and amax) runs the fixed
  // loop too, as does norm(r), the 2-norm alone: both give r / |r|.
  auto length_p = counting([](auto r) { return tw::norm(r, 2.0); }, calls);
  const tw::tensor<double> Lp = tw::vmap(tw::grad(length_p))(R);
  CHECK(calls == B);
  calls = 0;
  auto length = counting([](auto r) { return tw::norm(r); }, calls);
  const tw::tensor<double> L = tw::vmap(tw::grad(length))(R);
  CHECK(calls == B);
  calls = 0;
  for (std::int64_t b = 0; b < B; b += 13) {
    const tw::tensor<double> r = tw::testing::row(R, b);
    const tw::tensor<double> expected = r * (1.0 / std::sqrt(tw::sum(r * r).item()));
    require_close(tw::testing::row(Lp, b), expected, 1e-13);
    require_close(tw::testing::row(L, b), expected, 1e-13);
  }
  // p = 1 and infinity on the loop, against batching rules (amax shares the gradient of ties).
  for (const double p : {1.0, std::numeric_limits<double>::infinity()}) {
    auto norm_p = [p](auto r) { return tw::norm(r, p); };
    auto counted = counting(norm_p, calls);
    require_close(tw::vmap(tw::grad(counted))(R), tw::vmap(tw::grad(norm_p), tw::strategy::batched)(R), 1e-13);
    CHECK(calls == B);
    calls = 0;
  }
  const tw::tensor<double> tied({2, 3}, {3.0, -3.0, 1.0, 2.0, 2.0, 2.0});
  auto amax_amin = [](auto r) { return 2.0 * tw::amax(r) + tw::amin(r); };
  require_close(tw::vmap(tw::grad(amax_amin))(tied), tw::tensor<double>({2, 3}, {2.0, 1.0, 0.0, 1.0, 1.0, 1.0}), 1e-15);
  // Not a transform with a tape-free path: vmap(f) itself.
  require_close(tw::vmap(f)(R), tw::vmap(energy, tw::strategy::batched)(R), 0);
  CHECK(calls == 0);
  // Batch sizes that differ: the tensor path's error.
  auto xy = [](auto x, auto y) { return tw::sum(x * y); };
  REQUIRE_THROWS_AS(tw::vmap(tw::grad(xy))(R, sample({B + 1}, -1, 1, 3)), tw::error);
  REQUIRE_THROWS_AS(tw::vmap(tw::grad(xy), tw::in_dims(0, 1))(R, sample({2, B}, -1, 1, 3)), tw::error);
  // No examples: the tensor path's answer.
  CHECK(tw::vmap(tw::grad(f))(tw::tensor<double>({0, 3}, std::vector<double>{})).shape() == tw::shape_t{0, 3});
}

TEST_CASE(
    "automatic rows: f that puts a value the loop takes beside one it does not compiles, and batching rules run it") {
  // prod has no rule for tw::fixed values: on the loop its result is dual_unsupported where sum's is
  // the loop's number. A braced list, a conditional expression and a reassigned variable holding
  // both compile; the first two decline at compile time, the assignment raises on the first
  // example, and batching rules give the numbers.
  const tw::tensor<double> R = sample({B, 3}, 0.5, 1.5, 21);
  auto prod_over = [&](std::int64_t b, std::int64_t i) {
    double p = 1;
    for (std::int64_t k = 0; k < 3; ++k)
      if (k != i) p *= R(b, k);
    return p;
  };
  auto expect = [&](auto grad_of) {
    tw::tensor<double> G = tw::zeros<double>({B, 3});
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < 3; ++i) G(b, i) = grad_of(R(b, i), prod_over(b, i));
    return G;
  };
  int calls = 0;
  auto braced = counting([](auto r) { return tw::sum(tw::stack({tw::sum(r * r), tw::prod(r)})); }, calls);
  require_close(tw::vmap(tw::grad(braced))(R), expect([](double x, double p) { return 2 * x + p; }), 1e-13);
  auto catted = counting([](auto r) { return tw::sum(tw::cat({tw::sin(r), tw::reshape(r * r, {3})})); }, calls);
  require_close(tw::vmap(tw::grad(catted))(R), expect([](double x, double) { return std::cos(x) + 2 * x; }), 1e-13);
  for (const bool first : {true, false}) {
    auto chosen = counting(
        [first](auto r) {
          auto a = tw::sum(r * r);
          auto p = tw::prod(r);
          return first ? a : p;
        },
        calls);
    require_close(tw::vmap(tw::grad(chosen))(R), expect([first](double x, double p) { return first ? 2 * x : p; }),
                  1e-13);
  }
  CHECK(calls == 0);
  auto accumulated = [](auto r) {
    auto e = tw::sum(r * r);
    for (int k = 0; k < 2; ++k) e = e + tw::prod(r);
    return e;
  };
  auto counted = counting(accumulated, calls);
  const tw::tensor<double> G = expect([](double x, double p) { return 2 * x + 2 * p; });
  require_close(tw::vmap(tw::grad(counted))(R), G, 1e-13);
  CHECK(calls == 1);
  require_close(tw::vmap(tw::grad(accumulated), tw::in_dims(tw::fixed_rows<3>))(R), G, 1e-13);
  require_close(tw::vmap(tw::hessian(accumulated))(R), tw::vmap(tw::hessian(accumulated), tw::strategy::batched)(R),
                1e-13);
  // grad on a fixed value itself has no other form: the assignment's tower::error reaches the caller.
  const tw::fixed<double, 3> r0{{R(0, 0), R(0, 1), R(0, 2)}};
  REQUIRE_THROWS_WITH(tw::grad(accumulated)(r0), Catch::Contains("tw::to_tensor"));
}

TEST_CASE("automatic rows: per-example Jacobians and Hessians on small rows") {
  auto g = [](auto x) { return tw::sin(x) * x + 2.0 * x; };
  auto h = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };
  const tw::tensor<double> X = sample({B, 4}, -1, 1, 12);
  require_close(tw::vmap(tw::jacrev(g))(X), tw::vmap(tw::jacrev(g), tw::strategy::batched)(X), 1e-13);
  require_close(tw::vmap(tw::jacfwd(g))(X), tw::vmap(tw::jacfwd(g), tw::strategy::batched)(X), 1e-13);
  int calls = 0;
  auto hc = counting(h, calls);
  const auto H = tw::vmap(tw::hessian(hc))(X);
  // Once per example on the per-example loop (batching rules call f once); a second-order loop
  // compiles its body once, so its last block of 64 may repeat up to 63 examples.
  CHECK(calls >= B);
  CHECK(calls < B + 64);
  require_close(H, tw::vmap(tw::hessian(h), tw::strategy::batched)(X), 1e-12);
  for (std::int64_t b = 0; b < B; b += 19)
    require_close(tw::testing::row(H, b), tw::hessian(h)(tw::testing::row(X, b)), 1e-12);
}

TEST_CASE("automatic rows: a second-order loop's padded and overlapping blocks store every example once") {
  auto h = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };
  for (const std::int64_t n : {1, 2, 63, 64, 65, 129}) {
    const tw::tensor<double> X = sample({n, 3}, -1, 1, static_cast<unsigned>(40 + n));
    int calls = 0;
    const tw::tensor<double> H = tw::vmap(tw::hessian(counting(h, calls)))(X);
    REQUIRE(H.shape() == tw::shape_t{n, 3, 3});
    CHECK(calls >= n);  // the per-example loop ran, not batching rules
    for (std::int64_t b = 0; b < n; ++b)
      require_close(tw::testing::row(H, b), tw::hessian(h)(tw::testing::row(X, b)), 1e-12);
    // out_dims: the padded block's extra examples are dropped before the batch moves.
    const tw::tensor<double> Hl = tw::vmap(tw::hessian(h), tw::out_dims(-1))(X);
    require_close(Hl, tw::movedim(H, 0, -1), 1e-14);
  }
}

TEST_CASE("automatic rows: ops of tensors only (movedim, cat, trace, index_select) make the loop decline") {
  // Each compiles f on numbers, fixed values or jets too; there the op has no form, and the loop
  // declines to batching rules instead of failing to compile.
  const tw::tensor<double> X = sample({4, 3}, -1, 1, 61), M = sample({4, 2, 3}, -1, 1, 62),
                           S = sample({4, 3, 3}, -1, 1, 63);
  auto loop_of = [](auto g, const tw::tensor<double>& A) {
    std::vector<tw::tensor<double>> rows;
    for (std::int64_t b = 0; b < A.shape()[0]; ++b) rows.push_back(g(tw::testing::row(A, b)));
    return tw::stack(rows);
  };
  auto cat2 = [](auto x) { return tw::sum(tw::sin(tw::cat({x, x * x}))); };  // cos x + 2 x cos x^2
  require_close(tw::vmap(tw::grad(cat2))(X), tw::cos(X) + X * 2.0 * tw::cos(X * X), 1e-13);
  const tw::tensor<double> X9 = sample({4, 9}, -1, 1, 64);
  require_close(tw::vmap(tw::grad(cat2))(X9), tw::cos(X9) + X9 * 2.0 * tw::cos(X9 * X9), 1e-13);
  auto moved = [](auto x) {
    return tw::sum(tw::sin(tw::movedim(x, 0, 1)) * tw::reshape(tw::arange<double>(6), {3, 2}));
  };
  require_close(tw::vmap(tw::grad(moved))(M), loop_of(tw::grad(moved), M), 1e-14);
  auto tr = [](auto x) { return tw::trace(tw::matmul(x, x)); };  // d/dX tr(X X) = 2 X^T
  require_close(tw::vmap(tw::grad(tr))(S), tw::movedim(S, 1, 2) * 2.0, 1e-13);
  require_close(tw::vmap(tw::jacrev(tr))(S), tw::movedim(S, 1, 2) * 2.0, 1e-13);
  const tw::tensor<double> X5 = sample({4, 5}, -1, 1, 65);
  auto picked = [](auto x) { return tw::sum(tw::sin(tw::index_select(x, 0, {4, 1}))); };
  tw::tensor<double> H = tw::zeros<double>({4, 5, 5});
  for (std::int64_t b = 0; b < 4; ++b)
    for (std::int64_t i : {1, 4}) H.data()[(b * 5 + i) * 5 + i] = -std::sin(X5(b, i));
  require_close(tw::vmap(tw::hessian(picked))(X5), H, 1e-14);
}
