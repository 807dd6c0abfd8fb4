// Table-driven rule checks of the layout and indexing ops: permute / transpose, reshape family,
// expand, narrow / slice / pad, cat / stack / split, gather / scatter_add / index_select; see
// tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

/// (x, index): an index of integers in [0, n) for gather along `dim` of x.
sampler<2> gather_sampler(shape_t xs, shape_t is, std::int64_t dim) {
  return [=](unsigned seed) {
    auto x = uniform<2>({xs, is})(seed);
    const std::int64_t n = xs[static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(xs.size()) : dim)];
    for (std::int64_t i = 0; i < x[1].numel(); ++i)
      x[1].data()[i] = std::floor((x[1].data()[i] + 1) * 0.5 * static_cast<double>(n) * 0.999);
    return x;
  };
}

}  // namespace

TEST_CASE("layout ops: permute, reshape family, expand, narrow, cat: every rule, both paths") {
  counter() = {};
  check_table(std::make_tuple(
      prim<1>("permute", tw::permute_op{{2, 0, 1}}, {uniform<1>({shape_t{2, 3, 4}}), uniform<1>({shape_t{1, 3, 2}})}),
      // Only size-1 dims move: the storage is shared under the new shape (kernels::permute).
      prim<1>("permute (size-1 dims)", tw::permute_op{{1, 0, 2}},
              {uniform<1>({shape_t{1, 3, 2}}), uniform<1>({shape_t{3, 1, 2}})}),
      prim<1>("reshape", tw::reshape_op{{3, -1}},
              {uniform<1>({shape_t{6}}), uniform<1>({shape_t{2, 3}}), uniform<1>({shape_t{3, 1, 2}})}),
      prim<1>("broadcast_to", tw::broadcast_to_op{{2, 3, 4}},
              {uniform<1>({shape_t{}}), uniform<1>({shape_t{4}}), uniform<1>({shape_t{3, 1}})}),
      prim<1>("narrow", tw::narrow_op{-1, 1, 2}, {uniform<1>({shape_t{4}}), uniform<1>({shape_t{2, 3}})}),
      prim<1>("pad", tw::pad_op{0, 1, 4}, {uniform<1>({shape_t{2}}), uniform<1>({shape_t{2, 3}})}),
      prim<2>("cat", tw::cat_op{0}, {uniform<2>({shape_t{2}, shape_t{3}}), uniform<2>({shape_t{1, 3}, shape_t{2, 3}})}),
      prim<2>("cat dim -1", tw::cat_op{-1}, {uniform<2>({shape_t{2, 2}, shape_t{2, 1}})}),
      row<1>("transpose", [](auto x) { return tw::transpose(x, 0, -1); },
             {uniform<1>({shape_t{2, 3}}), uniform<1>({shape_t{2, 1, 3}})}),
      row<1>("squeeze / unsqueeze / flatten",
             [](auto x) { return tw::flatten(tw::unsqueeze(tw::squeeze(x), 0) * 2.0, 0, -1); },
             {uniform<1>({shape_t{}}), uniform<1>({shape_t{3, 1}}), uniform<1>({shape_t{1, 2, 1, 3}})}),
      row<1>("expand", [](auto x) { return tw::expand(x, {2, -1, 3}); },
             {uniform<1>({shape_t{4, 1}}), uniform<1>({shape_t{1, 3}})}),
      row<1>("slice", [](auto x) { return tw::slice(x, 0, -3, 10); },
             {uniform<1>({shape_t{4}}), uniform<1>({shape_t{5, 2}})})));
  counter().report("layout");
  REQUIRE(counter().total() > 300);
}

