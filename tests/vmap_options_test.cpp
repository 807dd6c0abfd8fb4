// vmap's options: an int for every argument, chunk_size, both paths (randomness=: random_test.cpp).
#include <catch2/catch.hpp>

#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::dyn::value;
using tw::shape_t;
using tw::tensor;

TEST_CASE("vmap(f, d) batches every argument along d") {
  const tensor<double> A = sample({3, 4}, -1, 1, 1), B = sample({3, 4}, -1, 1, 2);
  const tensor<double> r = tw::vmap([](auto a, auto b) { return tw::sum(a * b); }, 1)(A, B);
  REQUIRE(r.shape() == shape_t{4});
  require_close(r, tw::sum(A * B, 0), 1e-12);
}

TEST_CASE("in_dims(d) with one int batches every argument along d, as the README says") {
  const tensor<double> A = sample({3, 4}, -1, 1, 1), B = sample({3, 4}, -1, 1, 2);
  auto f = [](auto a, auto b) { return tw::sum(tw::sin(a) * b); };
  // Reference: a loop over the examples (rows for dim 0, columns for dim 1).
  auto loop = [&](std::int64_t dim) {
    const std::int64_t n = A.shape()[static_cast<std::size_t>(dim)];
    std::vector<double> r;
    for (std::int64_t i = 0; i < n; ++i) r.push_back(f(tw::squeeze(tw::narrow(A, dim, i, 1), dim), tw::squeeze(tw::narrow(B, dim, i, 1), dim)).item());
    return tensor<double>({n}, r);
  };
  for (std::int64_t dim : {0, 1, -1}) {
    CAPTURE(dim);
    const tensor<double> expected = loop(dim < 0 ? dim + 2 : dim);
    require_close(tw::vmap(f, tw::in_dims(dim))(A, B), expected, 1e-13);
    require_close(tw::vmap(f, tw::in_dims(dim), tw::strategy::batched)(A, B), expected, 1e-13);
    require_close(tw::vmap(f, tw::in_dims(dim), tw::chunk_size(2))(A, B), expected, 1e-13);
    std::function<value(value, value)> g = [&](value a, value b) { return f(a, b); };
    require_close(tw::vmap(g, tw::in_dims(dim))(A, B).to_tensor(), expected, 1e-13);
  }
  // Under grad, for three arguments: d/da of sum(sin(a) b c) per example is cos(a) b c.
  auto h = [](auto a, auto b, auto c) { return tw::sum(tw::sin(a) * b * c); };
  const tensor<double> G = tw::vmap(tw::grad(h), tw::in_dims(0))(A, B, A);
  require_close(G, tw::cos(A) * B * A, 1e-13);
  // One argument: in_dims(0) is the per-argument form itself.
  require_close(tw::vmap([](auto a) { return tw::sum(a * a); }, tw::in_dims(0))(A), tw::sum(A * A, 1), 1e-13);
}

TEST_CASE("chunk_size gives the same results, for tuple outputs, out_dims and both paths") {
  const tensor<double> X = sample({7, 3}, -1, 1, 11), w = sample({3}, -1, 1, 12);
  auto f = [](auto x, auto v) { return std::make_tuple(tw::sum(tw::sin(x) * v), x * 2.0); };
  const auto [a, b] = tw::vmap(f, tw::in_dims(0, tw::none))(X, w);
  const auto [ca, cb] = tw::vmap(f, tw::in_dims(0, tw::none), tw::chunk_size(3))(X, w);
  require_close(ca, a, 0);
  require_close(cb, b, 0);
  // per-example gradients in chunks, batch along dim 1 of the output
  auto g = tw::grad([](auto x, auto v) { return tw::sum(tw::sin(x) * v); });
  const tensor<double> G = tw::vmap(g, tw::in_dims(0, tw::none), tw::out_dims(1))(X, w);
  const tensor<double> Gc = tw::vmap(g, tw::in_dims(0, tw::none), tw::out_dims(1), tw::chunk_size(2))(X, w);
  require_close(Gc, G, 0);
  std::function<value(value)> fr = [](value x) { return tw::sum(tw::sin(x)); };
  require_close(tw::vmap(fr, tw::chunk_size(4))(X).to_tensor(), tw::vmap(fr)(X).to_tensor(), 0);
}

TEST_CASE("the runtime path runs a large top-level vmap in packets, with the same numbers") {
  // 9000 x 16 numbers: over the 2^17 threshold, so automatic takes packets of 256 examples.
  const tensor<double> X = sample({16, 9000}, -1, 1, 13), w = sample({16}, -1, 1, 14);
  std::function<std::tuple<value, value>(value, value)> fr = [](value x, value v) {
    return std::make_tuple(tw::sum(tw::sin(x) * v), x * 2.0);
  };
  auto fs = [](auto x, auto v) { return std::make_tuple(tw::sum(tw::sin(x) * v), x * 2.0); };
  const auto in = tw::in_dims(1, tw::none);
  const auto out = tw::out_dims(0, 1);
  const auto [ra, rb] = tw::vmap(fr, in, out)(X, w);
  const auto [sa, sb] = tw::vmap(fs, in, out, tw::strategy::batched)(X, w);
  require_close(ra.to_tensor(), sa, 1e-15);
  require_close(rb.to_tensor(), sb, 0);
  REQUIRE(rb.to_tensor().shape() == shape_t{16, 9000});
  // grad inside.
  std::function<value(value, value)> loss = [](value x, value v) { return tw::sum(tw::sin(x) * v); };
  auto loss_s = [](auto x, auto v) { return tw::sum(tw::sin(x) * v); };
  require_close(tw::vmap(tw::grad(loss), in)(X, w).to_tensor(), tw::vmap(tw::grad(loss_s), in, tw::strategy::batched)(X, w), 1e-15);
}
