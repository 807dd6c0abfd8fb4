// vmap's options: an int for every argument, chunk_size, both paths (randomness=: random_test.cpp).
#include <catch2/catch.hpp>

#include <functional>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;
using tw::tensor;
using tw::dyn::value;

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
    for (std::int64_t i = 0; i < n; ++i)
      r.push_back(f(tw::squeeze(tw::narrow(A, dim, i, 1), dim), tw::squeeze(tw::narrow(B, dim, i, 1), dim)).item());
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
  require_close(tw::vmap(tw::grad(loss), in)(X, w).to_tensor(),
                tw::vmap(tw::grad(loss_s), in, tw::strategy::batched)(X, w), 1e-15);
}

TEST_CASE("strategy::packets with chunk_size(n): packets of n examples, on both paths") {
  // 1000 examples of 16 numbers would take packets of 256; chunk_size(24) asks for 24 (41
  // packets, the last one of 16), as it does on the runtime path.
  const tensor<double> X = sample({1000, 16}, -1, 1, 41), w = sample({16}, -1, 1, 42);
  auto f = [](auto x, auto v) { return tw::exp(x * v) - x; };
  const auto packets = tw::vmap(f, tw::in_dims(0, tw::none), tw::strategy::packets, tw::chunk_size(24));
  const auto plan = packets.plan(X, w);
  REQUIRE(plan.form == tw::detail::vmap_plan::packets);
  REQUIRE(plan.packet == 24);
  REQUIRE(tw::vmap(f, tw::in_dims(0, tw::none), tw::strategy::packets).plan(X, w).packet == 256);
  const tensor<double> expected = tw::vmap(f, tw::in_dims(0, tw::none), tw::strategy::batched)(X, w);
  require_close(packets(X, w), expected, 1e-13);
  std::function<tw::dyn::value(tw::dyn::value, tw::dyn::value)> erased = [f](tw::dyn::value x, tw::dyn::value v) {
    return f(x, v);
  };
  require_close(tw::vmap(erased, tw::in_dims(0, tw::none), tw::strategy::packets, tw::chunk_size(24))(X, w).to_tensor(),
                expected, 1e-13);
}

TEST_CASE("strategy::packets computes each packet into its rows of the output, with batching rules' numbers") {
  // 1000 examples of 16 numbers: packets of 256 (fused_vmap.hpp's packet_numbers / 16), the last
  // one partial. From the second packet on, the kernel that makes a packet's [n, 16] result
  // takes its rows of the output (lent_rows.hpp); a kernel that takes them for a value f does
  // not return leaves them to be overwritten.
  const tensor<double> X = sample({1000, 16}, -1, 1, 31), w = sample({16}, -1, 1, 32), y = sample({1000}, -1, 1, 33);
  auto check = [&](auto f, auto... dims) {
    const auto batched = tw::vmap(f, tw::in_dims(dims...), tw::strategy::batched)(X, w);
    const auto packets = tw::vmap(f, tw::in_dims(dims...), tw::strategy::packets)(X, w);
    require_close(packets, batched, 1e-13);
    // Twice: a second call's packets take rows of a new output, not the first one's.
    require_close(tw::vmap(f, tw::in_dims(dims...), tw::strategy::packets)(X, w), batched, 1e-13);
  };
  // The result itself takes the rows: x * w (w unbatched: a broadcast product).
  check([](auto x, auto v) { return x * v; }, 0, tw::none);
  // An intermediate of the result's size takes them (x * v), the result is computed after it.
  check([](auto x, auto v) { return x * tw::sum(x * v); }, 0, tw::none);
  // The result is a reshaped view of the value that took the rows.
  check([](auto x, auto v) { return tw::reshape(x * v, {4, 4}); }, 0, tw::none);
  // Per-example gradients of logistic regression against a loop of grad.
  auto loss = [](auto v, auto x, auto t) { return tw::log(1.0 + tw::exp(-(t * tw::dot(v, x)))); };
  const tensor<double> G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0), tw::strategy::packets)(w, X, y);
  REQUIRE(G.shape() == shape_t{1000, 16});
  for (std::int64_t b : {0, 255, 256, 511, 999}) {
    const tensor<double> g = tw::grad(loss)(w, tw::squeeze(tw::narrow(X, 0, b, 1), 0), y(b));
    for (std::int64_t j = 0; j < 16; ++j) REQUIRE(G(b, j) == Approx(g(j)).margin(1e-14).epsilon(1e-12));
  }
  // Two results are each copied (one's kernel could take the other's rows), and out_dims.
  const auto [a, c] = tw::vmap([](auto x, auto v) { return std::make_tuple(x * v, v * x * 2.0); },
                               tw::in_dims(0, tw::none), tw::strategy::packets)(X, w);
  require_close(a, X * w, 1e-15);
  require_close(c, X * w * 2.0, 1e-15);
  const tensor<double> t = tw::vmap([](auto x, auto v) { return x * v; }, tw::in_dims(0, tw::none), tw::out_dims(1),
                                    tw::strategy::packets)(X, w);
  require_close(t, tw::transpose(X * w, 0, 1), 1e-15);
}

