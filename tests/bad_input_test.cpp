// Bad shapes and sizes (issue 33): every bad size, overflowing element count or slice bound
// raises tower::error naming the op and the shape, before anything is allocated or read, on the
// static path and the runtime path; errors name the op the user called; an empty batch under
// vmap gives empty results of the right shape.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

namespace {

using rfn = std::function<value(value)>;
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t two31 = std::int64_t{1} << 31, two62 = std::int64_t{1} << 62;

/// A call that must raise tower::error whose message contains every needle and none of the
/// excluded words, and leave the interpreter stack empty.
struct bad_case {
  std::string what;
  std::function<void()> call;
  std::vector<std::string> needles;
  std::vector<std::string> excluded = {};
};

void require_bad(const bad_case& c) {
  INFO("case: " << c.what);
  std::string message;
  try {
    c.call();
  } catch (const tw::error& e) {
    message = e.what();
  } catch (const std::exception& e) {
    FAIL("not a tower::error: " << e.what());
  }
  INFO("message: " << message);
  REQUIRE(!message.empty());
  for (const auto& n : c.needles) {
    INFO("expected to contain: " << n);
    CHECK(message.find(n) != std::string::npos);
  }
  for (const auto& n : c.excluded) {
    INFO("expected not to contain: " << n);
    CHECK(message.find(n) == std::string::npos);
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

/// The cases on values of type V: tensor<double> (static path) or tw::dyn::value (runtime path).
/// Each op also runs under grad (the static tape or runtime grad nodes) and under vmap, where it
/// sees wrapped values. Under vmap a kernel's message has the physical shape (docs/diagnostics.md,
/// "known limits"): there only the op's name is looked for.
template <class V>
std::vector<bad_case> op_cases() {
  const tensor<double> x = sample({4}), m = sample({2, 3}), e = tw::zeros<double>({0});
  auto v = [](const tensor<double>& t) { return V(t); };
  // op(x) directly, inside grad(sum(op(x))), and inside vmap over two copies of x.
  std::vector<bad_case> cases;
  auto add = [&](std::string what, const tensor<double>& arg, auto op, std::vector<std::string> needles,
                 std::vector<std::string> excluded = {}) {
    cases.push_back({what, [=] { (void)op(v(arg)); }, needles, excluded});
    const tensor<double> args = stack({arg, arg});
    if constexpr (std::is_same_v<V, value>) {
      cases.push_back({what + " (under grad)",
                       [=] { (void)tw::grad(rfn([=](value a) { return tw::sum(op(a)); }))(arg); }, needles, excluded});
      cases.push_back({what + " (under vmap)",
                       [=] { (void)tw::vmap(rfn([=](value a) { return op(a); }))(args); },
                       {needles.front()}});
    } else {
      cases.push_back({what + " (under grad)", [=] { (void)tw::grad([=](auto a) { return tw::sum(op(a)); })(arg); },
                       needles, excluded});
      cases.push_back(
          {what + " (under vmap)", [=] { (void)tw::vmap([=](auto a) { return op(a); })(args); }, {needles.front()}});
    }
  };
  // Slicing: start + length must not overflow.
  add("narrow: start + length overflows", x, [](auto a) { return tw::narrow(a, 0, int64_max, 2); }, {"narrow", "[4]"});
  add("narrow: a huge length", x, [](auto a) { return tw::narrow(a, 0, 1, int64_max); }, {"narrow", "[4]"});
  add("narrow: the most negative start", x, [](auto a) { return tw::narrow(a, 0, int64_min, 1); }, {"narrow", "[4]"});
  add("narrow: negative length", x, [](auto a) { return tw::narrow(a, 0, 2, -1); }, {"narrow", "[4]"});
  add("narrow: start past the end", x, [](auto a) { return tw::narrow(a, 0, 5, 0); }, {"narrow", "[4]"});
  add("pad: start + size overflows", x, [](auto a) { return tw::call_op(tw::pad_op{0, int64_max, 8}, a); },
      {"pad", "[4]"});
  add("split: size 0", x, [](auto a) { return tw::split(a, 0).at(0); }, {"split", "size must be positive"});
  add("split: size -2", x, [](auto a) { return tw::split(a, -2).at(0); }, {"split", "-2"});
  // Element counts that overflow int64.
  add("reshape: [2^62, 4] of an empty tensor", e, [](auto a) { return tw::reshape(a, {two62, 4}); },
      {"reshape", "[4611686018427387904, 4]"});
  add("reshape: [2^62, 4, -1] of an empty tensor", e, [](auto a) { return tw::reshape(a, {two62, 4, -1}); },
      {"reshape", "[4611686018427387904, 4, -1]"});
  add("broadcast_to: [2^62, 4]", x.with_shape({1, 4}), [](auto a) { return tw::broadcast_to(a, {two62, 4}); },
      {"broadcast_to", "[4611686018427387904, 4]"});
  add("expand: [2^62, 8, 4]", x.with_shape({1, 4}), [](auto a) { return tw::expand(a, {two62, 8, -1}); },
      {"expand", "[4611686018427387904, 8, 4]"});
  // Negative sizes.
  add("reshape: negative size", x, [](auto a) { return tw::reshape(a, {-2, -2}); }, {"reshape", "[-2, -2]"});
  add("expand: fewer dims", m, [](auto a) { return tw::expand(a, {-1}); }, {"expand", "[-1]", "[2, 3]"});
  add("expand: negative size", x, [](auto a) { return tw::expand(a, {-2, 4}); }, {"expand", "[-2, 4]"});
  add("broadcast_to: negative size", x, [](auto a) { return tw::broadcast_to(a, {-1, 4}); },
      {"broadcast_to", "[-1, 4]"});
  // Errors that name the op the user called, with the user's shapes.
  add("mv: mismatched sizes", m, [](auto a) { return tw::mv(a, tw::ones<double>({2})); }, {"mv", "[2, 3]", "[2]"},
      {"matmul", "[2, 1]"});
  add("matmul: vector of the wrong size", m, [](auto a) { return tw::matmul(a, tw::ones<double>({2})); },
      {"matmul", "[2, 3]", "[2]"}, {"[2, 1]"});
  add("mm: mismatched sizes", m, [](auto a) { return tw::mm(a, a); }, {"mm", "[2, 3] and [2, 3]"}, {"matmul"});
  add("movedim: source out of range", m, [](auto a) { return tw::movedim(a, 5, 0); }, {"movedim", "5", "[2, 3]"});
  add("movedim: destination out of range", m, [](auto a) { return tw::movedim(a, 0, -3); },
      {"movedim", "-3", "[2, 3]"});
  add("stack: dim out of range", x, [](auto a) { return tw::stack(std::vector<decltype(a)>{a, a}, 3); },
      {"stack", "3", "[4]"}, {"unsqueeze"});
  add("cross_entropy: class index -1", m, [](auto a) { return tw::cross_entropy(a, tensor<double>{-1.0, 0.0}); },
      {"cross_entropy", "-1"});
  add("cross_entropy: class index 3 of 3", m, [](auto a) { return tw::cross_entropy(a, tensor<double>{0.0, 3.0}); },
      {"cross_entropy", "3"});
  add("cross_entropy: class index 0.5", m, [](auto a) { return tw::cross_entropy(a, tensor<double>{0.5, 1.0}); },
      {"cross_entropy", "0.5"});
  // A valid shape whose buffer is more than tower allocates (AddressSanitizer would abort).
  add("a product of 2^40 expanded rows", x,
      [](auto a) { return tw::expand(tw::unsqueeze(a, 0), {std::int64_t{1} << 40, -1}) * 2.0; },
      {"expand", "[1099511627776, 4]", "1 TiB"});
  add("broadcast_to: 2^36 rows of 4", x, [](auto a) { return tw::broadcast_to(a, {std::int64_t{1} << 36, 4}); },
      {"broadcast_to", "[68719476736, 4]", "1 TiB"});
  add("gather: negative index", m, [](auto a) { return tw::gather(a, 1, tensor<double>({2, 1}, {-1.0, 0.0})); },
      {"gather", "-1"});
  return cases;
}

/// Creation ops and constructors: sizes checked before anything is allocated.
std::vector<bad_case> creation_cases() {
  const std::string huge = "[2147483648, 2147483648, 4]";
  return {
      {"tensor: [2^31, 2^31, 4] with no data",
       [=] { (void)tensor<double>({two31, two31, 4}, std::vector<double>{}); },
       {"tensor", huge}},
      {"zeros: [2^31, 2^31, 4]", [=] { (void)tw::zeros<double>({two31, two31, 4}); }, {"zeros", huge}},
      {"ones: [2^31, 2^31, 4]", [=] { (void)tw::ones<float>({two31, two31, 4}); }, {"ones", huge}},
      {"zeros: [2^40, 4], 8 TiB",
       [] { (void)tw::zeros<double>({std::int64_t{1} << 40, 4}); },
       {"zeros", "[1099511627776, 4]", "1 TiB"}},
      // Counts that fit int64 but not a std::vector (2^60 doubles and more): tower::error, not
      // std::length_error, before anything is allocated.
      {"zeros: [2^61]", [] { (void)tw::zeros<double>({std::int64_t{1} << 61}); }, {"zeros", "[2305843009213693952]"}},
      {"ones: [2^62] floats",
       [] { (void)tw::ones<float>({std::int64_t{1} << 62}); },
       {"ones", "[4611686018427387904]"}},
      {"full: [2^61]", [] { (void)tw::full<double>({std::int64_t{1} << 61}, 1.0); }, {"full", "[2305843009213693952]"}},
      {"randn: [2^61]",
       [] { (void)tw::randn<double>({std::int64_t{1} << 61}, 0); },
       {"randn", "[2305843009213693952]"}},
      {"randn: [2^61], the thread's generator",
       [] { (void)tw::randn({std::int64_t{1} << 61}); },
       {"randn", "[2305843009213693952]"}},
      {"eye: 2^31", [] { (void)tw::eye<double>(two31); }, {"eye", "[2147483648, 2147483648]"}},
      {"arange: 2^61", [] { (void)tw::arange<double>(std::int64_t{1} << 61); }, {"arange", "[2305843009213693952]"}},
      {"arange: to infinity",
       [] { (void)tw::arange<double>(0.0, std::numeric_limits<double>::infinity(), 1.0); },
       {"arange", "inf"}},
      {"arange: a NaN step",
       [] { (void)tw::arange<double>(0.0, 1.0, std::numeric_limits<double>::quiet_NaN()); },
       {"arange", "nan"}},
      {"tensor: negative size", [] { (void)tensor<double>({-1, 2}, std::vector<double>{}); }, {"tensor", "[-1, 2]"}},
      {"zeros: negative size", [] { (void)tw::zeros<double>({-1, 2}); }, {"zeros", "[-1, 2]"}},
      {"ones: negative size", [] { (void)tw::ones<double>({3, -2}); }, {"ones", "[3, -2]"}},
      {"full: negative size", [] { (void)tw::full<double>({-4}, 1.0); }, {"full", "[-4]"}},
      {"randn: negative size", [] { (void)tw::randn<double>({-4}); }, {"randn", "[-4]"}},
      {"eye: negative size", [] { (void)tw::eye<double>(-2); }, {"eye", "-2"}},
      {"eye: negative columns", [] { (void)tw::eye<double>(2, -3); }, {"eye", "-3"}},
      {"arange: negative count", [] { (void)tw::arange<double>(-3); }, {"arange", "-3"}},
      {"cat: sizes along dim overflow",
       [] {
         const tensor<double> a({two62, 0}, std::vector<double>{});
         (void)tw::cat({a, a, a}, 0);
       },
       {"cat", "[4611686018427387904, 0]"}},
      {"vmap: chunk_size(-2)",
       [] { (void)tw::vmap([](auto x) { return x; }, tw::chunk_size(-2)); },
       {"chunk_size", "-2"}},
  };
}

}  // namespace

TEST_CASE("bad sizes and slice bounds raise tower::error naming the op and the shape, static path") {
  for (const auto& c : op_cases<tensor<double>>()) require_bad(c);
}

TEST_CASE("bad sizes and slice bounds raise tower::error naming the op and the shape, runtime path") {
  for (const auto& c : op_cases<value>()) require_bad(c);
}

TEST_CASE("creation ops and constructors check sizes before allocating") {
  for (const auto& c : creation_cases()) require_bad(c);
}

TEST_CASE("chunk_size: 0 is the whole batch at once, any positive size gives the same values") {
  const tensor<double> X = sample({5, 3});
  auto f = [](auto x) { return tw::sum(tw::sin(x) * x); };
  const tensor<double> all = tw::vmap(tw::grad(f))(X);
  // (Chunks run the batching rules, the whole batch a fused loop: the last bit may differ.)
  require_close(tw::vmap(tw::grad(f), tw::chunk_size(0))(X), all, 1e-15);
  require_close(tw::vmap(tw::grad(f), tw::chunk_size(2))(X), all, 1e-15);
  require_close(tw::vmap(tw::grad(f), tw::chunk_size(int64_max))(X), all, 1e-15);
  require_close(
      tw::vmap(tw::grad(rfn([](value x) { return tw::sum(tw::sin(x) * x); })), tw::chunk_size(2))(X).to_tensor(), all,
      1e-15);
}

/// Slices with extreme bounds that are valid: the same elements as a loop over indices.
template <class V>
void check_extreme_slices() {
  const tensor<double> x = sample({5, 2});
  auto rows = [&](std::int64_t a, std::int64_t n) {
    return tensor<double>({n, 2}, std::vector<double>(x.data() + 2 * a, x.data() + 2 * (a + n)));
  };
  auto t = [](const auto& r) { return as_tensor(r); };
  require_close(t(tw::slice(V(x), 0, int64_min, int64_max)), x, 0);
  require_close(t(tw::slice(V(x), 0, 3, int64_max)), rows(3, 2), 0);
  require_close(t(tw::slice(V(x), 0, int64_min, -4)), rows(0, 1), 0);
  REQUIRE(t(tw::slice(V(x), 0, int64_max, int64_min)).shape() == tw::shape_t{0, 2});
  REQUIRE(t(tw::narrow(V(x), 0, 5, 0)).shape() == tw::shape_t{0, 2});  // start = size, length 0: empty
  require_close(t(tw::narrow(V(x), 0, -2, 2)), rows(3, 2), 0);
  const auto pieces = tw::split(V(x), int64_max);
  REQUIRE(pieces.size() == 1);
  require_close(t(pieces[0]), x, 0);
  const auto threes = tw::split(V(x), 3);
  REQUIRE(threes.size() == 2);
  require_close(t(threes[1]), rows(3, 2), 0);
  // Shapes with a size 0 and a large other size are valid: no element to count.
  const tensor<double> e = tw::zeros<double>({0});
  REQUIRE(t(tw::reshape(V(e), {two62, 0})).shape() == tw::shape_t{two62, 0});
  REQUIRE(t(tw::sum(tw::reshape(V(e), {two62, 0}), 0)).shape() == tw::shape_t{0});
}

TEST_CASE("slices with extreme but valid bounds, both paths") {
  check_extreme_slices<tensor<double>>();
  check_extreme_slices<value>();
}

/// softmax and log_softmax over a dim of size 0 return an empty value of x's shape (as torch),
/// also under grad and vmap; cross_entropy with valid class indices keeps its value.
template <class V>
void check_empty_softmax() {
  const tensor<double> e = tw::zeros<double>({3, 0}), c = tw::zeros<double>({0, 3});
  REQUIRE(as_tensor(tw::softmax(V(e), -1)).shape() == tw::shape_t{3, 0});
  REQUIRE(as_tensor(tw::log_softmax(V(e), 1)).shape() == tw::shape_t{3, 0});
  REQUIRE(as_tensor(tw::softmax(V(c), 0)).shape() == tw::shape_t{0, 3});
  // Over a non-empty dim of an empty value: empty too.
  REQUIRE(as_tensor(tw::softmax(V(c), 1)).shape() == tw::shape_t{0, 3});
  const tensor<double> m = sample({2, 3});
  const tensor<double> lp = as_tensor(tw::log_softmax(V(m), -1));
  for (std::int64_t i = 0; i < 2; ++i) {
    double z = 0;
    for (std::int64_t j = 0; j < 3; ++j) z += std::exp(m(i, j));
    for (std::int64_t j = 0; j < 3; ++j) require_close(lp(i, j), m(i, j) - std::log(z), 1e-14);
  }
  require_close(as_double(tw::cross_entropy(V(m), tensor<double>{2.0, 0.0})), -(lp(0, 2) + lp(1, 0)) / 2, 1e-14);
}

TEST_CASE("softmax over an empty dim is empty, both paths and under transforms") {
  check_empty_softmax<tensor<double>>();
  check_empty_softmax<value>();
  const tensor<double> e = tw::zeros<double>({3, 0});
  auto f = [](auto x) { return tw::sum(tw::softmax(x, -1)); };
  REQUIRE(tw::grad(f)(e).shape() == tw::shape_t{3, 0});
  REQUIRE(tw::grad(rfn(f))(e).shape() == tw::shape_t{3, 0});
  auto g = [](auto x) { return tw::softmax(x, -1); };
  REQUIRE(tw::vmap(g)(e).shape() == tw::shape_t{3, 0});
  REQUIRE(tw::vmap(rfn(g))(e).shape() == tw::shape_t{3, 0});
  REQUIRE(tw::vmap(tw::grad(f))(tw::zeros<double>({2, 3, 0})).shape() == tw::shape_t{2, 3, 0});
  REQUIRE(tw::vmap(tw::grad(rfn(f)))(tw::zeros<double>({2, 3, 0})).shape() == tw::shape_t{2, 3, 0});
}

namespace {
/// vmap(t) on a batch of 0 examples has shape [0] + the shape of t on one example, and on a batch
/// of 2 the value of t on each example (empty batches are not run on a made-up example).
template <class T>
void check_empty_batch(const std::string& what, const T& t, const tensor<double>& example) {
  INFO(what);
  shape_t empty = example.shape(), two = example.shape();
  empty.insert(empty.begin(), 0);
  two.insert(two.begin(), 2);
  auto on_example = [&](const tensor<double>& x) {
    if constexpr (std::is_invocable_v<const T&, const tensor<double>&>) return as_tensor(t(x));
    else return as_tensor(t(value(x)));
  };
  const tensor<double> x0 = example, x1 = example * 0.5 + 0.25;
  const tensor<double> one = on_example(x0);
  shape_t expected = one.shape();
  expected.insert(expected.begin(), 0);
  REQUIRE(as_tensor(tw::vmap(t)(tw::zeros<double>(empty))).shape() == expected);
  // The batch in dim 1 and out_dims 1 (a rank-0 example result has no dim 1).
  if (!one.shape().empty() && !example.shape().empty()) {
    shape_t empty1 = example.shape(), expected1 = one.shape();
    empty1.insert(empty1.begin() + 1, 0);
    expected1.insert(expected1.begin() + 1, 0);
    REQUIRE(as_tensor(tw::vmap(t, tw::in_dims(1), tw::out_dims(1))(tw::zeros<double>(empty1))).shape() == expected1);
  }
  // Nested: an empty inner batch and an empty outer batch.
  shape_t inner = empty, outer = empty;
  inner.insert(inner.begin(), 2);
  outer.insert(outer.begin() + 1, 2);
  shape_t expected_inner = expected, expected_outer = expected;
  expected_inner.insert(expected_inner.begin(), 2);
  expected_outer.insert(expected_outer.begin() + 1, 2);
  REQUIRE(as_tensor(tw::vmap(tw::vmap(t))(tw::zeros<double>(inner))).shape() == expected_inner);
  REQUIRE(as_tensor(tw::vmap(tw::vmap(t))(tw::zeros<double>(outer))).shape() == expected_outer);
  // Two examples: each one's value.
  std::vector<double> data(x0.data(), x0.data() + x0.numel());
  data.insert(data.end(), x1.data(), x1.data() + x1.numel());
  const tensor<double> both = as_tensor(tw::vmap(t)(tensor<double>(two, data)));
  require_close(row(both, 0), one, 1e-12);
  require_close(row(both, 1), on_example(x1), 1e-12);
}

/// check_empty_batch for vmap of f, grad, jacrev, jacfwd and hessian, with fs a scalar and fv a
/// vector function of a vector.
template <class Fs, class Fv>
void check_every_transform(const Fs& fs, const Fv& fv) {
  const tensor<double> x = sample({3}, -1, 1, 7);
  check_empty_batch("f", fv, x);
  check_empty_batch("grad", tw::grad(fs), x);
  check_empty_batch("jacrev", tw::jacrev(fv), x);
  check_empty_batch("jacfwd", tw::jacfwd(fv), x);
  check_empty_batch("hessian", tw::hessian(fs), x);
  check_empty_batch("jacrev of a scalar function", tw::jacrev(fs), x);
  check_empty_batch("grad, scalar examples", tw::grad(fs), tensor<double>(0.3));
}
}  // namespace

TEST_CASE("an empty batch through vmap of every transform gives an empty result of the right shape, static path") {
  auto fs = [](auto v) { return tw::sum(tw::sin(v) * v); };
  check_every_transform(fs, [](auto v) { return tw::sin(v) * tw::sum(v); });
  // The other physical forms of vmap decline an empty batch for the batching rules.
  REQUIRE(tw::vmap(tw::grad(fs), tw::in_dims(tw::fixed_rows<3>))(tw::zeros<double>({0, 3})).shape() == shape_t{0, 3});
  REQUIRE(tw::vmap(tw::grad(fs), tw::strategy::batched)(tw::zeros<double>({0, 3})).shape() == shape_t{0, 3});
  REQUIRE(tw::vmap(tw::hessian(fs), tw::strategy::batched)(tw::zeros<double>({0, 3})).shape() == shape_t{0, 3, 3});
}

TEST_CASE("an empty batch through vmap of every transform gives an empty result of the right shape, runtime path") {
  check_every_transform(rfn([](value v) { return tw::sum(tw::sin(v) * v); }),
                        rfn([](value v) { return tw::sin(v) * tw::sum(v); }));
}

TEST_CASE("vmap(jacrev(solve)) over an empty batch of matrices is empty, not a singular example (issue 33)") {
  const tensor<double> b{1.0, -2.0}, A0 = tw::zeros<double>({0, 2, 2});
  const tensor<double> A1 = tensor<double>({2, 2}, {2.0, 0.5, -1.0, 3.0});
  auto f = [&](auto a) { return tw::solve(a, b); };
  rfn fr = [&](value a) { return tw::solve(a, b); };
  REQUIRE(tw::vmap(tw::jacrev(f))(A0).shape() == tw::shape_t{0, 2, 2, 2});
  REQUIRE(tw::vmap(tw::jacrev(fr))(A0).shape() == tw::shape_t{0, 2, 2, 2});
  REQUIRE(tw::vmap(tw::jacfwd(f))(A0).shape() == tw::shape_t{0, 2, 2, 2});
  REQUIRE(tw::vmap(tw::jacfwd(fr))(A0).shape() == tw::shape_t{0, 2, 2, 2});
  // One example: the Jacobian of A^-1 b, -(e_i^T A^-1 ...) by finite differences.
  require_close(tw::jacrev(f)(A1), fd_jacobian(f, A1), 1e-6);
  check_empty_batch("jacrev of solve", tw::jacrev(f), A1);
  check_empty_batch("jacrev of solve, runtime", tw::jacrev(fr), A1);
}
