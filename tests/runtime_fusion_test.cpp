// The runtime path's fused vmap (transforms/runtime/fusion.hpp): f traced once, then run as a
// per-example program on lanes of examples. Every linear layout op and reduction, and compositions
// under grad, hessian, jacrev and jacfwd, must give what the batching rules give
// (strategy::batched, the same binary) on a batch that is not a whole number of blocks; ops with
// no fused form, small batches and inner vmaps must fall back and still give those values. (Each
// elementwise op: the op checker's traced rows, tests/op_checker.hpp.)
// Only the runtime path is instantiated, to keep this file quick to compile.
#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include "tests/check.hpp"

namespace tw = tower;
using tw::tensor;
using tw::dyn::value;
using fn1 = std::function<value(value)>;
using fn2 = std::function<value(value, value)>;

namespace {

// 300 examples: two blocks of 128 lanes and a short one.
constexpr std::int64_t B = 300;

tensor<double> uniform(tw::shape_t s, double lo, double hi, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(tw::numel_of(s)));
  for (auto& x : v) x = d(g);
  return tensor<double>(std::move(s), std::move(v));
}

/// Runs `run` fused (the default strategy) and by batching rules, and compares: equal up to the
/// last bits (sums may add in another order), and the default must have fused.
template <class Run>
void require_fused_matches(const std::string& what, Run run, double tol = 1e-14) {
  INFO(what);
  tw::dyn::last_fusion() = {};
  const tensor<double> fused = run(tw::strategy::automatic).to_tensor();
  const tw::dyn::fusion_report report = tw::dyn::last_fusion();
  INFO("refusal: " << report.refusal);
  REQUIRE(report.fused);
  const tensor<double> batched = run(tw::strategy::batched).to_tensor();
  tw::testing::require_close(fused, batched, tol);
}

}  // namespace

TEST_CASE("fused runtime vmap: layout ops and reductions move and add registers") {
  const tensor<double> X = uniform({B, 2, 3}, -2, 2, 7);
  const std::vector<std::pair<std::string, fn1>> fs = {
      {"sum", [](value x) { return tw::sum(x) * x; }},
      {"sum over a dim", [](value x) { return tw::sum(x, 1) * 2.0; }},
      {"sum keepdim", [](value x) { return x / tw::sum(x * x, 0, true); }},
      {"reshape", [](value x) { return tw::reshape(x, {3, 2}) * tw::reshape(x, {3, 2}); }},
      {"broadcast_to", [](value x) { return tw::broadcast_to(tw::sum(x, 0), {4, 3}) + 1.0; }},
      {"movedim", [](value x) { return tw::sin(tw::movedim(x, 0, 1)); }},
      {"transpose", [](value x) { return tw::transpose(x, 0, 1) * 3.0; }},
      {"permute", [](value x) { return tw::permute(x, {1, 0}) - 1.0; }},
      {"narrow", [](value x) { return tw::narrow(x, 1, 1, 2) * tw::narrow(x, 1, 0, 2); }},
      {"unsqueeze and squeeze", [](value x) { return tw::squeeze(tw::unsqueeze(x, 1) * 2.0, 1); }},
      {"flatten", [](value x) { return tw::exp(tw::flatten(x)); }},
  };
  for (const auto& entry : fs) {
    const std::string& name = entry.first;
    const fn1& f = entry.second;
    fn1 loss = [f](value x) { return tw::sum(tw::sin(f(x))); };
    require_fused_matches(name, [&](auto st) { return tw::vmap(f, st)(X); });
    require_fused_matches(name + ", grad", [&](auto st) { return tw::vmap(tw::grad(loss), st)(X); });
  }
}

TEST_CASE("fused runtime vmap: per-example Jacobians and Hessians") {
  const tensor<double> X = uniform({B, 4}, -1, 1, 8);
  fn1 f = [](value x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x) * tw::cos(x)); };
  fn1 g = [](value x) { return tw::tanh(x) * tw::sum(x); };
  require_fused_matches("hessian", [&](auto st) { return tw::vmap(tw::hessian(f), st)(X); }, 1e-13);
  require_fused_matches("jacrev", [&](auto st) { return tw::vmap(tw::jacrev(g), st)(X); });
  require_fused_matches("jacfwd", [&](auto st) { return tw::vmap(tw::jacfwd(g), st)(X); });
  // And against a finite-difference Hessian of one example.
  const tensor<double> H = tw::vmap(tw::hessian(f))(X).to_tensor();
  REQUIRE(tw::dyn::last_fusion().fused);
  const tensor<double> x0 = tw::testing::row(X, 17);
  fn1 df = tw::grad(f);
  for (std::int64_t i = 0; i < 4; ++i) {
    tensor<double> xp = x0, xm = x0;
    xp.data()[i] += 1e-5;
    xm.data()[i] -= 1e-5;
    const tensor<double> col = (df(value(xp)).to_tensor() - df(value(xm)).to_tensor()) / 2e-5;
    for (std::int64_t j = 0; j < 4; ++j) tw::testing::require_close(H.data()[17 * 16 + j * 4 + i], col.data()[j], 1e-6);
  }
}

