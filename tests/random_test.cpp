// Random ops and vmap's randomness= policy (torch.func semantics), on both paths: every random op
// x every mode x (batched argument, unbatched argument, value made inside f) x (chunked,
// unchunked) x (static, runtime), checked against a loop over the examples; statistics of large
// draws; random ops under grad, jvp, jacrev, jacfwd and hessian; dropout's gradient.
#include <catch2/catch.hpp>

#include <functional>
#include <set>
#include <string>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

namespace {

constexpr std::int64_t B = 6, D = 64;  // D numbers per example: two examples' 0/1 draws never coincide
constexpr int n_ops = 7;
const char* const op_names[n_ops] = {"randn_like", "rand_like", "randint_like", "bernoulli",
                                     "dropout",    "randn",     "rand"};

/// Random op K on a value v of logical shape [D] (the factories ignore v).
template <int K, class V>
auto draw(const V& v) {
  if constexpr (K == 0) return tw::randn_like(v);
  else if constexpr (K == 1) return tw::rand_like(v);
  else if constexpr (K == 2) return tw::randint_like(v, 0, 1000);
  else if constexpr (K == 3) return tw::bernoulli(tw::full_like(v, 0.3));
  else if constexpr (K == 4) return tw::dropout(tw::ones_like(v), 0.5);
  else if constexpr (K == 5) return tw::randn({D});
  else return tw::rand({D});
}

/// The value op K draws on: S = 0 the batched argument x, 1 the unbatched argument w, 2 a value
/// made inside f. f's result is that draw (plus x * 0, so that it has x's batch).
template <int K, int S>
auto make_f() {
  return [](auto x, auto w) {
    auto src = [&] {
      if constexpr (S == 0) return x;
      else if constexpr (S == 1) return w;
      else return tw::zeros<double>({D});
    };
    return x * 0.0 + draw<K>(src());
  };
}
const char* const source_names[3] = {"batched argument", "unbatched argument", "value made inside f"};

/// Whether every element of t is a value op K can draw.
bool in_range(int k, const tensor<double>& t) {
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.data()[i];
    const bool ok = k == 0 || k == 5   ? std::isfinite(v)
                    : k == 1 || k == 6 ? v >= 0 && v < 1
                    : k == 2           ? v >= 0 && v < 1000 && v == std::floor(v)
                    : k == 3           ? v == 0 || v == 1
                                       : v == 0 || v == 2;
    if (!ok) return false;
  }
  return true;
}

void require_equal(const tensor<double>& a, const tensor<double>& b) {
  INFO("got " << a << "\nexpected " << b);
  REQUIRE(a.shape() == b.shape());
  for (std::int64_t i = 0; i < a.numel(); ++i) REQUIRE(a.data()[i] == b.data()[i]);
}

tensor<double> to_plain(const tensor<double>& t) { return t; }
tensor<double> to_plain(const value& v) { return v.to_tensor(); }

template <int K, int S>
void check_case(tw::randomness_t mode) {
  const tensor<double> X = sample({B, D}, -1, 1, 3), w = sample({D}, -1, 1, 4);
  auto f = make_f<K, S>();
  std::function<value(value, value)> fr = [f](value x, value w2) { return f(x, w2); };
  const auto in = tw::in_dims(0, tw::none);
  const std::uint64_t seed = 100 + K * 10 + S;
  // The reference: a loop over the examples, on plain values. different: one seeded sequence of
  // draws in example order; same: every example starts from the seed.
  std::vector<tensor<double>> rows;
  tw::manual_seed(seed);
  for (std::int64_t b = 0; b < B; ++b) {
    if (mode.kind == tw::randomness_kind::same) tw::manual_seed(seed);
    rows.push_back(f(row(X, b), w));
  }
  const tensor<double> expected = stack(rows);
  REQUIRE(in_range(K, expected));

  for (const std::int64_t chunk : {std::int64_t{0}, std::int64_t{4}}) {
    for (const bool runtime : {false, true}) {
      CAPTURE(chunk, runtime);
      auto run = [&] {
        tw::manual_seed(seed);
        if (runtime) return to_plain(tw::vmap(fr, in, mode, tw::chunk_size(chunk))(X, w));
        return to_plain(tw::vmap(f, in, mode, tw::chunk_size(chunk))(X, w));
      };
      if (mode.kind == tw::randomness_kind::error) {
        REQUIRE_THROWS_WITH(
            run(), Catch::Contains("vmap: called random operation") && Catch::Contains("randomness error mode"));
        REQUIRE(tw::interpreter_stack_depth() == 0);
        continue;
      }
      const tensor<double> r = run();
      require_equal(r, expected);  // also: chunked == unchunked, static == runtime
      for (std::int64_t b = 1; b < B; ++b) {
        if (mode.kind == tw::randomness_kind::same) require_equal(row(r, b), row(r, 0));
        else REQUIRE(max_rel_err(row(r, b), row(r, b - 1)) > 0);
      }
    }
  }
  // Outside vmap the op draws again (the error mode ended with the vmap, exceptions included).
  REQUIRE(in_range(K, to_plain(f(row(X, 0), w))));
}

