// kernels/transpose.hpp: the SIMD-block transpose against an index loop for every size that
// exercises full blocks and ragged edges, with and without a row scale, in float and double;
// its finiteness flag for a non-finite entry at every position; and permute_as_transposes on
// the permutations it takes (rotations of trailing dims, size-1 dims anywhere) and declines; and
// the broadcasting walks under every elementwise kernel (kernels/base.hpp) against an index loop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>
#include <tower/tower.hpp>

namespace tw = tower;
namespace k = tower::kernels;

namespace {

template <class T>
std::vector<T> ramp(std::int64_t n, double offset) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<T>(std::sin(0.7 * static_cast<double>(i) + offset));
  return v;
}

template <class T>
void check_sizes() {
  for (std::int64_t rows = 1; rows <= 19; ++rows)
    for (const std::int64_t cols : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 64, 67}) {
      INFO("rows " << rows << " cols " << cols);
      const auto a = ramp<T>(rows * cols, 0.1), scale = ramp<T>(cols, 2.0);
      for (const bool scaled : {false, true}) {
        INFO("scaled " << scaled);
        std::vector<T> out(static_cast<std::size_t>(rows * cols), T(-7));
        REQUIRE(k::transpose_into(a.data(), rows, cols, out.data(), scaled ? scale.data() : nullptr));
        for (std::int64_t i = 0; i < rows; ++i)
          for (std::int64_t j = 0; j < cols; ++j) {
            const T v = a[static_cast<std::size_t>(i * cols + j)];
            REQUIRE(out[static_cast<std::size_t>(j * rows + i)] ==
                    (scaled ? scale[static_cast<std::size_t>(j)] * v : v));
          }
      }
    }
}

}  // namespace

TEST_CASE("transpose_into: every entry lands at its transposed place, scaled by its output row") {
  check_sizes<double>();
  check_sizes<float>();
}

TEST_CASE("transpose_into: a non-finite entry anywhere (block or edge) clears the flag and is still moved") {
  const std::int64_t rows = 10, cols = 9;  // full blocks and edges both ways for packets of 2, 4 and 8
  for (const double bad : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()})
    for (std::int64_t p = 0; p < rows * cols; ++p) {
      INFO("position " << p << " value " << bad);
      auto a = ramp<double>(rows * cols, 0.3);
      a[static_cast<std::size_t>(p)] = bad;
      std::vector<double> out(static_cast<std::size_t>(rows * cols));
      REQUIRE_FALSE(k::transpose_into(a.data(), rows, cols, out.data()));
      const double moved = out[static_cast<std::size_t>((p % cols) * rows + p / cols)];
      REQUIRE((std::isnan(bad) ? std::isnan(moved) : moved == bad));
    }
}

TEST_CASE("permute_as_transposes: rotations of trailing dims match an index loop; other permutations are declined") {
  struct row {
    tw::shape_t shape, perm;
    bool taken;
  };
  const std::vector<row> table{
      {{64, 64}, {1, 0}, true},
      {{5, 6, 7}, {1, 2, 0}, true},               // movedim(0, -1)
      {{5, 6, 7}, {2, 0, 1}, true},               // movedim(-1, 0)
      {{3, 5, 6, 7}, {0, 2, 3, 1}, true},         // a stack of 3 transposes
      {{3, 1, 5, 6, 1}, {0, 4, 3, 1, 2}, true},   // size-1 dims move freely
      {{3, 1, 5, 6, 1}, {0, 4, 2, 1, 3}, false},  // only size-1 dims move: the same order
      {{4, 2, 9}, {2, 0, 1}, true},
      {{5, 6, 7}, {1, 0, 2}, false},  // contiguous inner rows: the broadcast loop copies them
      {{5, 6, 7, 8}, {0, 3, 1, 2}, true},
      {{5, 6, 7, 8}, {3, 2, 1, 0}, false},  // a reversal is no rotation
      {{2, 40}, {1, 0}, false},             // rows below 4
      {{5, 6, 7}, {0, 1, 2}, false},        // the identity
  };
  for (const auto& t : table) {
    INFO("shape " << tw::detail::shape_str(t.shape) << " perm " << tw::detail::shape_str(t.perm));
    const std::int64_t n = tw::numel_of(t.shape);
    const auto x = ramp<double>(n, 0.5);
    std::vector<double> out(static_cast<std::size_t>(n), -9.0);
    REQUIRE(k::permute_as_transposes(x.data(), t.shape, t.perm, out.data()) == t.taken);
    // Either way, tw::permute gives what the index loop gives.
    const tw::tensor<double> got = tw::permute(tw::tensor<double>(t.shape, x), t.perm);
    const std::size_t r = t.shape.size();
    tw::shape_t in_st(r, 1), idx(r, 0), out_shape(r);
    for (std::size_t d = r - 1; d > 0; --d) in_st[d - 1] = in_st[d] * t.shape[d];
    for (std::size_t d = 0; d < r; ++d) out_shape[d] = t.shape[static_cast<std::size_t>(t.perm[d])];
    REQUIRE(got.shape() == out_shape);
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t src = 0;
      for (std::size_t d = 0; d < r; ++d) src += idx[d] * in_st[static_cast<std::size_t>(t.perm[d])];
      REQUIRE(got.data()[i] == x[static_cast<std::size_t>(src)]);
      if (t.taken) REQUIRE(out[static_cast<std::size_t>(i)] == x[static_cast<std::size_t>(src)]);
      for (std::size_t d = r; d-- > 0;) {
        if (++idx[d] < out_shape[d]) break;
        idx[d] = 0;
      }
    }
  }
}

