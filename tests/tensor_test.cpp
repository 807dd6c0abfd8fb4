// tensor<T>: construction, creation functions, element access, printing, and Eigen interop.
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>
#include <vector>

#include <sstream>

#include "tests/check.hpp"
#include "tower/eigen.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::shape_t;
using tw::tensor;

TEST_CASE("tensor construction: shape + data, vector, nested lists, value semantics") {
  const tensor<double> a({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(a.shape() == shape_t{2, 3});
  CHECK(a.dim() == 2);
  CHECK(a.numel() == 6);
  CHECK(a(1, 2) == 6);
  const tensor<double> v(std::vector<double>{1, 2, 3});
  CHECK(v.shape() == shape_t{3});
  const tensor<double> n{{1, 2, 3}, {4, 5, 6}};
  CHECK(n.shape() == shape_t{2, 3});
  CHECK(n.values() == a.values());
  const tensor<float> c{{{1, 2}}, {{3, 4}}};
  CHECK(c.shape() == shape_t{2, 1, 2});
  CHECK(c(1, 0, 1) == 4.0f);
  REQUIRE_THROWS_WITH((tensor<double>{{1, 2}, {3}}), Catch::Contains("ragged"));
  REQUIRE_THROWS_WITH(tensor<double>({2, 2}, {1, 2, 3}), Catch::Contains("[2, 2]"));
  REQUIRE_THROWS_WITH(a(2, 0), Catch::Contains("out of range"));
  tensor<double> b = a;  // copies share storage until written
  b(0, 0) = 10;
  CHECK(a(0, 0) == 1);
  CHECK(b(0, 0) == 10);
}

TEST_CASE("creation functions: zeros, ones, full, arange, eye, randn") {
  CHECK(tw::zeros<double>({2, 2}).values() == std::vector<double>(4, 0.0));
  CHECK(tw::ones<float>({3}).values() == std::vector<float>(3, 1.0f));
  CHECK(tw::full<double>({2}, 2.5).values() == std::vector<double>{2.5, 2.5});
  CHECK(tw::arange<double>(4).values() == std::vector<double>{0, 1, 2, 3});
  CHECK(tw::arange<double>(1.0, 2.0, 0.25).values() == std::vector<double>{1, 1.25, 1.5, 1.75});
  // As torch: ceil((stop - start) / step) elements, each start + i step (not a running sum).
  const tensor<double> tenths = tw::arange<double>(0.0, 1.0, 0.1);
  REQUIRE(tenths.numel() == 10);
  for (std::int64_t i = 0; i < 10; ++i) CHECK(tenths(i) == 0.1 * static_cast<double>(i));
  CHECK(tw::arange<double>(3.0, 0.0, -1.0).values() == std::vector<double>{3, 2, 1});
  CHECK(tw::arange<double>(1.0, 1.0, 1.0).numel() == 0);
  CHECK(tw::arange<double>(2.0, 1.0, 1.0).numel() == 0);
  // Past 2^24 a float's running sum would stop growing; each element is computed on its own.
  const std::int64_t big = std::int64_t{1} << 25;
  const tensor<float> f = tw::arange<float>(big);
  REQUIRE(f.numel() == big);
  CHECK(f(big - 1) == static_cast<float>(big - 1));
  CHECK(tw::eye<double>(2).values() == std::vector<double>{1, 0, 0, 1});
  CHECK(tw::eye<double>(2, 3).shape() == shape_t{2, 3});
  const tensor<double> r1 = tw::randn<double>({1000}, 7), r2 = tw::randn<double>({1000}, 7),
                       r3 = tw::randn<double>({1000}, 8);
  CHECK(r1.values() == r2.values());
  CHECK(r1.values() != r3.values());
  const double m = tw::mean(r1).item(), s = std::sqrt(tw::var(r1).item());
  CHECK(std::abs(m) < 0.1);
  CHECK(std::abs(s - 1) < 0.1);
}

TEST_CASE("printing nests brackets by dimension") {
  std::ostringstream os;
  os << tensor<double>{{1, 2}, {3, 4}} << ' ' << tensor<double>(2.5);
  CHECK(os.str() == "tensor([[1, 2], [3, 4]]) tensor(2.5)");
}

TEST_CASE("Eigen interop: copies in and out, zero-copy views") {
  const tensor<double> t{{1, 2, 3}, {4, 5, 6}};
  const Eigen::MatrixXd m = tw::to_eigen(t);
  CHECK(m.rows() == 2);
  CHECK(m(1, 0) == 4);
  const tensor<double> back = tw::from_eigen(m);
  CHECK(back.shape() == shape_t{2, 3});
  CHECK(back.values() == t.values());
  const Eigen::VectorXf v = Eigen::VectorXf::LinSpaced(3, 0, 2);
  const tensor<float> tv = tw::from_eigen(v);
  CHECK(tv.shape() == shape_t{3});
  CHECK(tv(2) == 2.0f);
  auto view = tw::eigen_view(t);
  CHECK(view.data() == t.data());  // no copy
  CHECK(view(1, 2) == 6);
  tensor<double> u = t;
  tw::eigen_map(u) *= 2.0;  // detaches from t's storage, then writes in place
  CHECK(u(1, 2) == 12);
  CHECK(t(1, 2) == 6);
  REQUIRE_THROWS_WITH(tw::eigen_view(tensor<double>(1.0)), Catch::Contains("rank 1 or 2"));
  // GEMM through Eigen agrees with Eigen.
  const tensor<double> a = tower::testing::sample({3, 4}), b = tower::testing::sample({4, 2});
  const Eigen::MatrixXd ab = tw::to_eigen(a) * tw::to_eigen(b);
  tower::testing::require_close(tw::matmul(a, b), tw::from_eigen(ab), 1e-14);
}

TEST_CASE("buffer_pool: size classes fit every request with at most 25% to spare") {
  using pool = tw::detail::buffer_pool;
  for (std::size_t bytes = pool::min_bytes; bytes < (std::size_t{1} << 24); bytes += bytes / 7 + 1) {
    const std::size_t c = pool::class_of(bytes);
    INFO(bytes << " bytes, class " << c);
    REQUIRE(pool::class_bytes(c) >= bytes);
    REQUIRE(pool::class_bytes(c) <= bytes + bytes / 4 + pool::min_bytes / 4);
    if (c > 0) REQUIRE(pool::class_bytes(c - 1) < bytes);
  }
}

TEST_CASE("buffer_pool: a small class keeps the dozens of buffers a backward pass frees at once") {
  // vmap's packets free a few dozen 2 KiB values per packet; each one the pool turned away was a
  // malloc (and a glibc consolidation) in the next packet.
  using pool = tw::detail::buffer_pool;
  if (!pool::enabled) return;
  constexpr std::size_t n = 40, bytes = 2048;
  REQUIRE(pool::max_blocks(pool::class_of(bytes)) >= n);
  REQUIRE(pool::max_blocks(pool::class_of(std::size_t{1} << 24)) == 8);
  std::vector<void*> first, again;
  for (std::size_t i = 0; i < n; ++i) first.push_back(pool::allocate(bytes));
  for (void* p : first) pool::deallocate(p, bytes);
  for (std::size_t i = 0; i < n; ++i) again.push_back(pool::allocate(bytes));
  std::sort(first.begin(), first.end());
  std::sort(again.begin(), again.end());
  REQUIRE(again == first);  // every one came back from the cache
  for (void* p : again) pool::deallocate(p, bytes);
}

TEST_CASE("buffer_pool: recycled buffers hold what is written to them, across sizes and threads") {
  // Tensors of sizes around the pool's 1 KiB threshold (128 doubles) and of several classes, freed and made
  // again in an interleaved order: every tensor keeps its own values.
  std::vector<tw::tensor<double>> keep;
  for (int round = 0; round < 4; ++round) {
    std::vector<tw::tensor<double>> made;
    for (std::int64_t n : {127, 128, 129, 160, 511, 512, 513, 1000, 4096, 5000, 100000})
      made.push_back(tw::full<double>({n}, static_cast<double>(n + round)));
    for (std::size_t i = 0; i < made.size(); i += 2) keep.push_back(made[i]);
  }
  for (const auto& t : keep) {
    const double v = t.data()[0];
    for (std::int64_t i = 0; i < t.numel(); ++i) REQUIRE(t.data()[i] == v);
  }
  // A buffer made on one thread and freed on another joins the other thread's cache.
  tw::tensor<double> moved = tw::full<double>({20000}, 3.0);
  std::thread([t = std::move(moved)]() mutable { t = tw::tensor<double>(); }).join();
  const tw::tensor<double> again = tw::full<double>({20000}, 4.0);
  REQUIRE(tw::sum(again).item() == 80000.0);
}
