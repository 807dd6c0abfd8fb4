// vmap's two physical forms give the same numbers: strategy::fused (a per-example loop on plain
// values) against strategy::batched (batching rules on [B, ...] tensors), and what
// strategy::automatic picks.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cmath>
#include <tower/tower.hpp>

namespace tw = tower;
using tw::shape_t;
using tw::tensor;

namespace {

tensor<double> sample(shape_t s, double lo, double hi, unsigned seed) {
  std::vector<double> v(static_cast<std::size_t>(tw::numel_of(s)));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = lo + (hi - lo) * (0.5 + 0.5 * std::sin(1.7 * static_cast<double>(i) + seed));
  return tensor<double>(s, v);
}

void require_same(const tensor<double>& a, const tensor<double>& b) {
  REQUIRE(a.shape() == b.shape());
  // Up to the last bits: with -march=native the compiler may contract a * b + c into an FMA
  // differently in the two forms' code, and a tensor's exp or sin comes from libmvec (within
  // 4 ulp) where a number's comes from <cmath> (kernels/vector_math.hpp).
  for (std::int64_t i = 0; i < a.numel(); ++i) REQUIRE(a.data()[i] == Approx(b.data()[i]).epsilon(1e-14).margin(1e-15));
}

auto chain = [](auto x) {
  auto a = tw::sin(x) * x;
  auto b = tw::exp((a + 1.0) * 0.1);
  auto c = tw::cos(b - x);
  return tw::tanh(c * c) * x;
};
auto logistic = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };
auto lj = [](auto x, auto y, auto z) {
  auto s = 1.0 / (x * x + y * y + z * z);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};

}  // namespace

TEST_CASE("fused and batched vmap(grad(f)) agree on a function of scalars") {
  const tensor<double> X = sample({37}, -2, 2, 1);
  const tensor<double> gf = tw::vmap(tw::grad(chain), tw::strategy::fused)(X);
  const tensor<double> gb = tw::vmap(tw::grad(chain), tw::strategy::batched)(X);
  const tensor<double> ga = tw::vmap(tw::grad(chain))(X);
  require_same(gf, gb);
  require_same(ga, gb);
  for (std::int64_t b = 0; b < X.numel(); ++b) REQUIRE(gf(b) == Approx(tw::grad(chain)(X(b))).epsilon(1e-14));
}

TEST_CASE("fused and batched agree with several scalar arguments, argnums and tuple outputs") {
  const tensor<double> X = sample({64}, 0.6, 1.4, 2), Y = sample({64}, -1.4, -0.6, 3), Z = sample({64}, 0.6, 1.4, 4);
  auto forces = [&](auto s) { return tw::vmap(tw::grad(lj, tw::argnums<0, 1, 2>), s)(X, Y, Z); };
  const auto f = forces(tw::strategy::fused), b = forces(tw::strategy::batched), a = forces(tw::strategy::automatic);
  require_same(std::get<0>(f), std::get<0>(b));
  require_same(std::get<1>(f), std::get<1>(b));
  require_same(std::get<2>(f), std::get<2>(b));
  require_same(std::get<2>(a), std::get<2>(b));

  auto gv = [](auto s) { return tw::vmap(tw::grad_and_value(chain), tw::in_dims(0), tw::out_dims(0, 0), s); };
  const tensor<double> X2 = sample({9}, -1, 1, 5);
  const auto [g1, v1] = gv(tw::strategy::fused)(X2);
  const auto [g2, v2] = gv(tw::strategy::batched)(X2);
  require_same(g1, g2);
  require_same(v1, v2);
}