template <int K, int S>
void check_modes() {
  INFO("op " << op_names[K] << " on a " << source_names[S]);
  for (const auto mode : {tw::randomness::error, tw::randomness::same, tw::randomness::different}) {
    CAPTURE(static_cast<int>(mode.kind));
    check_case<K, S>(mode);
  }
}

template <int... K>
void check_all(std::integer_sequence<int, K...>) {
  ((check_modes<K, 0>(), check_modes<K, 1>(), check_modes<K, 2>()), ...);
}

}  // namespace

TEST_CASE(
    "every random op follows vmap's randomness for batched, unbatched and inner values, chunked or not, on both "
    "paths") {
  check_all(std::make_integer_sequence<int, n_ops>{});
}

TEST_CASE("random draws have the distributions they name") {
  // 100 examples of 1000 numbers each, per example (randomness::different).
  constexpr std::int64_t n = 1000;
  const tensor<double> X = tw::zeros<double>({100, n});
  auto stats = [&](auto f) {
    tw::manual_seed(9);
    const tensor<double> r = tw::vmap(f, tw::randomness::different)(X);
    double m = 0, v = 0;
    for (std::int64_t i = 0; i < r.numel(); ++i) m += r.data()[i];
    m /= static_cast<double>(r.numel());
    for (std::int64_t i = 0; i < r.numel(); ++i) v += (r.data()[i] - m) * (r.data()[i] - m);
    return std::make_pair(m, v / static_cast<double>(r.numel() - 1));
  };
  // Tolerances: 5 standard errors of the mean, 5% of the variance (1e5 draws).
  auto check = [](std::pair<double, double> mv, double mean, double var) {
    INFO("mean " << mv.first << " (expected " << mean << "), variance " << mv.second << " (expected " << var << ")");
    REQUIRE(std::abs(mv.first - mean) <= 5 * std::sqrt(var / 1e5));
    REQUIRE(std::abs(mv.second - var) <= 0.05 * var);
  };
  check(stats([](auto x) { return tw::randn_like(x); }), 0, 1);
  check(stats([](auto x) { return x + tw::randn({n}); }), 0, 1);
  check(stats([](auto x) { return tw::rand_like(x); }), 0.5, 1.0 / 12);
  check(stats([](auto x) { return x + tw::rand({n}); }), 0.5, 1.0 / 12);
  check(stats([](auto x) { return tw::randint_like(x, -3, 7); }), 1.5, (100.0 - 1) / 12);
  check(stats([](auto x) { return tw::bernoulli(tw::full_like(x, 0.3)); }), 0.3, 0.3 * 0.7);
  // dropout of ones, p = 0.25: 0 with probability 0.25, else 4/3: mean 1, variance p / (1 - p).
  check(stats([](auto x) { return tw::dropout(tw::ones_like(x), 0.25); }), 1, 0.25 / 0.75);
  // bernoulli with per-element probabilities: element i of every example is 1 with probability p_i.
  const tensor<double> P = tw::arange<double>(0.0, 1.0, 0.25);  // 0, 0.25, 0.5, 0.75
  tw::manual_seed(2);
  const tensor<double> c =
      tw::vmap([&](auto x) { return x + tw::bernoulli(P); }, tw::randomness::different)(tw::zeros<double>({20000, 4}));
  const tensor<double> frac = tw::mean(c, 0);
  for (std::int64_t i = 0; i < 4; ++i) {
    const double p = 0.25 * static_cast<double>(i);
    REQUIRE(std::abs(frac.data()[i] - p) <= 5 * std::sqrt(p * (1 - p) / 20000) + 1e-12);
  }
  // Factories and manual_seed: the same seed, the same draws, with float too.
  tw::manual_seed(5);
  const tensor<double> a = tw::randn({2, 3});
  tw::manual_seed(5);
  REQUIRE(a.shape() == shape_t{2, 3});
  require_equal(a, tw::randn({2, 3}));
  tw::manual_seed(5);
  const tensor<float> af = tw::randn<float>({2, 3});
  for (std::int64_t i = 0; i < 6; ++i) REQUIRE(af.data()[i] == static_cast<float>(a.data()[i]));
  // The seeded form is unchanged: its own generator.
  require_equal(tw::randn<double>({4}, 42), tw::randn<double>({4}, 42));
}

