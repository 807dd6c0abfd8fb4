// Table-driven rule checks of linear algebra (matmul family, vecdot, dot, solve, cholesky, trace,
// outer);
// see tests/op_checker.hpp.
#include <catch2/catch.hpp>

#include "tests/op_checker.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::shape_t;

namespace {

/// A well-conditioned square matrix: n I + a uniform perturbation (stacked for leading dims).
tw::tensor<double> well_conditioned(shape_t s, unsigned seed) {
  tw::tensor<double> a = sample(s, -1, 1, seed);
  const std::int64_t n = s.back();
  return tw::kernels::zip("add", a, tw::eye<double>(n) * static_cast<double>(n),
                          [](double x, double y) { return x + y; });
}

/// Symmetric positive-definite matrices M Mᵀ + n I.
tw::tensor<double> spd(shape_t s, unsigned seed) {
  const tw::tensor<double> m = sample(s, -1, 1, seed);
  const std::int64_t n = s.back();
  return tw::matmul(m, tw::transpose(m, -1, -2)) + tw::eye<double>(n) * static_cast<double>(n);
}

}  // namespace

TEST_CASE("linear algebra: matmul family, vecdot, dot, solve, cholesky, trace, outer: every rule, both paths") {
  counter() = {};
  auto solve_samples = [](shape_t a, shape_t b) {
    return [=](unsigned seed) {
      return std::array<tw::tensor<double>, 2>{well_conditioned(a, seed), sample(b, -1, 1, seed + 3)};
    };
  };
  check_table(std::make_tuple(
      prim<2>("matmul (stacks of matrices)", tw::matmul_op{},
              {uniform<2>({shape_t{2, 3}, shape_t{3, 4}}), uniform<2>({shape_t{2, 2, 3}, shape_t{3, 1}}),
               uniform<2>({shape_t{1, 2, 3}, shape_t{2, 3, 2}})}),
      row<2>("matmul (1-D operands)", [](auto a, auto b) { return tw::matmul(a, b); },
             {uniform<2>({shape_t{3}, shape_t{3}}), uniform<2>({shape_t{3}, shape_t{3, 2}}),
              uniform<2>({shape_t{2, 3}, shape_t{3}}), uniform<2>({shape_t{3}, shape_t{2, 3, 2}})}),
      row<2>("mm / mv", [](auto a, auto v) { return tw::mv(tw::mm(a, tw::transpose(a, 0, 1)), v); },
             {uniform<2>({shape_t{3, 2}, shape_t{3}})}),
      row<2>("bmm", [](auto a, auto b) { return tw::bmm(a, b); }, {uniform<2>({shape_t{2, 2, 3}, shape_t{2, 3, 2}})}),
      prim<2>("vecdot", tw::vecdot_op{},
              {uniform<2>({shape_t{3}, shape_t{3}}), uniform<2>({shape_t{2, 3}, shape_t{3}}),
               uniform<2>({shape_t{3}, shape_t{2, 3}}), uniform<2>({shape_t{2, 1, 3}, shape_t{4, 3}}),
               uniform<2>({shape_t{2, 3}, shape_t{2, 3}})}),
      row<2>("dot", [](auto x, auto y) { return tw::dot(x, y); },
             {uniform<2>({shape_t{4}, shape_t{4}}), uniform<2>({shape_t{1}, shape_t{1}})}),
      row<2>("outer", [](auto a, auto b) { return tw::outer(a, b); }, {uniform<2>({shape_t{3}, shape_t{2}})}),
      row<1>("trace", [](auto a) { return tw::trace(a); }, {uniform<1>({shape_t{3, 3}}), uniform<1>({shape_t{2, 3}})}),
      prim<2>("solve", tw::solve_op{}, {solve_samples({3, 3}, {3, 2}), solve_samples({2, 2, 2}, {2, 1})}),
      row<2>("solve (vector right-hand side)", [](auto a, auto b) { return tw::solve(a, b); },
             {solve_samples({3, 3}, {3})}),
      prim<1>("cholesky", tw::cholesky_op{},
              {[](unsigned seed) { return std::array<tw::tensor<double>, 1>{spd({3, 3}, seed)}; },
               [](unsigned seed) { return std::array<tw::tensor<double>, 1>{spd({2, 2, 2}, seed)}; }}),
      doubles_only(
          row<1>("cholesky of M Mᵀ + 3 I",
                 [](auto m) { return tw::cholesky(tw::matmul(m, tw::transpose(m, 0, 1)) + tw::eye<double>(3) * 3.0); },
                 {uniform<1>({shape_t{3, 3}})}))));
  counter().report("linalg");
  REQUIRE(counter().total() > 250);
}