TEST_CASE("indexing ops: stack, split, gather, scatter_add, index_select: every rule, both paths") {
  counter() = {};
  auto gather_row = prim<2>(
      "gather", tw::gather_op{1},
      {gather_sampler({2, 3}, {2, 4}, 1), gather_sampler({3, 4}, {2, 2}, 1), gather_sampler({2, 2, 3}, {2, 1, 3}, 1)});
  gather_row.diff = {true, false};
  auto gather0 = prim<2>("gather dim 0", tw::gather_op{0}, {gather_sampler({4}, {6}, 0)});
  gather0.diff = {true, false};
  auto scatter = prim<3>("scatter_add", tw::scatter_add_op{0}, {[](unsigned seed) {
                           auto g = gather_sampler({3, 2}, {4, 2}, 0)(seed);
                           return std::array<tw::tensor<double>, 3>{g[0], g[1], sample({4, 2}, -1, 1, seed + 5)};
                         }});
  scatter.diff = {true, false, true};
  auto ce = row<2>("cross_entropy (class indices)", [](auto x, auto t) { return tw::cross_entropy(x, t); },
                   {gather_sampler({3, 4}, {3}, 0), gather_sampler({4}, {}, 0)});
  ce.diff = {true, false};
  check_table(std::make_tuple(row<1>("stack", [](auto x) { return tw::stack({x, x * 2.0, tw::sin(x)}, -1); },
                                     {uniform<1>({shape_t{3}}), uniform<1>({shape_t{}}), uniform<1>({shape_t{2, 2}})}),
                              row<1>("split",
                                     [](auto x) {
                                       auto p = tw::split(x, 2, 0);
                                       return p[0] * 3.0 + tw::sum(p.back());
                                     },
                                     {uniform<1>({shape_t{5}}), uniform<1>({shape_t{4, 2}})}),
                              gather_row, gather0, scatter,
                              row<1>("index_select", [](auto x) { return tw::index_select(x, -1, {2, 0, -1, 2}); },
                                     {uniform<1>({shape_t{3}}), uniform<1>({shape_t{2, 3}})}),
                              ce));
  counter().report("indexing");
  REQUIRE(counter().total() > 250);
}