TEST_CASE("fused and batched agree with tensor examples, unbatched arguments and in_dims / out_dims") {
  const tensor<double> w = sample({5}, -1, 1, 6), X = sample({11, 5}, -2, 2, 7), Y = sample({11}, -1, 1, 8);
  const auto in = tw::in_dims(tw::none, 0, 0);
  require_same(tw::vmap(tw::grad(logistic), in, tw::strategy::fused)(w, X, Y),
               tw::vmap(tw::grad(logistic), in, tw::strategy::batched)(w, X, Y));

  // Batch in dim 1 of X, result batch in dim 1.
  const tensor<double> Xt = tw::movedim(X, 0, 1);
  const auto in1 = tw::in_dims(tw::none, 1, 0);
  const auto out1 = tw::out_dims(1);
  const tensor<double> f = tw::vmap(tw::grad(logistic), in1, out1, tw::strategy::fused)(w, Xt, Y);
  const tensor<double> b = tw::vmap(tw::grad(logistic), in1, out1, tw::strategy::batched)(w, Xt, Y);
  REQUIRE(f.shape() == shape_t{5, 11});
  require_same(f, b);

  // An unbatched scalar and a per-example result that does not depend on the batch.
  auto g = [](auto x, auto c) { return tw::sum(x) * c + 0.0 * c; };
  require_same(tw::vmap(g, tw::in_dims(0, tw::none), tw::strategy::fused)(X, 3.0),
               tw::vmap(g, tw::in_dims(0, tw::none), tw::strategy::batched)(X, 3.0));
}

TEST_CASE("packets of examples agree with the whole batch") {
  const tensor<double> w = sample({5}, -1, 1, 15), X = sample({2000, 5}, -2, 2, 16), Y = sample({2000}, -1, 1, 17);
  const auto in = tw::in_dims(tw::none, 0, 0);
  const tensor<double> b = tw::vmap(tw::grad(logistic), in, tw::strategy::batched)(w, X, Y);
  require_same(tw::vmap(tw::grad(logistic), in, tw::strategy::packets)(w, X, Y), b);  // 3 packets, the last one short
  require_same(tw::vmap(tw::grad(logistic), in)(w, X, Y), b);                         // automatic

  const tensor<double> Xt = tw::movedim(X, 0, 1);
  require_same(
      tw::vmap(tw::grad(logistic), tw::in_dims(tw::none, 1, 0), tw::out_dims(1), tw::strategy::packets)(w, Xt, Y),
      tw::movedim(b, 0, 1));

  const tensor<double> P = sample({9000}, 0.6, 1.4, 18), Q = sample({9000}, 0.6, 1.4, 19),
                       R = sample({9000}, -1.4, -0.6, 20);
  const auto f = tw::vmap(tw::grad(lj, tw::argnums<0, 2>), tw::strategy::packets)(P, Q, R);
  const auto g = tw::vmap(tw::grad(lj, tw::argnums<0, 2>), tw::strategy::batched)(P, Q, R);
  require_same(std::get<0>(f), std::get<0>(g));
  require_same(std::get<1>(f), std::get<1>(g));
  const auto [g1, v1] = tw::vmap(tw::grad_and_value(lj), tw::strategy::packets)(P, Q, R);
  const auto [g2, v2] = tw::vmap(tw::grad_and_value(lj), tw::strategy::batched)(P, Q, R);
  require_same(g1, g2);
  require_same(v1, v2);
}

TEST_CASE("fused vmap of a vmap agrees with batched") {
  const tensor<double> X = sample({4, 6}, -1, 1, 9);
  auto inner = [](auto row) { return tw::vmap(tw::grad(chain))(row); };
  require_same(tw::vmap(inner, tw::strategy::fused)(X), tw::vmap(inner, tw::strategy::batched)(X));
}

TEST_CASE("fused runs vmap(grad(f)) of a function of scalars on numbers; automatic keeps f's argument types") {
  static bool saw_double = false, saw_wrapper = false;
  auto probe = [](auto x) {
    if constexpr (std::is_same_v<tw::base_type_t<decltype(x)>, double>) saw_double = true;
    else saw_wrapper = true;
    return x * x;
  };
  auto run = [&](auto&& v, const tensor<double>& X) {
    saw_double = saw_wrapper = false;
    (void)v(X);
  };
  run(tw::vmap(tw::grad(probe), tw::strategy::fused), sample({3}, 0, 1, 10));
  CHECK(saw_double);
  CHECK_FALSE(saw_wrapper);
  // automatic runs a first-order transform over [B] arguments per example on numbers too
  // (fused_fixed.hpp, try_numbers): f is probed on grad's tape-free numbers, then runs on them.
  run(tw::vmap(tw::grad(probe)), sample({3}, 0, 1, 10));
  CHECK(saw_double);
  CHECK_FALSE(saw_wrapper);
  run(tw::vmap(tw::grad(probe), tw::strategy::batched), sample({3}, 0, 1, 12));
  CHECK(saw_wrapper);
  CHECK_FALSE(saw_double);
  run(tw::vmap(probe), sample({3}, 0, 1, 11));  // not a grad transform: batching rules
  CHECK_FALSE(saw_double);
  CHECK(saw_wrapper);
}

