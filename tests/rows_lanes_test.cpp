// kernels/rows_lanes.hpp: rows of W numbers to W lane arrays and back, for every row width it
// takes (1 to 8), block lengths with and without a ragged end of fewer than four rows, and
// destinations at every 8-byte offset within a 32-byte packet.
#include <catch2/catch.hpp>

#include <cmath>
#include <utility>
#include <vector>
#include <tower/kernels/rows_lanes.hpp>

namespace k = tower::kernels;

namespace {

template <int W>
void check_width() {
  for (const std::size_t n : {0, 1, 3, 4, 5, 7, 8, 13, 64, 255, 256}) {
    INFO("width " << W << " rows " << n);
    std::vector<double> rows(n * W + 8);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = std::sin(0.37 * static_cast<double>(i) + 0.1);
    for (std::size_t offset = 0; offset < 4; ++offset) {
      INFO("source / destination offset " << offset << " doubles");
      // Lanes a few numbers apart, as the fused program's buffers are; sentinels around them.
      constexpr std::size_t pitch = 264;
      std::vector<double> lanes(W * pitch + 8, -7.0);
      double* dst[W];
      for (int e = 0; e < W; ++e) dst[e] = lanes.data() + e * pitch + offset;
      k::rows_to_lanes<W>(rows.data() + offset, dst, n);
      for (int e = 0; e < W; ++e) {
        for (std::size_t i = 0; i < n; ++i) REQUIRE(dst[e][i] == rows[offset + i * W + static_cast<std::size_t>(e)]);
        REQUIRE(dst[e][n] == -7.0);
      }
      std::vector<double> back(n * W + 8, -9.0);
      const double* src[W];
      for (int e = 0; e < W; ++e) src[e] = dst[e];
      k::lanes_to_rows<W>(src, back.data() + offset, n);
      for (std::size_t i = 0; i < back.size(); ++i) {
        const bool inside = i >= offset && i < offset + n * W;
        REQUIRE(back[i] == (inside ? rows[i] : -9.0));
      }
    }
  }
}

}  // namespace

TEST_CASE("rows_lanes: rows to lanes and back, every width, ragged ends, any alignment") {
  [&]<int... W>(std::integer_sequence<int, W...>) {
    (check_width<W + 1>(), ...);
  }(std::make_integer_sequence<int, 8>{});
}