TEST_CASE("fused runtime vmap: in_dims, out_dims, several outputs, captured values") {
  const tensor<double> X = uniform({3, B}, -1, 1, 9), W = uniform({3}, -1, 1, 10);
  fn1 f = [W](value x) { return tw::exp(x * W) * tw::sum(x); };  // W is captured: constants
  require_fused_matches("in_dims 1", [&](auto st) { return tw::vmap(f, tw::in_dims(1), st)(X); });
  require_fused_matches("out_dims 1", [&](auto st) { return tw::vmap(f, tw::in_dims(1), tw::out_dims(1), st)(X); });
  require_fused_matches("in_dims -1", [&](auto st) {
    return tw::vmap(tw::grad(fn1([W](value x) { return tw::sum(x * x * W); })), tw::in_dims(-1), st)(X);
  });
  // Two outputs, the second batched in dim 1.
  std::function<std::tuple<value, value>(value)> two = [](value x) {
    return std::make_tuple(tw::sin(x), tw::sum(x) * 2.0);
  };
  const auto fused = tw::vmap(two, tw::in_dims(1), tw::out_dims(1, 0))(X);
  REQUIRE(tw::dyn::last_fusion().fused);
  const auto batched = tw::vmap(two, tw::in_dims(1), tw::out_dims(1, 0), tw::strategy::batched)(X);
  tw::testing::require_close(std::get<0>(fused).to_tensor(), std::get<0>(batched).to_tensor(), 1e-15);
  tw::testing::require_close(std::get<1>(fused).to_tensor(), std::get<1>(batched).to_tensor(), 1e-15);
  REQUIRE(std::get<0>(fused).shape() == tw::shape_t{3, B});
  // Outputs that are constants: f ignores x, and grad of a function that does not read it.
  fn1 zeros = [](value x) { return tw::zeros_like(x) + 2.0; };
  require_fused_matches("constant output", [&](auto st) { return tw::vmap(zeros, tw::in_dims(1), st)(X); });
  fn1 flat = [W](value) { return tw::sum(value(W)); };
  require_fused_matches("grad of a constant", [&](auto st) { return tw::vmap(tw::grad(flat), tw::in_dims(1), st)(X); });
  // strategy::fused asks for the same.
  tw::vmap(f, tw::in_dims(1), tw::strategy::fused)(X);
  REQUIRE(tw::dyn::last_fusion().fused);
  // An output that is an argument, unchanged.
  fn1 id = [](value x) { return x; };
  require_fused_matches("identity", [&](auto st) { return tw::vmap(id, tw::in_dims(1), st)(X); });
}

TEST_CASE("fused runtime vmap: f runs once, for the trace; dead code and repeats are dropped") {
  const tensor<double> X = uniform({1000, 3}, 0.6, 1.4, 11);
  int calls = 0;
  fn1 energy = [&calls](value r) {
    ++calls;
    auto s = 1.0 / tw::sum(r * r);
    auto s3 = s * s * s;
    return 4.0 * (s3 * s3 - s3);
  };
  const tensor<double> G = tw::vmap(tw::grad(energy))(X).to_tensor();
  const auto report = tw::dyn::last_fusion();
  REQUIRE(report.fused);
  REQUIRE(calls == 1);
  // The energy itself is not returned: its last instructions do not run.
  REQUIRE(report.instructions < report.traced_instructions);
  REQUIRE(report.buffers < report.instructions);
  // Against the hand-written gradient (24 s^4 - 48 s^7) r.
  for (std::int64_t b = 0; b < 1000; b += 37) {
    const double* r = X.data() + 3 * b;
    const double s = 1.0 / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    const double c = 24 * std::pow(s, 4) - 48 * std::pow(s, 7);
    for (int k = 0; k < 3; ++k) tw::testing::require_close(G.data()[3 * b + k], c * r[k], 1e-12);
  }
  // The same stateless op on the same registers is computed once.
  fn1 twice = [](value x) { return tw::sin(x) * tw::sin(x) + tw::sin(x) * tw::sin(x); };
  tw::vmap(twice)(X);
  REQUIRE(tw::dyn::last_fusion().fused);
  REQUIRE(tw::dyn::last_fusion().traced_instructions == 3 * 3);  // sin, mul, add per element
}