TEST_CASE("linear algebra raises tower::error naming the op and the shapes") {
  const tw::tensor<double> a = sample({2, 3}), b = sample({2, 3});
  REQUIRE_THROWS_WITH(tw::matmul(a, b), Catch::Contains("matmul") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::mm(a, sample({3})), Catch::Contains("mm") && Catch::Contains("[3]"));
  REQUIRE_THROWS_WITH(tw::vecdot(a, sample({2})), Catch::Contains("vecdot") && Catch::Contains("[2, 3] and [2]"));
  REQUIRE_THROWS_WITH(tw::vecdot(sample({2, 3}), sample({3, 3})),
                      Catch::Contains("vecdot") && Catch::Contains("broadcast"));
  REQUIRE_THROWS_WITH(tw::solve(tw::tensor<double>{{1.0, 2.0}, {2.0, 4.0}}, tw::tensor<double>{1.0, 1.0}),
                      Catch::Contains("solve") && Catch::Contains("singular"));
  REQUIRE_THROWS_WITH(tw::solve(a, b), Catch::Contains("solve") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(tw::cholesky(tw::tensor<double>{{1.0, 2.0}, {2.0, 1.0}}),
                      Catch::Contains("cholesky") && Catch::Contains("positive definite"));
  REQUIRE_THROWS_WITH(tw::matmul(sample({2, 2, 3}), sample({3, 3, 2})),
                      Catch::Contains("matmul") && Catch::Contains("broadcastable"));
  // Under transforms, on both paths.
  REQUIRE_THROWS_WITH(tw::vmap([](auto x) { return tw::solve(x, x); })(tw::zeros<double>({2, 2, 2})),
                      Catch::Contains("singular"));
  std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return tw::sum(tw::cholesky(x)); };
  REQUIRE_THROWS_WITH(tw::grad(f)(-tw::eye<double>(2)), Catch::Contains("positive definite"));
}

namespace {
/// matmul by definition: a triple loop over [..., n, k] x [k, m] (or [n, k] x [..., k, m]).
tw::tensor<double> naive_matmul(const tw::tensor<double>& a, const tw::tensor<double>& b) {
  const bool stack_left = a.dim() == 3;
  const std::int64_t count = stack_left ? a.shape()[0] : b.shape()[0];
  const std::int64_t n = a.shape()[a.dim() - 2], k = a.shape().back(), m = b.shape().back();
  std::vector<double> out(static_cast<std::size_t>(count * n * m), 0.0);
  for (std::int64_t s = 0; s < count; ++s)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t c = 0; c < m; ++c) {
        double acc = 0;
        for (std::int64_t j = 0; j < k; ++j)
          acc +=
              a.data()[(stack_left ? s * n * k : 0) + i * k + j] * b.data()[(stack_left ? 0 : s * k * m) + j * m + c];
        out[static_cast<std::size_t>((s * n + i) * m + c)] = acc;
      }
  return tw::tensor<double>({count, n, m}, out);
}

