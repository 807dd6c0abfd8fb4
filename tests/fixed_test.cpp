// tw::fixed<T, N> (fixed.hpp) and vmap's tw::fixed_rows<N> (fused_fixed.hpp): conversions,
// errors, every form vmap may take with fixed_rows, grad mode, and jacrev / jacfwd / hessian on
// fixed values, each against the tensor path or a hand-written result. (Every op under every
// transform: the op checker's fixed forms, tests/op_checker.hpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::testing::require_close;
using tw::testing::sample;

namespace {
constexpr std::int64_t B = 70;  // more than one block of 64 examples, and a tail
using vec = tw::fixed<double, 3>;
vec fx(const tw::tensor<double>& t) { return tw::to_fixed<vec>(t); }
}  // namespace

TEST_CASE("fixed: values, shapes and conversions") {
  tw::fixed<double, 3> r{1.0, 2.0, 2.0};
  CHECK(tw::sum(r * r) == 9.0);
  CHECK(tw::shape(r) == tw::shape_t{3});
  CHECK(tw::rank(r) == 1);
  CHECK(tw::dot(r, r) == 9.0);
  const auto g = tw::grad([](auto v) { return tw::sum(v * v); })(r);
  CHECK((g[0] == 2.0 && g[1] == 4.0 && g[2] == 4.0));
  // fixed<fixed<T, M>, N> is an [N, M] tensor, row-major.
  using mat = tw::fixed<tw::fixed<double, 3>, 2>;
  const tw::tensor<double> m({2, 3}, {1, 2, 3, 4, 5, 6});
  const mat mf = tw::to_fixed<mat>(m);
  CHECK(mf[1][0] == 4.0);
  CHECK(tw::shape(mf) == tw::shape_t{2, 3});
  require_close(tw::to_tensor(mf), m, 0);
  CHECK(tw::sum(mf * mf) == 91.0);
  // Broadcasting a lower rank against it: each row times the vector.
  const auto p = mf * r;
  CHECK(p[1][2] == 12.0);
  // The gradient of a function of a matrix-shaped fixed has its shape.
  const mat gm = tw::grad([](auto a) { return tw::sum(tw::sin(a)); })(mf);
  CHECK(gm[1][1] == Approx(std::cos(5.0)));
}

TEST_CASE("fixed: errors name the op and the shapes") {
  const tw::tensor<double> t({2, 2}, {1, 2, 3, 4});
  using vec3 = tw::fixed<double, 3>;
  REQUIRE_THROWS_WITH(tw::to_fixed<vec3>(t), Catch::Contains("to_fixed: expected a tensor of shape [3], got [2, 2]"));
  tw::fixed<double, 3> r{1.0, 2.0, 2.0};
  REQUIRE_THROWS_WITH(tw::sum(r, 0, true),
                      Catch::Contains("sum: on a tw::fixed value of shape [3] only the sum of all elements"));
  // fixed_rows<N> needs [B, N].
  auto f = tw::vmap(tw::grad([](auto x) { return tw::sum(x * x); }), tw::in_dims(tw::fixed_rows<3>));
  REQUIRE_THROWS_WITH(f(tw::tensor<double>({2, 2}, {1, 2, 3, 4})),
                      Catch::Contains("vmap: in_dims entry fixed_rows<3> needs a tensor of shape [B, 3], got [2, 2]"));
  REQUIRE_THROWS_WITH(f(tw::dyn::value(tw::tensor<double>({2, 2}, {1, 2, 3, 4}))),
                      Catch::Contains("vmap: in_dims entry fixed_rows<3> needs a tensor of shape [B, 3], got [2, 2]"));
  // Batch sizes that differ: the tensor path reports them as it always does.
  auto g = tw::vmap(tw::grad([](auto x, auto y) { return tw::sum(x * y); }), tw::in_dims(tw::fixed_rows<2>, 0));
  REQUIRE_THROWS_AS(g(tw::tensor<double>({2, 2}, {1, 2, 3, 4}), tw::tensor<double>({3}, {1, 2, 3})), tw::error);
}