TEST_CASE("fused runtime vmap: what it does not fuse runs by batching rules, with the same values") {
  const tensor<double> X = uniform({B, 3}, -1, 1, 12), A = uniform({3, 3}, -1, 1, 13);
  // An op with no fused form.
  fn1 mv = [A](value x) { return tw::tanh(tw::matmul(A, x)); };
  const tensor<double> got = tw::vmap(tw::jacrev(mv))(X).to_tensor();
  REQUIRE_FALSE(tw::dyn::last_fusion().fused);
  REQUIRE(tw::dyn::last_fusion().refusal.find("matmul") != std::string::npos);
  tw::testing::require_close(got, tw::vmap(tw::jacrev(mv), tw::strategy::batched)(X).to_tensor(), 1e-15);
  // A small batch.
  fn1 f = [](value x) { return tw::sin(x) * x; };
  const tensor<double> small = uniform({10, 3}, -1, 1, 14);
  tw::testing::require_close(tw::vmap(f)(small).to_tensor(), tw::vmap(f, tw::strategy::batched)(small).to_tensor(), 0);
  REQUIRE_FALSE(tw::dyn::last_fusion().fused);
  // A vmap inside another transform: its values are wrapped.
  fn1 outer = [f](value x) { return tw::sum(tw::vmap(f)(x)); };
  const tensor<double> gx = tw::grad(outer)(value(X)).to_tensor();
  REQUIRE_FALSE(tw::dyn::last_fusion().fused);
  tw::testing::require_close(gx, tw::cos(X) * X + tw::sin(X), 1e-14);
  // strategy::batched and strategy::packets do not trace, nor does chunk_size.
  tw::dyn::last_fusion() = {};
  tw::dyn::last_fusion().refusal = "untouched";
  tw::vmap(f, tw::strategy::packets)(X);
  tw::vmap(f, tw::chunk_size(64))(X);
  REQUIRE(tw::dyn::last_fusion().refusal == "untouched");
}

TEST_CASE("fused runtime vmap: errors in f are the batching rules' errors") {
  const tensor<double> X = uniform({B, 3}, -1, 1, 15);
  fn1 bad = [](value x) { return x + tw::narrow(x, 0, 0, 2); };  // [3] + [2]
  std::string fused, batched;
  try {
    tw::vmap(bad)(X);
  } catch (const tw::error& e) {
    fused = e.what();
  }
  try {
    tw::vmap(bad, tw::strategy::batched)(X);
  } catch (const tw::error& e) {
    batched = e.what();
  }
  REQUIRE_FALSE(fused.empty());
  REQUIRE(fused == batched);
  fn1 scalar = [](value x) { return x; };
  REQUIRE_THROWS_AS(tw::vmap(tw::grad(scalar))(X), tw::error);  // grad of a [3] output
}

TEST_CASE("fused runtime vmap: an output over 8 MB, written with streaming stores, is complete") {
  constexpr std::int64_t n = std::int64_t{1} << 19;  // [n, 3] doubles out: 12 MiB
  const tensor<double> X = uniform({n, 3}, 0.6, 1.4, 16);
  fn1 energy = [](value r) {
    auto s = 1.0 / tw::sum(r * r);
    return s * s - s;
  };
  const tensor<double> G = tw::vmap(tw::grad(energy))(X).to_tensor();
  REQUIRE(tw::dyn::last_fusion().fused);
  REQUIRE(G.shape() == tw::shape_t{n, 3});
  // dE/dr = (2 s - 1) ds/dr, ds/dr = -2 s^2 r: every element, the last block's too.
  double worst = 0;
  for (std::int64_t b = 0; b < n; ++b) {
    const double* r = X.data() + 3 * b;
    const double s = 1.0 / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
    for (int k = 0; k < 3; ++k) {
      const double want = (2 * s - 1) * (-2 * s * s * r[k]);
      worst = std::max(worst, std::abs(G.data()[3 * b + k] - want) / std::max(1.0, std::abs(want)));
    }
  }
  REQUIRE(worst < 1e-13);
}