TEST_CASE("randomness: error by default, same or different on request, on both paths") {
  const tensor<double> X = tw::zeros<double>({4, 3});
  auto noisy = [](auto x) { return x + tw::randn_like(x); };
  REQUIRE_THROWS_WITH(tw::vmap(noisy)(X), Catch::Contains("randomness error mode"));
  REQUIRE(tw::interpreter_stack_depth() == 0);

  tw::manual_seed(3);
  const tensor<double> d = tw::vmap(noisy, tw::randomness::different)(X);
  tw::manual_seed(3);
  const tensor<double> s = tw::vmap(noisy, tw::randomness::same)(X);
  // 'same': every row equal; 'different': rows differ.
  for (std::int64_t b = 1; b < 4; ++b) {
    require_close(row(s, b), row(s, 0), 0);
    REQUIRE(tw::testing::max_rel_err(row(d, b), row(d, 0)) > 1e-3);
  }
  std::function<value(value)> nr = [](value x) { return x + tw::randn_like(x); };
  REQUIRE_THROWS_WITH(tw::vmap(nr)(X), Catch::Contains("randomness error mode"));
  const tensor<double> sr = tw::vmap(nr, tw::randomness::same)(X).to_tensor();
  for (std::int64_t b = 1; b < 4; ++b) require_close(row(sr, b), row(sr, 0), 0);
}

TEST_CASE("randomness=error raises through grad, jacrev, jacfwd and hessian inside vmap, and in every form of vmap") {
  const tensor<double> X = sample({5, 3}, -1, 1, 7), w = sample({3}, -1, 1, 8);
  const tensor<double> x1 = sample({5}, -1, 1, 9);
  auto msg = Catch::Contains("randomness error mode");
  auto check = [&](auto g) {
    // The random op on the batched argument (x) and on the unbatched one (w).
    auto on_x = [g](auto x, auto v) { return g(x, x * v); };
    auto on_w = [g](auto x, auto v) { return g(x, v); };
    std::function<value(value, value)> rx = on_x, rw = on_w;
    const auto in = tw::in_dims(0, tw::none);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(on_x), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(on_w), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(rx), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(rw), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::jacrev(on_w), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::jacfwd(on_w), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::hessian(on_w), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::jacrev(rw), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::jacfwd(rw), in)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(on_w), in, tw::strategy::batched)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(on_w), in, tw::strategy::packets)(X, w), msg);
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(on_w), in, tw::strategy::fused)(X, w), msg);
    REQUIRE(tw::interpreter_stack_depth() == 0);
  };
  check([](auto x, auto v) { return tw::sum(x * tw::randn_like(v)); });
  check([](auto x, auto v) { return tw::sum(x * tw::rand_like(v)); });
  check([](auto x, auto v) { return tw::sum(x * tw::randint_like(v, 0, 4)); });
  check([](auto x, auto v) { return tw::sum(x * tw::bernoulli(tw::full_like(v, 0.5))); });
  check([](auto x, auto v) { return tw::sum(tw::dropout(x * v, 0.5)); });
  check([](auto x, auto) { return tw::sum(x * tw::randn({3})); });
  // vmap(grad(f)) of a function of numbers: the per-example loop on numbers and the fixed rows.
  auto scalar = [](auto x) { return x * tw::randn_like(x); };
  REQUIRE_THROWS_WITH(tw::vmap(tw::grad(scalar), tw::strategy::fused)(x1), msg);
  REQUIRE_THROWS_WITH(tw::vmap(tw::grad(scalar))(x1), msg);
  REQUIRE_THROWS_WITH(tw::vmap(tw::grad([](auto x) { return tw::sum(x * tw::rand_like(x)); }))(X),
                      msg);  // [B, 3]: fixed rows
  // An enclosing vmap in error mode raises even when an inner one allows random ops.
  auto inner = [](auto x) {
    return tw::vmap([](auto y) { return y + tw::randn_like(y); }, tw::randomness::different)(x);
  };
  REQUIRE_THROWS_WITH(tw::vmap(inner)(tw::zeros<double>({2, 3, 4})), msg);
  // dropout in evaluation mode draws nothing: no error.
  require_close(tw::vmap([](auto x) { return tw::dropout(x, 0.5, false); })(X), X, 0);
}