TEST_CASE("fixed_rows: the loop and the tensor path agree for every form vmap may take") {
  auto energy = [](auto r) {
    auto s = 1.0 / tw::sum(r * r);
    auto s3 = s * s * s;
    return 4.0 * (s3 * s3 - s3);
  };
  const tw::tensor<double> R = sample({B, 3}, 0.6, 1.4, 5);
  const tw::tensor<double> E = tw::testing::lennard_jones_gradient(R);
  const auto in = tw::in_dims(tw::fixed_rows<3>);
  require_close(tw::vmap(tw::grad(energy), in)(R), E, 1e-12);
  require_close(tw::vmap(tw::grad(energy), in, tw::strategy::fused)(R), E, 1e-12);
  require_close(tw::vmap(tw::grad(energy), in, tw::strategy::batched)(R), E, 1e-12);
  require_close(tw::vmap(tw::grad(energy), in, tw::strategy::packets)(R), E, 1e-12);
  require_close(tw::vmap(tw::grad(energy), in, tw::chunk_size(16))(R), E, 1e-12);
  // The loop ran f once per example on fixed rows; batching rules never call f with fixed values.
  int fixed_calls = 0;
  auto counted = [&](auto r) {
    if constexpr (tw::is_fixed_v<decltype(r)>) ++fixed_calls;
    return energy(r);
  };
  require_close(tw::vmap(tw::grad(counted), in)(R), E, 1e-12);
  CHECK(fixed_calls == B);
  require_close(tw::vmap(tw::grad(counted), in, tw::strategy::batched)(R), E, 1e-12);
  CHECK(fixed_calls == B);
  // A type-erased f (the runtime path) under fixed_rows takes vmap's tensor path: same numbers.
  std::function<tw::dyn::value(tw::dyn::value)> erased = [&](tw::dyn::value r) { return energy(r); };
  require_close(tw::vmap(tw::grad(erased), in)(R).to_tensor(), E, 1e-12);
  require_close(tw::vmap(tw::grad(erased), in)(tw::dyn::value(R)).to_tensor(), E, 1e-12);
  // out_dims moves the batch as with tensors.
  require_close(tw::vmap(tw::grad(energy), in, tw::out_dims(1))(R), tw::movedim(E, 0, 1), 1e-12);
  // Not a grad: vmap runs f on tensors, with the same meaning.
  require_close(tw::vmap(energy, in)(R), tw::vmap(energy)(R), 0);
  // grad_and_value: gradients and values, both [B, ...].
  auto [g, v] = tw::vmap(tw::grad_and_value(energy), in)(R);
  require_close(g, E, 1e-12);
  require_close(v, tw::vmap(energy)(R), 1e-13);
  // Several argnums, a fixed unbatched argument and a batched number.
  auto loss = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };
  const tw::fixed<double, 3> w{0.3, -0.2, 0.5};
  const tw::tensor<double> Y = sample({B}, -1, 1, 9);
  auto [gw, gy] = tw::vmap(tw::grad(loss, tw::argnums<0, 2>), tw::in_dims(tw::none, tw::fixed_rows<3>, 0))(w, R, Y);
  auto [tw_, ty] = tw::vmap(tw::grad(loss, tw::argnums<0, 2>), tw::in_dims(tw::none, 0, 0))(tw::to_tensor(w), R, Y);
  require_close(gw, tw_, 1e-12);
  require_close(gy, ty, 1e-12);
  // A fixed argument under a vmap without fixed_rows is a tensor to it.
  require_close(tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(w, R, Y), tw_, 1e-12);
  // Per-example against a loop of grad on fixed values.
  auto per = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, tw::fixed_rows<3>, 0))(w, R, Y);
  for (std::int64_t b = 0; b < B; b += 13) {
    const auto x = tw::to_fixed<tw::fixed<double, 3>>(tw::testing::row(R, b));
    const auto gb = tw::grad(loss)(w, x, Y.data()[b]);
    for (int k = 0; k < 3; ++k) CHECK(per.data()[3 * b + k] == Approx(gb[static_cast<std::size_t>(k)]).epsilon(1e-14));
  }
}

TEST_CASE("fixed: grad mode and nesting") {
  tw::fixed<double, 2> x{0.5, -1.5};
  // no_grad inside f: that part is a constant.
  auto f = [](auto v) {
    auto c = [&] {
      tw::no_grad off;
      return tw::sum(v * v);
    }();
    return c * tw::sum(v);
  };
  const auto g = tw::grad(f)(x);
  CHECK(g[0] == Approx(0.25 + 2.25));
  CHECK(g[1] == Approx(0.25 + 2.25));
  // grad over a function of a number that builds a fixed value from it.
  auto h = [](auto t) {
    tw::fixed<decltype(t), 2> p{t, t * t};
    return tw::sum(tw::sin(p));
  };
  CHECK(tw::grad(h)(0.7) == Approx(std::cos(0.7) + std::cos(0.49) * 1.4));
}