TEST_CASE("strategy::packets: a value f keeps after taking a packet's rows keeps its numbers") {
  // f keeps x * v (computed first, so it takes its packet's rows of the output) and returns
  // another value of the same size: the output gets storage of its own before the result is
  // copied, and the kept values stay what f computed.
  const tensor<double> X = sample({1000, 16}, -1, 1, 34), w = sample({16}, -1, 1, 35);
  std::vector<tensor<double>> kept;
  auto f = [&kept](auto x, auto v) {
    auto p = x * v;
    if constexpr (requires { p.value; }) kept.push_back(p.value);  // the packet's [n, 16] tensor
    return x * tw::sum(p);
  };
  const tensor<double> r = tw::vmap(f, tw::in_dims(0, tw::none), tw::strategy::packets)(X, w);
  require_close(r, X * tw::unsqueeze(tw::sum(X * w, 1), 1), 1e-13);
  REQUIRE(kept.size() == 4);  // packets of 256: [0, 256), [256, 512), [512, 768), [768, 1000)
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const std::int64_t b0 = static_cast<std::int64_t>(k) * 256, n = std::min<std::int64_t>(256, 1000 - b0);
    require_close(kept[k], tw::narrow(X, 0, b0, n) * w, 0);
  }
}

TEST_CASE("runtime packets: computed in their rows of the output; a value f keeps keeps its numbers") {
  // The runtime path's packets (chunks) are computed in their rows of the output from the second
  // on, as the static path's. f keeps the physical [n, 16] tensor of x * v, which takes its
  // packet's rows, and returns another value: the output gets storage of its own first.
  using V = tw::dyn::value;
  const tensor<double> X = sample({1000, 16}, -1, 1, 36), w = sample({16}, -1, 1, 37);
  std::vector<tensor<double>> kept;
  std::function<V(V, V)> keeps = [&kept](V x, V v) {
    V p = x * v;
    kept.push_back(p.get().inner.to_tensor());
    return x * tw::sum(p);
  };
  for (auto chunk : {tw::chunk_size(256), tw::chunk_size(300)}) {
    kept.clear();
    const V r = tw::vmap(keeps, tw::in_dims(0, tw::none), tw::strategy::packets, chunk)(X, w);
    require_close(r.to_tensor(), X * tw::unsqueeze(tw::sum(X * w, 1), 1), 1e-13);
    const std::int64_t n = chunk.size;
    REQUIRE(kept.size() == static_cast<std::size_t>((1000 + n - 1) / n));
    for (std::size_t k = 0; k < kept.size(); ++k) {
      const std::int64_t b0 = static_cast<std::int64_t>(k) * n;
      require_close(kept[k], tw::narrow(X, 0, b0, std::min<std::int64_t>(n, 1000 - b0)) * w, 0);
    }
  }
  // A result that takes the rows, on the runtime path: packets against batching rules.
  std::function<V(V, V)> product = [](V x, V v) { return tw::exp(x * v) * x; };
  const tensor<double> batched = tw::vmap(product, tw::in_dims(0, tw::none), tw::strategy::batched)(X, w).to_tensor();
  require_close(tw::vmap(product, tw::in_dims(0, tw::none), tw::strategy::packets)(X, w).to_tensor(), batched, 1e-13);
  // A tuple result and out_dims(1) take the parts-and-concatenate form.
  std::function<std::tuple<V, V>(V, V)> two = [](V x, V v) { return std::make_tuple(x * v, tw::sum(x)); };
  const auto [a, b] = tw::vmap(two, tw::in_dims(0, tw::none), tw::chunk_size(300))(X, w);
  require_close(a.to_tensor(), X * w, 1e-13);
  require_close(b.to_tensor(), tw::sum(X, 1), 1e-12);
  require_close(tw::vmap(product, tw::in_dims(0, tw::none), tw::out_dims(1), tw::chunk_size(300))(X, w).to_tensor(),
                tw::transpose(batched, 0, 1), 1e-13);
}