/// A tensor with about `density` of its entries nonzero (the rest exactly 0).
tw::tensor<double> sparse_sample(shape_t s, double density, unsigned seed) {
  tw::tensor<double> v = sample(s, -1, 1, seed), keep = sample(s, 0, 1, seed + 1);
  std::vector<double> out(static_cast<std::size_t>(v.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = keep.data()[i] < density ? v.data()[i] : 0.0;
  return tw::tensor<double>(s, out);
}
}  // namespace

TEST_CASE("matmul: mostly-zero operands (identity bases) give the dense product's numbers") {
  // A stack of mostly-zero matrices times one matrix, and one matrix times a stack of
  // mostly-zero columns (the two layouts of vmap's matmul against an unbatched weight), at
  // densities on both sides of the sparse path's 1/8 threshold.
  for (double density : {0.0, 0.02, 0.1, 0.13, 0.3, 1.0}) {
    const tw::tensor<double> l = sparse_sample({16, 8, 8}, density, 91), r = sample({8, 16}, -1, 1, 92);
    require_close(tw::matmul(l, r), naive_matmul(l, r), 1e-14);
    const tw::tensor<double> w = sample({16, 8}, -1, 1, 93), cols = sparse_sample({32, 8, 1}, density, 94);
    require_close(tw::matmul(w, cols), naive_matmul(w, cols), 1e-14);
  }
  // A non-finite entry in the dense operand: zeros times inf must still give NaN (IEEE), so the
  // product takes the dense path.
  tw::tensor<double> r = sample({8, 16}, -1, 1, 95);
  std::vector<double> rv(r.data(), r.data() + r.numel());
  rv[3] = std::numeric_limits<double>::infinity();
  r = tw::tensor<double>({8, 16}, rv);
  const tw::tensor<double> l = sparse_sample({16, 8, 8}, 0.02, 96);
  const tw::tensor<double> got = tw::matmul(l, r), want = naive_matmul(l, r);
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data()[i], w = want.data()[i];
    INFO("entry " << i);
    REQUIRE(std::isnan(g) == std::isnan(w));
    if (!std::isnan(w)) REQUIRE(g == Approx(w).margin(1e-14));
  }
}

namespace {
/// got == want entry by entry, NaN where want has NaN.
void require_same_or_nan(const tw::tensor<double>& got, const tw::tensor<double>& want) {
  REQUIRE(got.shape() == want.shape());
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.data()[i], w = want.data()[i];
    INFO("entry " << i);
    REQUIRE(std::isnan(g) == std::isnan(w));
    if (!std::isnan(w)) REQUIRE(g == Approx(w).margin(1e-14));
  }
}
}  // namespace

TEST_CASE("matmul: diagonal operands (the basis after elementwise ops) give the dense product's numbers") {
  // product_into's diagonal path: diag(d) r row by row, and the transposed layout (one matrix
  // times a stack of one-hot columns, as jacfwd pushes the basis through A x). Off-diagonal
  // -0.0 still counts as diagonal; one entry off the diagonal, or a non-finite entry in the
  // other operand (0 * inf is NaN), must give the dense product's numbers.
  for (const std::int64_t n : {8, 9, 16, 17, 64}) {
    INFO("n = " << n);
    const tw::tensor<double> d = sample({n}, -1, 1, static_cast<unsigned>(200 + n));
    std::vector<double> dv(static_cast<std::size_t>(n * n), 0.0);
    for (std::int64_t i = 0; i < n; ++i) dv[static_cast<std::size_t>(i * (n + 1))] = d.data()[i];
    dv[static_cast<std::size_t>(n - 1)] = -0.0;
    const std::int64_t m = n + 3;
    const tw::tensor<double> r = sample({n, m}, -1, 1, static_cast<unsigned>(300 + n)), w = sample({m, n}, -1, 1, 7);
    for (const int variant : {0, 1, 2, 3}) {
      INFO("variant " << variant);
      std::vector<double> lv = dv, rv(r.data(), r.data() + r.numel()), wv(w.data(), w.data() + w.numel());
      if (variant == 1) lv[static_cast<std::size_t>(n * (n - 1) + 1)] = 0.5;  // one entry off the diagonal
      if (variant == 2)
        rv[static_cast<std::size_t>(m + 2)] = std::numeric_limits<double>::infinity(),
                                        wv[5] = std::numeric_limits<double>::infinity();
      if (variant == 3)
        rv.back() = std::numeric_limits<double>::quiet_NaN(), wv.back() = std::numeric_limits<double>::quiet_NaN();
      const tw::tensor<double> l({n, 1, n}, lv), rr({n, m}, rv), ww({m, n}, wv), cols({n, n, 1}, lv);
      require_same_or_nan(tw::matmul(l, rr), naive_matmul(l, rr));
      require_same_or_nan(tw::matmul(ww, cols), naive_matmul(ww, cols));
    }
  }
}