TEST_CASE("fixed: scaled tangents keep structural zeros and no_grad zeros exact") {
  // An op with one tangent-carrying argument scales the tangents (scalar_dual.hpp). sqrt at 0 has
  // an infinite scale; the element it does not depend on keeps an exact 0, not inf * 0 = NaN.
  const auto g = tw::grad([](auto v) { return tw::sqrt(v[0]); })(tw::fixed<double, 2>{0.0, 1.0});
  CHECK(std::isinf(g[0]));
  CHECK(g[1] == 0.0);
  CHECK_FALSE(std::signbit(g[1]));
  // The same through a chain of unary ops after a sum (one scale per op), against the tape.
  auto chain = [](auto v) { return tw::log(1.0 + tw::exp(-(2.0 * tw::sum(v * v)))); };
  const tw::fixed<double, 3> p{0.3, -0.2, 0.9};
  const auto gf = tw::grad(chain)(p);
  const auto gt = tw::grad(chain)(tw::to_tensor(p));
  for (int k = 0; k < 3; ++k) CHECK(gf[static_cast<std::size_t>(k)] == Approx(gt.data()[k]).epsilon(1e-14));
  // Under no_grad an infinite partial gives no tangent at all.
  auto h = [](auto v) {
    auto c = [&] {
      tw::no_grad off;
      return tw::sqrt(v[0]);
    }();
    return c + v[0] + v[1];
  };
  const auto gh = tw::grad(h)(tw::fixed<double, 2>{0.0, 4.0});
  CHECK(gh[0] == 1.0);
  CHECK(gh[1] == 1.0);
}

TEST_CASE("fixed: ops on two tangent-carrying operands agree with the tape, equal tangents or not") {
  // u and w carry the tangents a and b (dot products with the seeded v), stored scaled
  // (scalar_dual.hpp). Ops on both, with a == b (the same stored bits) and a != b, in a single
  // call and per example in vmap's vectorised loop, against the tape and the chain rule by hand.
  auto two = [](auto v, auto a, auto b) {
    auto u = tw::dot(v, a);
    auto w = tw::dot(v, b);
    auto s = 1.0 / (u * u + 1.0);
    return u * w + tw::exp(u) * tw::sin(w) + s * s * s - s;
  };
  const tw::fixed<double, 3> v{0.3, -0.2, 0.9}, a{0.5, 1.5, -0.7}, c{-0.4, 0.8, 0.1};
  for (const auto& b : {a, c}) {
    const auto gf = tw::grad(two)(v, a, b);
    const auto gt = tw::grad(two)(tw::to_tensor(v), tw::to_tensor(a), tw::to_tensor(b));
    // The chain rule by hand: df/du a + df/dw b.
    const double u = tw::dot(v, a), w = tw::dot(v, b), s = 1.0 / (u * u + 1.0);
    const double ds = 3 * s * s - 1, dsdu = -2 * u * s * s;
    const double fu = w + std::exp(u) * std::sin(w) + ds * dsdu, fw = u + std::exp(u) * std::cos(w);
    for (std::size_t k = 0; k < 3; ++k) {
      CHECK(gf[k] == Approx(gt.data()[k]).epsilon(1e-14));
      CHECK(gf[k] == Approx(fu * a[k] + fw * b[k]).epsilon(1e-13));
    }
  }
  // Per example in vmap's loop: rows whose b equals a and rows whose b does not.
  const tw::tensor<double> V = sample({B, 3}, -1, 1, 21);
  std::vector<double> bs(static_cast<std::size_t>(3 * B));
  for (std::int64_t i = 0; i < B; ++i)
    for (std::size_t k = 0; k < 3; ++k) bs[static_cast<std::size_t>(3 * i) + k] = (i % 3 == 0 ? c : a)[k];
  const tw::tensor<double> Bt({B, 3}, bs);
  const auto fixed_path =
      tw::vmap(tw::grad(two), tw::in_dims(tw::fixed_rows<3>, tw::none, tw::fixed_rows<3>))(V, a, Bt);
  const auto tensor_path = tw::vmap(tw::grad(two), tw::in_dims(0, tw::none, 0))(V, tw::to_tensor(a), Bt);
  require_close(fixed_path, tensor_path, 1e-13);
}