TEST_CASE("layout and indexing ops raise tower::error naming the op and the shapes") {
  const tw::tensor<double> x = sample({2, 3});
  REQUIRE_THROWS_WITH(tw::narrow(x, 1, 2, 2), Catch::Contains("narrow") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::cat({x, sample({3, 2})}, 0), Catch::Contains("cat") && Catch::Contains("[3, 2]"));
  REQUIRE_THROWS_WITH(tw::permute(x, {0}), Catch::Contains("permute"));
  REQUIRE_THROWS_WITH(tw::squeeze(x, 0), Catch::Contains("squeeze") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::reshape(x, {4, 2}), Catch::Contains("reshape") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::broadcast_to(x, {3, 3}), Catch::Contains("broadcast_to"));
  REQUIRE_THROWS_WITH(tw::gather(x, 1, tw::tensor<double>{{0.0, 5.0}}),
                      Catch::Contains("gather") && Catch::Contains("out of range"));
  REQUIRE_THROWS_WITH(tw::index_select(x, 0, {2}), Catch::Contains("index_select"));
  REQUIRE_THROWS_WITH(x + sample({4}), Catch::Contains("add") && Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  // Errors keep their words under transforms too.
  REQUIRE_THROWS_WITH(tw::vmap([](auto v) { return tw::narrow(v, 0, 2, 2); })(x), Catch::Contains("narrow"));
}

TEST_CASE("permute: every permutation of a shape with size-1 dims against an index loop; results own their values") {
  const shape_t shapes[] = {{1, 3, 2}, {3, 1, 2}, {2, 3, 1}, {1, 4, 1}, {2, 3, 4}};
  for (const shape_t& s : shapes) {
    const tw::tensor<double> x = sample(s);
    shape_t perm{0, 1, 2};
    do {
      tw::tensor<double> y = tw::permute(x, perm);
      for (std::int64_t i = 0; i < s[0]; ++i)
        for (std::int64_t j = 0; j < s[1]; ++j)
          for (std::int64_t k = 0; k < s[2]; ++k) {
            const std::int64_t idx[3] = {i, j, k};
            REQUIRE(y(idx[perm[0]], idx[perm[1]], idx[perm[2]]) == x(i, j, k));
          }
      const double before = x.data()[0];
      y.data()[0] = before + 1;  // copy-on-write: x keeps its value
      REQUIRE(x.data()[0] == before);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST_CASE("permute: every permutation of 4-d shapes against an index loop; movedim of a matrix") {
  // Every permutation, with dims past 8 (a transpose tile) and of size 1, must agree with the
  // definition y[idx[perm[0]], ...] = x[idx].
  const shape_t shapes[] = {{2, 9, 3, 11}, {1, 17, 8, 2}, {10, 1, 9, 3}};
  for (const shape_t& s : shapes) {
    const tw::tensor<double> x = sample(s);
    shape_t perm{0, 1, 2, 3};
    do {
      const tw::tensor<double> y = tw::permute(x, perm);
      REQUIRE(y.shape() == shape_t{s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]});
      std::int64_t flat = 0;
      for (std::int64_t i = 0; i < s[0]; ++i)
        for (std::int64_t j = 0; j < s[1]; ++j)
          for (std::int64_t k = 0; k < s[2]; ++k)
            for (std::int64_t l = 0; l < s[3]; ++l, ++flat) {
              const std::int64_t idx[4] = {i, j, k, l};
              REQUIRE(y(idx[perm[0]], idx[perm[1]], idx[perm[2]], idx[perm[3]]) == x.data()[flat]);
            }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // movedim(x, 0, -1) on a 64 x 48 (jacfwd's columns are moved so).
  const tw::tensor<double> m = sample({64, 48});
  const tw::tensor<double> t = tw::movedim(m, 0, -1);
  for (std::int64_t i = 0; i < 64; ++i)
    for (std::int64_t j = 0; j < 48; ++j) REQUIRE(t(j, i) == m(i, j));
}

TEST_CASE("cat of many values: one pass for plain tensors and runtime values, the same numbers as an index loop") {
  using tw::dyn::value;
  for (std::int64_t dim : {0, 1, -1}) {
    for (std::size_t n : {1u, 2u, 3u, 7u}) {
      std::vector<tw::tensor<double>> parts;
      std::vector<value> values;
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t len = static_cast<std::int64_t>(i % 3) + 1;
        shape_t s = dim == 0 ? shape_t{len, 2, 3} : dim == 1 ? shape_t{2, len, 3} : shape_t{2, 3, len};
        if (i == 1) s = dim == 0 ? shape_t{1, 2, 3} : dim == 1 ? shape_t{2, 1, 3} : shape_t{2, 3, 1};
        parts.push_back(sample(s, -1, 1, static_cast<unsigned>(10 * i + 1)));
        values.emplace_back(parts.back());
      }
      // A one-element part is held inline by dyn::value (no tensor behind it).
      const std::int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<tw::tensor<double>> ones;
      for (std::size_t i = 0; i < n; ++i) {
        shape_t s{1, 1, 1};
        ones.push_back(sample(s, -1, 1, static_cast<unsigned>(i + 100)));
      }
      const tw::tensor<double> y = tw::cat(parts, dim);
      const tw::tensor<double> yv = tw::cat(values, dim).to_tensor();
      REQUIRE(yv.shape() == y.shape());
      REQUIRE(std::equal(y.data(), y.data() + y.numel(), yv.data()));
      // Index loop: element (i, j, k) of y comes from the part whose range along d holds it.
      std::int64_t offset = 0;
      for (const auto& p : parts) {
        const auto& s = p.shape();
        for (std::int64_t i = 0; i < s[0]; ++i)
          for (std::int64_t j = 0; j < s[1]; ++j)
            for (std::int64_t k = 0; k < s[2]; ++k) {
              const std::int64_t at[3] = {i + (d == 0 ? offset : 0), j + (d == 1 ? offset : 0),
                                          k + (d == 2 ? offset : 0)};
              REQUIRE(y(at[0], at[1], at[2]) == p(i, j, k));
            }
        offset += s[static_cast<std::size_t>(d)];
      }
      REQUIRE(y.shape()[static_cast<std::size_t>(d)] == offset);
      std::vector<value> inline_values(ones.begin(), ones.end());
      REQUIRE(inline_values.front().is_inline());
      const tw::tensor<double> yo = tw::cat(inline_values, dim).to_tensor();
      REQUIRE(yo.numel() == static_cast<std::int64_t>(n));
      for (std::size_t i = 0; i < n; ++i) REQUIRE(yo.data()[i] == ones[i].data()[0]);
    }
  }
  // A part whose other dims differ, anywhere in the list, names the shapes.
  const std::vector<tw::tensor<double>> bad{sample({2, 3}), sample({1, 3}), sample({2, 2})};
  REQUIRE_THROWS_WITH(tw::cat(bad, 0), Catch::Contains("cat") && Catch::Contains("[2, 2]"));
  REQUIRE_THROWS_WITH(tw::cat(std::vector<value>(bad.begin(), bad.end()), 0),
                      Catch::Contains("cat") && Catch::Contains("[2, 2]"));
  REQUIRE_THROWS_WITH(tw::cat(std::vector<tw::tensor<double>>{sample({2}), sample({})}, 0), Catch::Contains("cat"));
  REQUIRE_THROWS_WITH(tw::cat(bad, 2), Catch::Contains("cat"));
}

TEST_CASE("cat of many values under transforms: wrapped and plain parts mixed, gradients on both paths") {
  using tw::dyn::value;
  const tw::tensor<double> x = sample({3}), w = sample({15}, -1, 1, 7), c = sample({3}, -1, 1, 9);
  // f joins five parts, one of them a constant (plain even under grad), and weights them.
  auto f = [&](auto v) {
    using V = decltype(v);
    std::vector<V> parts{v, v * 2.0, tw::sin(v), v * 0.0 + c, v * v};
    if constexpr (std::is_same_v<V, value>) parts[3] = V(c);  // a plain part among wrapped ones
    return tw::sum(tw::cat(parts, 0) * w);
  };
  auto expected = [&](std::int64_t i) {
    return w(i) + 2.0 * w(i + 3) + std::cos(x(i)) * w(i + 6) + 2.0 * x(i) * w(i + 12);
  };
  const tw::tensor<double> gs = tw::grad(f)(x);
  std::function<value(value)> erased = f;
  const tw::tensor<double> gr = tw::grad(erased)(x).to_tensor();
  for (std::int64_t i = 0; i < 3; ++i) {
    REQUIRE(gs(i) == Approx(expected(i)).epsilon(1e-14));
    REQUIRE(gr(i) == Approx(expected(i)).epsilon(1e-14));
  }
  // Runtime vmap in chunks joins the chunks' plain outputs in one pass: the same as unchunked.
  const tw::tensor<double> X = sample({37, 3}, -1, 1, 11);
  std::function<value(value)> g = [](value v) { return tw::sin(v) * v; };
  const tw::tensor<double> whole = tw::vmap(g)(X).to_tensor();
  const tw::tensor<double> chunked = tw::vmap(g, tw::chunk_size(5))(X).to_tensor();
  REQUIRE(chunked.shape() == whole.shape());
  REQUIRE(std::equal(whole.data(), whole.data() + whole.numel(), chunked.data()));
  const tw::tensor<double> last = tw::vmap(g, tw::out_dims(1), tw::chunk_size(4))(X).to_tensor();
  for (std::int64_t b = 0; b < 37; ++b)
    for (std::int64_t k = 0; k < 3; ++k) REQUIRE(last(k, b) == whole(b, k));
}

TEST_CASE("broadcast_to: every way a shape can grow, against an index loop") {
  // Leading dims (a vmap lifting a value), trailing dims (a reduction's gradient, [P, 1] ->
  // [P, 3]), and both or neither.
  const std::pair<shape_t, shape_t> cases[] = {
      {{5, 1}, {5, 3}}, {{2, 3, 1}, {2, 3, 4}}, {{2, 1, 1}, {2, 3, 4}}, {{1, 3, 1}, {2, 3, 4}}, {{3, 1}, {2, 3, 4}},
      {{4}, {2, 3, 4}}, {{1, 1}, {2, 2}},       {{2, 1, 4}, {2, 3, 4}}, {{2, 3}, {2, 3}},       {{0, 1}, {0, 3}}};
  for (const auto& [from, to] : cases) {
    INFO("from " << tw::detail::shape_str(from) << " to " << tw::detail::shape_str(to));
    const tw::tensor<double> x = sample(from, -1, 1, 90);
    const tw::tensor<double> y = tw::broadcast_to(x, to);
    REQUIRE(y.shape() == to);
    const shape_t st = tw::kernels::broadcast_strides(from, to);
    std::vector<std::int64_t> idx(to.size(), 0);
    for (std::int64_t i = 0; i < y.numel(); ++i) {
      std::int64_t at = 0;
      for (std::size_t k = 0; k < to.size(); ++k) at += idx[k] * st[k];
      REQUIRE(y.data()[i] == x.data()[at]);
      for (std::size_t k = to.size(); k-- > 0;) {  // the next row-major index
        if (++idx[k] < to[k]) break;
        idx[k] = 0;
      }
    }
  }
  REQUIRE_THROWS_WITH(tw::broadcast_to(sample({2, 2}), {2, 3}), Catch::Contains("broadcast_to"));
}