TEST_CASE("is_diagonal: one nonzero anywhere off the diagonal is found, in float and double, any size") {
  // The scan ORs runs of n in blocks of four vectors and a scalar tail: every off-diagonal
  // position, for sizes with no block, blocks and a tail, and blocks only.
  auto check = [](auto zero) {
    using T = decltype(zero);
    for (const std::int64_t n : {1, 2, 9, 16, 17, 33, 64}) {
      std::vector<T> m(static_cast<std::size_t>(n * n), T(0));
      for (std::int64_t i = 0; i < n; ++i) m[static_cast<std::size_t>(i * (n + 1))] = T(i + 1);
      REQUIRE(tw::kernels::is_diagonal(m.data(), n));
      for (std::int64_t q = 0; q < n * n; ++q) {
        if (q % (n + 1) == 0) continue;  // on the diagonal
        INFO("n = " << n << ", position " << q << ", " << sizeof(T) << "-byte numbers");
        T& e = m[static_cast<std::size_t>(q)];
        e = T(-0.0);
        REQUIRE(tw::kernels::is_diagonal(m.data(), n));  // -0 is a zero
        e = std::numeric_limits<T>::denorm_min();
        REQUIRE_FALSE(tw::kernels::is_diagonal(m.data(), n));
        e = std::numeric_limits<T>::quiet_NaN();
        REQUIRE_FALSE(tw::kernels::is_diagonal(m.data(), n));
        e = T(0);
      }
    }
  };
  check(0.0);
  check(0.0f);
}

TEST_CASE("matmul with a diagonal operand (the Jacobians' basis): the numbers of a GEMM, with inf, NaN and writes") {
  // matmul finds a diagonal operand by one pass over it and skips its zeros; skipping is exact only
  // for finite other operands, and a write off the diagonal must take the full product.
  const std::int64_t n = 9, m = 11;
  const tw::tensor<double> basis = tw::detail::identity_basis<double>(n, {n});
  const tw::tensor<double> A = sample({n, m}, -1, 1, 61), d = sample({n}, -1, 1, 62);
  auto product_matches = [&](const tw::tensor<double>& l) {  // l [n, n] as a stack of rows, times A
    const tw::tensor<double> rows = tw::reshape(l, {n, 1, n});
    require_same_or_nan(tw::matmul(rows, A), naive_matmul(rows, A));
  };
  const tw::tensor<double> scaled = basis * d, scaled2 = 2.0 * basis;
  product_matches(scaled);
  product_matches(scaled2);
  // A non-finite factor: 0 * inf is NaN off the diagonal.
  std::vector<double> dv(d.data(), d.data() + n);
  dv[4] = std::numeric_limits<double>::infinity();
  const tw::tensor<double> with_inf = basis * tw::tensor<double>(dv);
  product_matches(with_inf);
  product_matches(basis * std::numeric_limits<double>::quiet_NaN());
  product_matches(basis * sample({n, n}, -1, 1, 63));
  // A write copies shared storage: the shared original keeps its numbers.
  tw::tensor<double> written = scaled;
  written.data()[1] = 0.5;
  REQUIRE(scaled.data()[1] == 0.0);
  product_matches(written);
  product_matches(scaled);
  tw::tensor<double> alone = basis * d;  // not shared: written in place
  alone(2, 7) = -1.5;
  product_matches(alone);
  // jacfwd's layout: one matrix times the basis as a stack of columns.
  const tw::tensor<double> W = sample({m, n}, -1, 1, 64), cols = tw::reshape(scaled, {n, n, 1});
  require_same_or_nan(tw::matmul(W, cols), naive_matmul(W, cols));
  // jacfwd with the batch last: a matrix times the basis, or a scaled basis, as one matrix (the
  // identity returns W itself, a scaled one scales W's columns); with inf or NaN in W, a GEMM.
  auto one_product = [&](const tw::tensor<double>& a, const tw::tensor<double>& b) {  // [m, n] x [n, n]
    return tw::reshape(naive_matmul(tw::reshape(a, {1, m, n}), b), {m, n});
  };
  require_same_or_nan(tw::matmul(W, basis), one_product(W, basis));
  const tw::tensor<double> shared = tw::matmul(W, basis);
  REQUIRE(shared.data() == W.data());  // no copy
  require_same_or_nan(tw::matmul(W, scaled), one_product(W, scaled));
  tw::tensor<double> W_bad = W;
  W_bad(3, 2) = std::numeric_limits<double>::infinity();
  W_bad(5, 0) = std::numeric_limits<double>::quiet_NaN();
  require_same_or_nan(tw::matmul(W_bad, basis), one_product(W_bad, basis));
  require_same_or_nan(tw::matmul(W_bad, scaled), one_product(W_bad, scaled));
  REQUIRE(std::isnan(tw::matmul(W_bad, basis)(3, 0)));
}