TEST_CASE("fixed: jacrev, jacfwd and hessian run forward mode on fixed values, as on tensors") {
  auto g = [](auto v) { return tw::tanh(v * v) * tw::sum(tw::sin(v)); };                // R^3 -> R^3
  auto f = [](auto v) { return tw::log(1.0 + tw::sum(v * v)) + tw::sum(tw::sin(v)); };  // R^3 -> R
  const tw::tensor<double> xt = sample({3}, -1, 1, 21);
  const vec x = fx(xt);
  using mat = tw::fixed<vec, 3>;
  const mat jr = tw::jacrev(g)(x), jf = tw::jacfwd(g)(x);
  require_close(tw::to_tensor(jr), tw::jacrev(g)(xt), 1e-13);
  require_close(tw::to_tensor(jf), tw::jacfwd(g)(xt), 1e-13);
  const mat h = tw::hessian(f)(x);
  require_close(tw::to_tensor(h), tw::hessian(f)(xt), 1e-12);
  // A scalar function's jacrev is its gradient; a number argument gives a number.
  require_close(tw::to_tensor(tw::jacrev(f)(x)), tw::to_tensor(tw::grad(f)(x)), 0);
  CHECK(tw::jacfwd([](auto t) { return t * t * t; })(vec{}[0] + 2.0) == Approx(12.0));

  // vmap(jacfwd(g)) with fixed_rows: the loop (g runs on fixed rows) against the tensor path.
  const tw::tensor<double> X = sample({B, 3}, -1, 1, 22);
  int fixed_calls = 0;
  auto counted = [&](auto v) {
    if constexpr (tw::is_fixed_v<decltype(v)>) ++fixed_calls;
    return g(v);
  };
  const auto in = tw::in_dims(tw::fixed_rows<3>);
  require_close(tw::vmap(tw::jacfwd(counted), in)(X), tw::vmap(tw::jacfwd(g))(X), 1e-13);
  CHECK(fixed_calls == B);
  require_close(tw::vmap(tw::jacrev(g), in)(X), tw::vmap(tw::jacrev(g))(X), 1e-13);
  // Second order (hessian) runs f once per example on elementwise jets (jacobian_rows.hpp),
  // with the same numbers; its loop compiles the body once, so the last block of 64 may repeat
  // up to 63 examples.
  int jet_calls = 0;
  auto counted_f = [&](auto v) {
    if constexpr (tw::is_elementwise_jet_v<decltype(v)>) ++jet_calls;
    return f(v);
  };
  require_close(tw::vmap(tw::hessian(counted_f), in)(X), tw::vmap(tw::hessian(f))(X), 1e-13);
  CHECK(jet_calls >= B);
  CHECK(jet_calls < B + 64);
}

TEST_CASE("automatic rows at the default limit: [B, 3] and [B, 8] run the fixed loop, wider rows batching rules") {
  static_assert(TOWER_AUTOMATIC_FIXED_ROWS == 8, "this test is about the default limit");
  auto energy = [](auto r) {
    auto s = 1.0 / tw::sum(r * r);
    auto s3 = s * s * s;
    return 4.0 * (s3 * s3 - s3);
  };
  int on_fixed = 0;
  auto f = [&](auto r) {
    if constexpr (tw::is_fixed_v<decltype(r)>) ++on_fixed;
    return energy(r);
  };
  const tw::tensor<double> R = sample({67, 3}, 0.6, 1.4, 21);
  require_close(tw::vmap(tw::grad(f))(R), tw::testing::lennard_jones_gradient(R), 1e-12);
  CHECK(on_fixed == 67);
  on_fixed = 0;
  const tw::tensor<double> V = sample({67, 8}, 0.6, 1.4, 23);  // 8: the loop
  require_close(tw::vmap(tw::grad(f))(V), tw::vmap(tw::grad(energy), tw::strategy::batched)(V), 1e-13);
  CHECK(on_fixed == 67);
  on_fixed = 0;
  const tw::tensor<double> W = sample({67, 9}, 0.6, 1.4, 22);  // 9 > 8: batching rules
  require_close(tw::vmap(tw::grad(f))(W), tw::vmap(tw::grad(energy), tw::strategy::batched)(W), 1e-13);
  CHECK(on_fixed == 0);
  // The default spelling of per-example Hessians on R^8 is one pass on elementwise jets per example
  // (the loop's last block of 64 overlaps the one before it: 128 passes for 67 examples).
  int on_jets = 0;
  auto g = [&](auto x) {
    if constexpr (tw::is_elementwise_jet_v<decltype(x)>) ++on_jets;
    return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x));
  };
  auto g_plain = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };
  require_close(tw::vmap(tw::hessian(g))(V), tw::vmap(tw::hessian(g_plain), tw::strategy::batched)(V), 1e-12);
  CHECK(on_jets == 128);
}