namespace {

/// Output position i of `out` (row-major) unravelled and dotted with `strides`.
std::int64_t offset_at(std::int64_t i, const tw::shape_t& out, const tw::shape_t& strides) {
  std::int64_t o = 0;
  for (std::size_t d = out.size(); d-- > 0;) {
    o += (i % out[d]) * strides[d];
    i /= out[d];
  }
  return o;
}

/// a and b broadcast together, or nothing where they do not broadcast.
std::optional<tw::shape_t> broadcast_of(const tw::shape_t& a, const tw::shape_t& b) {
  try {
    return k::broadcast_shapes("walk", a, b);
  } catch (const tw::error&) {
    return std::nullopt;
  }
}

/// Runs walk(body) and requires that body saw every position of `out` once, with the offsets an
/// index loop gives for each operand's strides.
template <class Walk>
void require_walk(const tw::shape_t& out, const std::vector<tw::shape_t>& strides, Walk walk) {
  std::vector<int> seen(static_cast<std::size_t>(tw::numel_of(out)), 0);
  bool offsets_ok = true;
  walk([&](std::int64_t i, auto... o) {
    ++seen[static_cast<std::size_t>(i)];
    std::size_t k = 0;
    ((offsets_ok = offsets_ok && o == offset_at(i, out, strides[k++])), ...);
  });
  REQUIRE(offsets_ok);
  REQUIRE(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

}  // namespace

TEST_CASE("for_each_broadcast and for_each_strided: every position once, at an index loop's offsets") {
  // Ranks 0-4, size-1 dims anywhere, rows shorter and longer than a block of 8.
  const std::vector<tw::shape_t> shapes{{},        {1},          {3},          {9},          {1, 3},      {2, 1},
                                        {2, 3},    {2, 9},       {9, 1},       {1, 9},       {2, 1, 3},   {2, 3, 9},
                                        {1, 3, 1}, {2, 1, 9, 1}, {2, 3, 1, 9}, {3, 2, 3, 9}, {1, 1, 1, 1}};
  int pairs = 0;
  for (const auto& a : shapes)
    for (const auto& b : shapes) {
      const auto o = broadcast_of(a, b);
      if (!o) continue;
      const tw::shape_t& out = *o;
      INFO("a " << tw::detail::shape_str(a) << " b " << tw::detail::shape_str(b));
      ++pairs;
      const std::vector<tw::shape_t> st{k::broadcast_strides(a, out), k::broadcast_strides(b, out)};
      require_walk(out, st, [&](auto body) { k::for_each_broadcast(out, a, b, body); });
      require_walk(out, st, [&](auto body) { k::for_each_broadcast<true>(out, a, b, body); });
    }
  REQUIRE(pairs > 100);
  // One operand: every permutation's strides (the inner stride any), and broadcasts (0 or 1).
  for (const auto& s : shapes) {
    const std::size_t r = s.size();
    tw::shape_t row_major(r, 1), perm(r);
    for (std::size_t d = r; d-- > 1;) row_major[d - 1] = row_major[d] * s[d];
    for (std::size_t d = 0; d < r; ++d) perm[d] = static_cast<std::int64_t>(d);
    do {
      tw::shape_t out(r), st(r);
      for (std::size_t d = 0; d < r; ++d) {
        out[d] = s[static_cast<std::size_t>(perm[d])];
        st[d] = row_major[static_cast<std::size_t>(perm[d])];
      }
      INFO("shape " << tw::detail::shape_str(s) << " perm " << tw::detail::shape_str(perm));
      require_walk(out, {st}, [&](auto body) { k::for_each_strided(out, st, body); });
      require_walk(out, {st}, [&](auto body) { k::for_each_strided<true>(out, st, body); });
    } while (std::next_permutation(perm.begin(), perm.end()));
    for (const auto& big : shapes) {
      const auto o = broadcast_of(s, big);
      if (!o) continue;
      const tw::shape_t& out = *o;
      const tw::shape_t st = k::broadcast_strides(s, out);
      INFO("broadcast " << tw::detail::shape_str(s) << " to " << tw::detail::shape_str(out));
      require_walk(out, {st}, [&](auto body) { k::for_each_strided(out, st, body); });
    }
  }
}