TEST_CASE("nested vmaps: each level applies its own randomness") {
  const tensor<double> X = tw::zeros<double>({3, 4, 16});  // [outer, inner, 16]
  auto draw16 = [](auto y) { return y + tw::randn_like(y); };
  auto check = [&](const tensor<double>& r, bool outer_same, bool inner_same) {
    REQUIRE(r.shape() == shape_t{3, 4, 16});
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 4; ++j) {
        const tensor<double> a = row(row(r, i), j);
        if (i > 0) {
          const tensor<double> up = row(row(r, i - 1), j);
          if (outer_same) require_equal(a, up);
          else REQUIRE(max_rel_err(a, up) > 0);
        }
        if (j > 0) {
          const tensor<double> left = row(row(r, i), j - 1);
          if (inner_same) require_equal(a, left);
          else REQUIRE(max_rel_err(a, left) > 0);
        }
      }
  };
  for (const bool os : {false, true})
    for (const bool is : {false, true}) {
      CAPTURE(os, is);
      const auto om = os ? tw::randomness::same : tw::randomness::different;
      const auto im = is ? tw::randomness::same : tw::randomness::different;
      check(tw::vmap([&](auto x) { return tw::vmap(draw16, im)(x); }, om)(X), os, is);
      std::function<value(value)> outer = [&](value x) { return tw::vmap(draw16, im)(x); };
      check(tw::vmap(outer, om)(X).to_tensor(), os, is);
    }
}

TEST_CASE("random ops are constants under grad and jvp; the Jacobians draw once for every basis direction") {
  const tensor<double> x = sample({4}, -1, 1, 5), t = sample({4}, -1, 1, 6);
  auto check = [&](auto op) {
    auto f = [op](auto v) { return v * 2.0 + op(v); };
    auto loss = [f](auto v) { return tw::sum(f(v)); };
    std::function<value(value)> lr = loss, fr = f;
    require_close(tw::grad(loss)(x), tw::full_like(x, 2.0), 0);
    require_close(tw::grad(lr)(x).to_tensor(), tw::full_like(x, 2.0), 0);
    require_close(tw::jvp(f, std::tuple{x}, std::tuple{t}).second, t * 2.0, 0);
    require_close(tw::jvp(fr, std::tuple{x}, std::tuple{t}).second.to_tensor(), t * 2.0, 0);
    // x * s with s the sum of one draw: every basis direction sees the same s, so the Jacobian
    // is s times the identity (per-direction draws would give different diagonal entries).
    auto scaled = [op](auto v) { return v * tw::sum(op(v)); };
    std::function<value(value)> sr = scaled;
    auto scaled_loss = [op](auto v) { return tw::sum(v * v) * tw::sum(op(v)) * 0.5; };
    for (const tensor<double>& J : {tw::jacrev(scaled)(x), tw::jacfwd(scaled)(x), tw::jacrev(sr)(x).to_tensor(),
                                    tw::jacfwd(sr)(x).to_tensor(), tw::hessian(scaled_loss)(x)}) {
      REQUIRE(J.shape() == shape_t{4, 4});
      for (std::int64_t i = 0; i < 4; ++i)
        for (std::int64_t j = 0; j < 4; ++j) REQUIRE(J(i, j) == (i == j ? J(0, 0) : 0.0));
    }
  };
  check([](auto v) { return tw::randn_like(v); });
  check([](auto v) { return tw::rand_like(v) + 1.0; });  // + 1: s is never 0
  check([](auto v) { return tw::randint_like(v, 1, 9); });
  check([](auto v) { return tw::bernoulli(tw::full_like(v, 0.5)) + 1.0; });
  check([](auto) { return tw::randn({4}); });
}