TEST_CASE("fused vmap raises the batched form's errors") {
  const tensor<double> a = sample({3}, 0, 1, 13), b = sample({4}, 0, 1, 14);
  auto add = [](auto x, auto y) { return x + y; };
  std::string fused_msg, batched_msg;
  try {
    (void)tw::vmap(add, tw::strategy::fused)(a, b);
  } catch (const tw::error& e) {
    fused_msg = e.what();
  }
  try {
    (void)tw::vmap(add, tw::strategy::batched)(a, b);
  } catch (const tw::error& e) {
    batched_msg = e.what();
  }
  CHECK_FALSE(fused_msg.empty());
  CHECK(fused_msg == batched_msg);
}

// ---- the per-example form on numbers runs grad without a tape (scalar_dual.hpp) -------------

TEST_CASE("tape-free grad agrees with the tape for every elementwise op") {
  const tensor<double> X = sample({40}, 0.2, 0.9, 21);
  // Each row: a function built on one op; the same function through both forms.
  auto check = [&](auto f) {
    require_same(tw::vmap(tw::grad(f), tw::strategy::fused)(X), tw::vmap(tw::grad(f), tw::strategy::batched)(X));
  };
  check([](auto x) { return tw::sin(x) * tw::cos(x); });
  check([](auto x) { return tw::exp(x) + tw::expm1(x) + tw::log(x) + tw::log1p(x); });
  check([](auto x) { return tw::sqrt(x) * tw::rsqrt(x + 1.0) + tw::square(x) + tw::reciprocal(x); });
  check([](auto x) { return tw::tan(x) + tw::tanh(x) + tw::sinh(x) + tw::cosh(x); });
  check([](auto x) { return tw::asin(x) + tw::acos(x * 0.5) + tw::atan(x); });
  check([](auto x) { return tw::sigmoid(x) + tw::softplus(x) + tw::relu(x - 0.5) + tw::erf(x); });
  check([](auto x) { return tw::abs(x - 0.5) + tw::neg(x) / x - x; });
  check([](auto x) { return tw::pow(x, 3.0) + tw::pow(2.0, x) + tw::pow(x, x); });
  check([](auto x) { return tw::maximum(x, 0.5) + tw::minimum(x * x, 0.3) + tw::atan2(x, 1.0 - x); });
  check([](auto x) { return tw::where(tw::gt(x, 0.5), x * x, 3.0 * x); });
}

TEST_CASE("tape-free grad: nesting, no_grad, has_aux, argnums and unbatched numbers") {
  const tensor<double> X = sample({24}, -1.5, 1.5, 22), Y = sample({24}, 0.6, 1.4, 23);
  // grad(grad(f)) on numbers is forward over forward.
  require_same(tw::vmap(tw::grad(tw::grad(chain)), tw::strategy::fused)(X),
               tw::vmap(tw::grad(tw::grad(chain)), tw::strategy::batched)(X));
  require_same(tw::vmap(tw::grad(tw::grad(tw::grad(chain))), tw::strategy::fused)(X),
               tw::vmap(tw::grad(tw::grad(tw::grad(chain))), tw::strategy::batched)(X));

  // tw::no_grad inside f makes its ops constants: d/dx [x * (x^2 held constant)] = x^2.
  auto held = [](auto x) {
    auto y = [&] {
      tw::no_grad off;
      return x * x;
    }();
    return x * y;
  };
  const tensor<double> gh = tw::vmap(tw::grad(held), tw::strategy::fused)(X);
  require_same(gh, tw::vmap(tw::grad(held), tw::strategy::batched)(X));
  for (std::int64_t b = 0; b < X.numel(); ++b) REQUIRE(gh(b) == Approx(X(b) * X(b)).epsilon(1e-14));

  // grad under an outer no_grad still differentiates (functorch's grad enables grad mode).
  {
    tw::no_grad off;
    require_same(tw::vmap(tw::grad(chain), tw::strategy::fused)(X),
                 tw::vmap(tw::grad(chain), tw::strategy::batched)(X));
  }

  // has_aux: the aux value comes back as a plain number per example.
  auto with_aux = [](auto x, auto y) { return std::make_tuple(tw::sin(x) * y, x * y); };
  const auto [ga, aa] = tw::vmap(tw::grad(with_aux, tw::has_aux), tw::strategy::fused)(X, Y);
  const auto [gb, ab] = tw::vmap(tw::grad(with_aux, tw::has_aux), tw::strategy::batched)(X, Y);
  require_same(ga, gb);
  require_same(aa, ab);

  // argnums and an unbatched number.
  const auto in = tw::in_dims(0, tw::none, 0);
  const auto f = tw::vmap(tw::grad(lj, tw::argnums<0, 2>), in, tw::strategy::fused)(X, 0.7, Y);
  const auto g = tw::vmap(tw::grad(lj, tw::argnums<0, 2>), in, tw::strategy::batched)(X, 0.7, Y);
  require_same(std::get<0>(f), std::get<0>(g));
  require_same(std::get<1>(f), std::get<1>(g));
  const auto [gv1, v1] = tw::vmap(tw::grad_and_value(lj, tw::argnums<1>), in, tw::strategy::fused)(X, 0.7, Y);
  const auto [gv2, v2] = tw::vmap(tw::grad_and_value(lj, tw::argnums<1>), in, tw::strategy::batched)(X, 0.7, Y);
  require_same(gv1, gv2);
  require_same(v1, v2);
}