TEST_CASE("jacrev and jacfwd of tanh(A x), 64 x 64 (sparse products of the identity basis), both paths") {
  const tw::tensor<double> A = sample({64, 64}, -0.2, 0.2, 97), x = sample({64}, -1, 1, 98);
  auto f = [&](auto v) { return tw::tanh(tw::matmul(A, v)); };
  const tw::tensor<double> y = f(x);
  std::vector<double> J(64 * 64);
  for (std::int64_t i = 0; i < 64; ++i)
    for (std::int64_t j = 0; j < 64; ++j)
      J[static_cast<std::size_t>(i * 64 + j)] = (1 - y.data()[i] * y.data()[i]) * A.data()[i * 64 + j];
  const tw::tensor<double> want({64, 64}, J);
  require_close(tw::jacrev(f)(x), want, 1e-15);
  require_close(tw::jacfwd(f)(x), want, 1e-15);
  std::function<tw::dyn::value(tw::dyn::value)> erased = [&](tw::dyn::value v) {
    return tw::tanh(tw::matmul(tw::dyn::value(A), v));
  };
  require_close(tw::jacrev(erased)(x).to_tensor(), want, 1e-15);
  require_close(tw::jacfwd(erased)(x).to_tensor(), want, 1e-15);
}

TEST_CASE("jacrev and jacfwd: repeated calls over more shapes than the basis cache keeps") {
  // identity_basis keeps the last 4 bases per thread and shares them (jacobian.hpp): 6 sizes,
  // twice over, evict and rebuild them, and a Jacobian written to afterwards (copy on write)
  // must not change the next one.
  for (int round = 0; round < 2; ++round) {
    for (const std::int64_t n : {3, 5, 6, 7, 9, 3}) {
      const tw::tensor<double> A = sample({n, n}, -1, 1, static_cast<unsigned>(100 + n)), x = sample({n}, -1, 1, 7);
      auto f = [&](auto v) { return tw::tanh(tw::matmul(A, v)); };
      const tw::tensor<double> y = f(x);
      std::vector<double> J(static_cast<std::size_t>(n * n));
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j)
          J[static_cast<std::size_t>(i * n + j)] = (1 - y.data()[i] * y.data()[i]) * A.data()[i * n + j];
      const tw::tensor<double> want({n, n}, J);
      tw::tensor<double> got = tw::jacrev(f)(x);
      require_close(got, want, 1e-15);
      got.data()[0] += 1.0;
      require_close(tw::jacfwd(f)(x), want, 1e-15);
      require_close(tw::jacrev(f)(x), want, 1e-15);
      // The identity map's Jacobian is the basis itself: writing to it must leave the kept one.
      auto same = [](auto v) { return v; };
      tw::tensor<double> eye = tw::jacrev(same)(x);
      eye.data()[1] = 5.0;
      const tw::tensor<double> eye2 = tw::jacfwd(same)(x);
      for (std::int64_t i = 0; i < n * n; ++i) REQUIRE(eye2.data()[i] == (i % (n + 1) == 0 ? 1.0 : 0.0));
    }
  }
}