TEST_CASE("dropout: x * mask / (1 - p), its gradient mask / (1 - p), per example under vmap") {
  const tensor<double> ones = tw::ones<double>({64});
  const double p = 0.3;
  tw::manual_seed(21);
  const tensor<double> y = tw::dropout(ones, p);  // = mask / (1 - p)
  std::set<double> seen(y.data(), y.data() + y.numel());
  REQUIRE(seen == std::set<double>{0.0, 1.0 / (1 - p)});
  auto loss = [p](auto x) { return tw::sum(tw::dropout(x, p)); };
  std::function<value(value)> lr = loss;
  tw::manual_seed(21);
  require_close(tw::grad(loss)(ones), y, 0);
  tw::manual_seed(21);
  require_close(tw::grad(lr)(ones).to_tensor(), y, 0);
  // At another x the mask is the same for the same seed: dropout(x) = x * y, d/dx = y.
  const tensor<double> x = sample({64}, -1, 1, 22), t = sample({64}, -1, 1, 23);
  tw::manual_seed(21);
  require_close(tw::dropout(x, p), x * y, 1e-15);
  tw::manual_seed(21);
  require_close(tw::jvp([p](auto v) { return tw::dropout(v, p); }, std::tuple{x}, std::tuple{t}).second, t * y, 1e-15);
  // Per example: vmap(grad) equals the masks vmap(dropout) draws from the same seed.
  const tensor<double> Ones = tw::ones<double>({5, 64});
  tw::manual_seed(4);
  const tensor<double> masks = tw::vmap([p](auto v) { return tw::dropout(v, p); }, tw::randomness::different)(Ones);
  tw::manual_seed(4);
  require_close(tw::vmap(tw::grad(loss), tw::randomness::different)(Ones), masks, 0);
  tw::manual_seed(4);
  require_close(tw::vmap(tw::grad(lr), tw::randomness::different)(Ones).to_tensor(), masks, 0);
  REQUIRE(max_rel_err(row(masks, 1), row(masks, 0)) > 0);
  // Evaluation mode and the edges of p.
  require_close(tw::dropout(x, p, false), x, 0);
  require_close(tw::dropout(x, 0.0), x, 0);
  require_close(tw::dropout(x, 1.0), tw::zeros<double>({64}), 0);
  require_close(tw::grad([](auto v) { return tw::sum(tw::dropout(v, 1.0)); })(x), tw::zeros<double>({64}), 0);
}

TEST_CASE("random ops reject bad arguments with the op's name") {
  const tensor<double> x = tw::zeros<double>({3});
  REQUIRE_THROWS_WITH(tw::dropout(x, 1.5), Catch::Contains("dropout: p must be in [0, 1], got 1.5"));
  REQUIRE_THROWS_WITH(tw::dropout(x, -0.1), Catch::Contains("dropout: p must be in [0, 1]"));
  REQUIRE_THROWS_WITH(tw::bernoulli(tw::full_like(x, 2.0)),
                      Catch::Contains("bernoulli: probabilities must be in [0, 1], got 2"));
  REQUIRE_THROWS_WITH(
      tw::vmap([](auto v) { return tw::bernoulli(v); }, tw::randomness::same)(tw::full<double>({2, 3}, -1.0)),
      Catch::Contains("bernoulli: probabilities must be in [0, 1]"));
  REQUIRE_THROWS_WITH(tw::randint_like(x, 5, 5),
                      Catch::Contains("randint_like: high must be greater than low, got low=5, high=5"));
  REQUIRE_THROWS_WITH(tw::randn({-2}), Catch::Contains("randn"));
  REQUIRE_THROWS_WITH(tw::rand({-2}), Catch::Contains("rand"));
}