TEST_CASE("fused runtime vmap: arithmetic pairs run in one pass and give the same bits") {
  const tensor<double> X = uniform({B, 3}, 0.5, 2, 17), Y = uniform({B, 3}, 0.5, 2, 18);
  // Every pair of +, -, *, / with the first result as left operand, right operand, or both;
  // negation of a result and of an operand.
  fn2 f = [](value x, value y) {
    value t = x * y;
    return ((t + x) - (y / x)) * (x - y * y) / (x + y) + t * t + (x - y) / (y + x) * (x / y - x) + (t - y) * (x + t) +
           (-(y - 2.0) + (-x) * y - (-(-t)));
  };
  fn2 loss = [f](value x, value y) { return tw::sum(f(x, y)); };
  for (int k = 0; k < 2; ++k) {
    INFO((k ? "grad" : "values"));
    const tensor<double> fused = (k ? tw::vmap(tw::grad(loss))(X, Y) : tw::vmap(f)(X, Y)).to_tensor();
    const auto report = tw::dyn::last_fusion();
    REQUIRE(report.fused);
    const std::string listing = report.listing();
    INFO(listing);
    REQUIRE(report.instructions < report.traced_instructions);  // pairs (and dropped code)
    auto has_any = [&](std::initializer_list<const char*> texts) {
      return std::any_of(texts.begin(), texts.end(),
                         [&](const char* t) { return listing.find(t) != std::string::npos; });
    };
    REQUIRE(has_any(
        {"(add(", "(sub(", "(mul(", "(div(", ", add(", ", sub(", ", mul(", ", div("}));  // "r9 = mul(add(r3, r4), r5)"
    // A negated result: f's own -(y - 2.0). (grad's program negates shared values only: div's
    // VJP computes g / b once for both partials, so its negation is an operand, below.)
    if (k == 0) REQUIRE(has_any({"neg(add(", "neg(sub(", "neg(mul(", "neg(div("}));
    REQUIRE(has_any({"add(neg(", "sub(neg(", "mul(neg(", "div(neg(", ", neg("}));  // a negated operand
    const tensor<double> batched =
        (k ? tw::vmap(tw::grad(loss), tw::strategy::batched)(X, Y) : tw::vmap(f, tw::strategy::batched)(X, Y))
            .to_tensor();
    tw::testing::require_close(fused, batched, 0);  // ISO C++ does not contract a * b + c
  }
}

TEST_CASE("fused runtime vmap: arithmetic that returns an operand exactly emits nothing") {
  const tensor<double> X = uniform({B, 3}, -2, 2, 19);
  // x * 1, 1 * x, x / 1, x + -0, -0 + x, x - 0 and -(-x) are x bit for bit, -0 and infinities included.
  fn1 same = [](value x) { return -(-((1.0 * ((x * 1.0) / 1.0) + (-0.0)) - 0.0)) + -0.0; };
  tensor<double> S = uniform({B, 3}, -2, 2, 19);
  S.data()[0] = -0.0;
  S.data()[1] = std::numeric_limits<double>::infinity();
  S.data()[2] = -std::numeric_limits<double>::infinity();
  const tensor<double> Y = tw::vmap(same)(S).to_tensor();
  const auto report = tw::dyn::last_fusion();
  REQUIRE(report.fused);
  REQUIRE(report.instructions == 0);  // the output is the input's register
  for (std::int64_t i = 0; i < S.numel(); ++i) REQUIRE(std::signbit(Y.data()[i]) == std::signbit(S.data()[i]));
  tw::testing::require_close(Y, S, 0);
  // Not identities: x + 0 (-0 + 0 is +0), x * -1, x - -0 (-0 - -0 is +0), 2 * x; each stays an instruction per element.
  for (const auto& [name, f] : std::vector<std::pair<std::string, fn1>>{{"x + 0", [](value x) { return x + 0.0; }},
                                                                        {"x * -1", [](value x) { return x * -1.0; }},
                                                                        {"x - -0", [](value x) { return x - -0.0; }},
                                                                        {"2 * x", [](value x) { return 2.0 * x; }}}) {
    INFO(name);
    const tensor<double> fused = tw::vmap(f)(S).to_tensor();
    REQUIRE(tw::dyn::last_fusion().instructions == 3);  // one per element
    const tensor<double> batched = tw::vmap(f, tw::strategy::batched)(S).to_tensor();
    for (std::int64_t i = 0; i < S.numel(); ++i)
      REQUIRE(std::signbit(fused.data()[i]) == std::signbit(batched.data()[i]));
    tw::testing::require_close(fused, batched, 0);
  }
  // Hessians by jacfwd(jacrev): the one-hot tangents' products by 1 are gone, the values stay.
  fn1 f = [](value x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };
  const tensor<double> H = tw::vmap(tw::hessian(f))(X).to_tensor();
  const std::string listing = tw::dyn::last_fusion().listing();
  INFO(listing);
  REQUIRE(listing.find("mul(c1.000000") == std::string::npos);  // 1 * t
  REQUIRE(listing.find("c1.000000)") == std::string::npos);     // t * 1
  tw::testing::require_close(H, tw::vmap(tw::hessian(f), tw::strategy::batched)(X).to_tensor(), 1e-14);
}