TEST_CASE("a function of numbers that mixes in a tensor takes the tape instead") {
  const tensor<double> X = sample({10}, -1, 1, 24), T = sample({3}, -1, 1, 25);
  auto mixes = [&](auto x) { return tw::sum(T * x) * x; };
  static_assert(!decltype(tw::grad(mixes))::forward_ok<double>());
  static_assert(decltype(tw::grad(chain))::forward_ok<double>());
  require_same(tw::vmap(tw::grad(mixes), tw::strategy::fused)(X), tw::vmap(tw::grad(mixes), tw::strategy::batched)(X));
}

TEST_CASE("an op that turns a number into a tensor sends f to the tape, never drops its derivative") {
  const tensor<double> X = sample({6}, -1, 1, 26);
  auto grows = [](auto x) { return tw::sum(tw::reshape(x, {1}) * 3.0) * x; };  // 3 x^2
  static_assert(!decltype(tw::grad(grows))::forward_ok<double>());
  const tensor<double> g = tw::vmap(tw::grad(grows), tw::strategy::fused)(X);
  for (std::int64_t b = 0; b < X.numel(); ++b) REQUIRE(g(b) == Approx(6.0 * X(b)).epsilon(1e-14));
}

TEST_CASE("tape-free grad runs loops and reassignments (its values keep one type)") {
  const tensor<double> X = sample({20}, 0.5, 1.5, 27), Y = sample({20}, -1, 1, 28);
  auto looped = [](auto x, auto y) {
    auto acc = x * 0.0;
    for (int i = 1; i <= 4; ++i) acc = acc + tw::sin(x * static_cast<double>(i)) * y;  // y sum_i sin(i x)
    x = x * 2.0;                                                                       // reassigned argument
    return acc + x * y;
  };
  static_assert(decltype(tw::grad(looped, tw::argnums<0, 1>))::forward_ok<double, double>());
  const auto [gx, gy] = tw::vmap(tw::grad(looped, tw::argnums<0, 1>), tw::strategy::fused)(X, Y);
  for (std::int64_t b = 0; b < X.numel(); ++b) {
    double dx = 2.0 * Y(b), dy = 2.0 * X(b);
    for (int i = 1; i <= 4; ++i) {
      dx += Y(b) * i * std::cos(i * X(b));
      dy += std::sin(i * X(b));
    }
    REQUIRE(gx(b) == Approx(dx).epsilon(1e-13));
    REQUIRE(gy(b) == Approx(dy).epsilon(1e-13));
  }
  // A function that ignores an argument: its gradient is +0.0, as on the tape.
  const auto [g0, g1] =
      tw::vmap(tw::grad([](auto x, auto) { return x * x; }, tw::argnums<0, 1>), tw::strategy::fused)(X, Y);
  for (std::int64_t b = 0; b < X.numel(); ++b) REQUIRE(!std::signbit(g1(b)));
}
