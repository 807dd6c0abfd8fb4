// tw::pmap over MPI ranks (run under mpirun, tests/mpi_run.sh): the collectives' values, their
// gradients, JVPs, Hessians and batching rules against single-process references built from
// every rank's shard, on both paths; failures on one rank raise on every rank without a hang.
//
// Reduction order: psum is MPI_Allreduce, which may add the ranks in any order, so a psum is
// compared with the in-order sum with a tolerance of 1e-13 relative to max(1, |value|)
// (with 2 ranks the sum is a + b in either order, the same bits). Everything else is exact up to
// the same tolerance. Checks run outside pmap: a failed REQUIRE inside f would leave its rank
// out of step with the others (which the pmap agreement would then report).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "tests/check.hpp"
#include "tower/mpi.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {

constexpr double tol = 1e-13;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

/// Rank r's shard: 5 examples of 3 numbers.
tensor<double> shard(int r) { return sample({5, 3}, -1.5, 1.5, static_cast<unsigned>(r + 1)); }

/// f over the shards of all ranks, added in rank order.
template <class F>
tensor<double> sum_over_ranks(F f) {
  tensor<double> s = f(shard(0));
  for (int r = 1; r < world_size(); ++r) s = s + f(shard(r));
  return s;
}

tensor<double> map(const tensor<double>& x, double (*f)(double)) {
  tensor<double> r = x;
  for (std::int64_t i = 0; i < r.numel(); ++i) r.data()[i] = f(r.data()[i]);
  return r;
}

const auto identity = [](const tensor<double>& x) { return x; };

}  // namespace

TEST_CASE("pmap: psum, pmean, all_gather, axis_index and axis_size values, both paths") {
  const int rank = world_rank(), n = world_size();
  const tensor<double> X = shard(rank);
  const tensor<double> total = sum_over_ranks(identity);
  std::vector<tensor<double>> shards;
  for (int r = 0; r < n; ++r) shards.push_back(shard(r));
  const tensor<double> gathered = stack(shards);

  auto f = [](auto x) {
    return std::make_tuple(tw::psum(x), tw::pmean(x), tw::all_gather(x), tw::psum(tw::sum(x)),
                           static_cast<double>(tw::axis_index()), static_cast<double>(tw::axis_size()));
  };
  const auto [s, m, g, ss, idx, size] = tw::pmap(f, MPI_COMM_WORLD)(X);
  CHECK(max_rel_err(s, total) <= tol);
  CHECK(max_rel_err(m, total / static_cast<double>(n)) <= tol);
  CHECK(max_rel_err(g, gathered) <= 0.0);
  CHECK(std::abs(tw::item(ss) - tw::sum(total).item()) <= tol * std::abs(tw::sum(total).item()) + tol);
  CHECK(idx == rank);
  CHECK(size == n);

  // The runtime path: a type-erased f of dyn::values.
  std::function<value(value)> erased = [](value x) { return tw::psum(x) + tw::all_gather(tw::pmean(x)); };
  const tensor<double> got = tw::pmap(erased, MPI_COMM_WORLD)(value(X)).to_tensor();
  const tensor<double> want =
      tw::broadcast_to(total, {n, 5, 3}) + tw::broadcast_to(total / static_cast<double>(n), {n, 5, 3});
  CHECK(max_rel_err(got, want) <= tol);

  // Numbers: a psum of a double is a double.
  const double d = tw::pmap([](double x) { return tw::psum(x); }, MPI_COMM_WORLD)(1.0 + rank);
  CHECK(d == n * (n + 1) / 2.0);
}

TEST_CASE("pmap: one rank (MPI_COMM_SELF) is the identity axis") {
  const tensor<double> X = shard(world_rank());
  const auto [s, g, i] = tw::pmap(
      [](auto x) { return std::make_tuple(tw::psum(x), tw::all_gather(x), tw::axis_index()); }, MPI_COMM_SELF)(X);
  CHECK(max_rel_err(s, X) <= 0.0);
  CHECK(max_rel_err(g, tw::reshape(X, {1, 5, 3})) <= 0.0);
  CHECK(i == 0);
}

TEST_CASE("pmap: gradients of collectives (a collective's output has the same cotangent on every rank)") {
  const int rank = world_rank(), n = world_size();
  const tensor<double> X = shard(rank), total = sum_over_ranks(identity);
  auto sq = [](const tensor<double>& x) { return x * x; };

  // F(x_0..x_n-1) = sum over ranks of sum(x_r^2), on every rank: dF/dx_r = 2 x_r.
  auto psum_loss = [](auto x) { return tw::psum(tw::sum(x * x)); };
  // F = mean over ranks of sum(sin(x_r)): dF/dx_r = cos(x_r) / n.
  auto pmean_loss = [](auto x) { return tw::pmean(tw::sum(tw::sin(x))); };
  // F = sum(all_gather(x)^3) = sum over ranks of sum(x_r^3): dF/dx_r = 3 x_r^2.
  auto gather_loss = [](auto x) { return tw::sum(tw::pow(tw::all_gather(x), 3.0)); };
  // F = sum(S * S), S = psum(x): dF/dx_r = 2 S.
  auto square_of_sum = [](auto x) { return tw::sum(tw::psum(x) * tw::psum(x)); };

  const auto [g1, g2, g3, g4] = tw::pmap(
      [&](auto x) {
        return std::make_tuple(tw::grad(psum_loss)(x), tw::grad(pmean_loss)(x), tw::grad(gather_loss)(x),
                               tw::grad(square_of_sum)(x));
      },
      MPI_COMM_WORLD)(X);
  CHECK(max_rel_err(g1, 2.0 * X) <= tol);
  CHECK(max_rel_err(g2, map(X, std::cos) / static_cast<double>(n)) <= tol);
  CHECK(max_rel_err(g3, 3.0 * sq(X)) <= tol);
  CHECK(max_rel_err(g4, 2.0 * total) <= tol);

  // The same on the runtime path.
  std::function<value(value)> erased = [&](value x) { return square_of_sum(x) + psum_loss(x); };
  const tensor<double> gr =
      tw::pmap([&](value x) { return tw::grad(erased)(x); }, MPI_COMM_WORLD)(value(X)).to_tensor();
  CHECK(max_rel_err(gr, 2.0 * total + 2.0 * X) <= tol);

  // Against finite differences of the single-process function of every rank's shard.
  const tensor<double> fd = fd_grad(
      [&](const tensor<double>& x) {
        tensor<double> s = x;
        for (int r = 0; r < n; ++r)
          if (r != rank) s = s + shard(r);
        return tw::sum(s * s).item();
      },
      X);
  CHECK(max_rel_err(g4, fd) <= 1e-6);
}

TEST_CASE("pmap: higher derivatives and JVPs of collectives") {
  const int rank = world_rank(), n = world_size();
  const tensor<double> X = shard(rank);
  const tensor<double> T = sample({5, 3}, -1, 1, static_cast<unsigned>(100 + rank));  // this rank's tangent

  const double x0 = 0.5 + rank;
  const auto [gg, j1, j2, hd, jn] = tw::pmap(
      [&](double x, const tensor<double>& v, const tensor<double>& t) {
        // d2/dx2 of the sum over ranks of x_r^3: 6 x_r (grad of grad on numbers).
        const double second = tw::grad(tw::grad([](auto y) { return tw::psum(y * y * y); }))(x);
        // jvp of psum and of all_gather: the collective of the tangents.
        const auto [o1, t1] = tw::jvp([](auto y) { return tw::psum(tw::sin(y)); }, std::tuple{v}, std::tuple{t});
        const auto [o2, t2] = tw::jvp([](auto y) { return tw::all_gather(y); }, std::tuple{v}, std::tuple{t});
        // jvp on numbers: d/ds psum((x + s)^2) = sum over ranks of 2 x_r.
        const auto [o3, t3] = tw::jvp([](auto y) { return tw::psum(y * y); }, std::tuple{x}, std::tuple{1.0});
        (void)o1;
        (void)o2;
        (void)o3;
        // Hessian of sum over ranks of sum(x_r^3), along one row: diag 6 x_r.
        const tensor<double> h =
            tw::hessian([](auto y) { return tw::psum(tw::sum(y * y * y)); })(tw::narrow(v, 0, 0, 1));
        return std::make_tuple(second, t1, t2, h, t3);
      },
      MPI_COMM_WORLD)(x0, X, T);
  CHECK(std::abs(gg - 6 * x0) <= tol * 6 * x0);
  double want_jn = 0;
  for (int r = 0; r < n; ++r) want_jn += 2 * (0.5 + r);
  CHECK(std::abs(jn - want_jn) <= tol * want_jn);
  // d/ds psum(sin(x + s t)) = sum over ranks of cos(x_r) t_r.
  const tensor<double> want1 = [&] {
    tensor<double> s = map(shard(0), std::cos) * sample({5, 3}, -1, 1, 100);
    for (int r = 1; r < n; ++r) s = s + map(shard(r), std::cos) * sample({5, 3}, -1, 1, static_cast<unsigned>(100 + r));
    return s;
  }();
  CHECK(max_rel_err(j1, want1) <= tol);
  std::vector<tensor<double>> ts;
  for (int r = 0; r < n; ++r) ts.push_back(sample({5, 3}, -1, 1, static_cast<unsigned>(100 + r)));
  CHECK(max_rel_err(j2, stack(ts)) <= 0.0);
  tensor<double> want_h = tw::zeros<double>({1, 3, 1, 3});
  for (int i = 0; i < 3; ++i) want_h.data()[i * 3 + i] = 6 * X.data()[i];
  CHECK(max_rel_err(hd, want_h) <= tol);
}

TEST_CASE("pmap: vmap inside pmap (batching rules) and per-example gradients") {
  const int rank = world_rank(), n = world_size();
  const tensor<double> X = shard(rank), total = sum_over_ranks(identity);
  const auto [s, g, pe, pe_rt] = tw::pmap(
      [](const tensor<double>& x) {
        // Each example's row summed over the ranks; gathered rows [B, ranks, 3].
        auto rows = tw::vmap([](auto r) { return tw::psum(r); })(x);
        auto gathered = tw::vmap([](auto r) { return tw::all_gather(r); })(x);
        // Per-example gradients of sum over ranks of (sum(r)^2 + sum(r * psum(r))): the
        // second term uses psum's output with rank-dependent values, so it goes through pvary.
        auto loss = [](auto r) {
          return tw::psum(tw::sum(r) * tw::sum(r)) + tw::psum(tw::sum(r * tw::pvary(tw::psum(r))));
        };
        auto per_example = tw::vmap(tw::grad(loss))(x);
        std::function<value(value)> erased = [&](value r) { return loss(r); };
        auto per_example_rt = tw::vmap(tw::grad(erased))(value(x)).to_tensor();
        return std::make_tuple(rows, gathered, per_example, per_example_rt);
      },
      MPI_COMM_WORLD)(X);
  CHECK(max_rel_err(s, total) <= tol);
  std::vector<tensor<double>> shards;
  for (int r = 0; r < n; ++r) shards.push_back(shard(r));
  CHECK(max_rel_err(g, tw::movedim(stack(shards), 0, 1)) <= 0.0);
  // d/dr_b of sum_r (sum(r_b)^2 + <r_b, S_b>) = 2 sum(r_b) + 2 S_b (S_b: the row summed over ranks).
  const tensor<double> want = 2.0 * tw::broadcast_to(tw::sum(X, -1, true), {5, 3}) + 2.0 * total;
  CHECK(max_rel_err(pe, want) <= tol);
  CHECK(max_rel_err(pe_rt, want) <= tol);
}

TEST_CASE("pmap: grad of a data-parallel loss with a replicated parameter gives the global gradient on every rank") {
  const int rank = world_rank(), n = world_size();
  const tensor<double> X = shard(rank);
  const tensor<double> w = sample({3}, -1, 1, 77);
  // Per-rank loss: the mean over the shard of softplus(<w, x>); the global loss is their mean.
  auto local_loss = [](auto w_, auto x) { return tw::mean(tw::softplus(tw::matmul(x, w_))); };
  tensor<double> full_grad = tw::zeros<double>({3});
  for (int r = 0; r < n; ++r) full_grad = full_grad + tw::grad(local_loss)(w, shard(r));
  full_grad = full_grad / static_cast<double>(n);

  const auto [pv, pm] = tw::pmap(
      [&](const tensor<double>& w_, const tensor<double>& x) {
        // grad of the pmean'd loss, with w marked replicated: its shares are summed.
        auto g1 = tw::grad([&](auto v) { return tw::pmean(local_loss(tw::pvary(v), x)); })(w_);
        // The JAX pmap idiom: pmean of the local gradients.
        auto g2 = tw::pmean(tw::grad(local_loss)(w_, x));
        return std::make_tuple(g1, g2);
      },
      MPI_COMM_WORLD)(w, X);
  CHECK(max_rel_err(pv, full_grad) <= 1e-12);
  CHECK(max_rel_err(pm, full_grad) <= 1e-12);
}

TEST_CASE("pmap: grad, vjp, jacrev and jacfwd around pmap give what they give inside it, both paths") {
  const int rank = world_rank(), n = world_size();
  const tensor<double> X = shard(rank), Y = sample({5, 3}, -1, 1, static_cast<unsigned>(rank + 11)),
                       S = sum_over_ranks(identity);
  // F = sum over ranks of sum(sin(x_r) x_r): dF/dx_r = cos(x_r) x_r + sin(x_r).
  static constexpr auto f = [](auto x) { return tw::psum(tw::sum(tw::sin(x) * x)); };
  const tensor<double> want = map(X, std::cos) * X + map(X, std::sin);
  auto around = [](auto x) { return tw::pmap(f, MPI_COMM_WORLD)(x); };
  const tensor<double> g_static = tw::grad(around)(X);
  std::function<value(value)> erased = [around](value x) { return around(x); };
  const tensor<double> g_runtime = tw::grad(erased)(value(X)).to_tensor();
  CHECK(max_rel_err(g_static, want) <= tol);
  CHECK(max_rel_err(g_runtime, want) <= tol);

  // vjp of a tensor-valued f: S = psum(x) (marked rank-dependent, tw::pvary), F = S * x; the
  // cotangent ct_r on every rank gives ct_r * S + psum(ct * x) for x_r.
  static constexpr auto h = [](auto x) { return tw::pvary(tw::psum(x)) * x; };
  const tensor<double> ct = sample({5, 3}, -1, 1, static_cast<unsigned>(rank + 21));
  auto [out, pullback] = tw::vjp([](auto x) { return tw::pmap(h, MPI_COMM_WORLD)(x); }, X);
  CHECK(max_rel_err(out, S * X) <= tol);
  const auto ctx =
      tw::pmap([](const tensor<double>& c, const tensor<double>& x) { return tw::psum(c * x); }, MPI_COMM_WORLD)(ct, X);
  CHECK(max_rel_err(std::get<0>(pullback(ct)), ct * S + ctx) <= tol);

  // Jacobians of a tensor-valued f around pmap are those inside it (forward mode pushes every
  // rank's tangent through psum at the call; reverse mode gives each rank's own block).
  static constexpr auto v = [](auto x) { return tw::psum(tw::sin(x) * x); };
  const tensor<double> x0 = tw::reshape(X, {-1});
  auto pv = [](auto x) { return tw::pmap(v, MPI_COMM_WORLD)(x); };
  CHECK(max_rel_err(tw::jacrev(pv)(x0), tw::pmap([](auto x) { return tw::jacrev(v)(x); }, MPI_COMM_WORLD)(x0)) <= tol);
  CHECK(max_rel_err(tw::jacfwd(pv)(x0), tw::pmap([](auto x) { return tw::jacfwd(v)(x); }, MPI_COMM_WORLD)(x0)) <= tol);

  // Two arguments, pmean: F = mean over ranks of sum(sin(a_r) b_r).
  static constexpr auto f2 = [](auto a, auto b) { return tw::pmean(tw::sum(tw::sin(a) * b)); };
  const auto [ga, gb] =
      tw::grad([](auto a, auto b) { return tw::pmap(f2, MPI_COMM_WORLD)(a, b); }, tw::argnums<0, 1>)(X, Y);
  CHECK(max_rel_err(ga, map(X, std::cos) * Y / static_cast<double>(n)) <= tol);
  CHECK(max_rel_err(gb, map(X, std::sin) / static_cast<double>(n)) <= tol);

  // Second order: jacrev of grad around pmap is the Hessian inside it (diagonal here:
  // 2 cos x - x sin x).
  const tensor<double> x1 = tw::reshape(X, {-1});
  const tensor<double> H = tw::jacrev(tw::grad([](auto x) { return tw::pmap(f, MPI_COMM_WORLD)(x); }))(x1);
  const tensor<double> H_inside = tw::pmap([&](auto x) { return tw::hessian(f)(x); }, MPI_COMM_WORLD)(x1);
  CHECK(max_rel_err(H, H_inside) <= tol);
  for (std::int64_t i = 0; i < x1.numel(); ++i) {
    const double v = x1.data()[i];
    CHECK(std::abs(H(i, i) - (2 * std::cos(v) - v * std::sin(v))) <= tol);
  }
}

TEST_CASE("pmap: a rank that throws makes every rank raise, without a hang") {
  const int rank = world_rank(), n = world_size();
  if (n < 2) return;
  const tensor<double> X = shard(rank);
  auto step = tw::pmap(
      [](const tensor<double>& x) {
        if (tw::axis_index() == 1) throw std::runtime_error("boom on rank 1");
        return tw::psum(x);  // rank 0 waits here for rank 1, which never comes
      },
      MPI_COMM_WORLD);
  if (rank == 1) {
    CHECK_THROWS_AS(step(X), std::runtime_error);
    CHECK_THROWS_WITH(step(X), "boom on rank 1");
  } else {
    CHECK_THROWS_AS(step(X), tw::error);
    CHECK_THROWS_WITH(step(X),
                      Catch::Matchers::Contains("pmap: rank 1 of " + std::to_string(n) + " failed: boom on rank 1"));
  }

  // A failure in the backward pass (grad's tape) on rank 0 while the others wait in psum's.
  auto backward = tw::pmap(
      [](const tensor<double>& x) {
        return tw::grad([](auto v) {
          auto y = tw::psum(tw::sum(v * v));
          if (tw::axis_index() == 0) return y + tw::sum(tw::reshape(v, {4}));  // [5, 3] to [4]: throws
          return y;
        })(x);
      },
      MPI_COMM_WORLD);
  if (rank == 0) CHECK_THROWS_AS(backward(X), tw::error);
  else CHECK_THROWS_WITH(backward(X), Catch::Matchers::Contains("pmap: rank 0 of"));

  // The next pmap runs normally.
  const tensor<double> s = tw::pmap([](const tensor<double>& x) { return tw::psum(x); }, MPI_COMM_WORLD)(X);
  CHECK(max_rel_err(s, sum_over_ranks(identity)) <= tol);
}

TEST_CASE("pmap: ranks out of step raise on every rank") {
  const int rank = world_rank(), n = world_size();
  if (n < 2) return;
  // A collective under rank-dependent control flow: rank 0 calls psum, the others return.
  auto branchy = tw::pmap(
      [](const tensor<double>& x) {
        if (tw::axis_index() == 0) return tw::psum(x);
        return x;
      },
      MPI_COMM_WORLD);
  CHECK_THROWS_WITH(
      branchy(shard(rank)),
      Catch::Matchers::Contains("the ranks reached different steps: psum on some, the end of tw::pmap on others"));

  // Shapes that differ across ranks.
  auto ragged = tw::pmap([](const tensor<double>& x) { return tw::psum(x); }, MPI_COMM_WORLD);
  CHECK_THROWS_WITH(ragged(sample({static_cast<std::int64_t>(rank) + 1, 3})),
                    Catch::Matchers::Contains("psum (tw::pmap over") && Catch::Matchers::Contains("different shapes"));

  // f that catches the agreed failure and goes on: no more communication, pmap raises it.
  auto stubborn = tw::pmap(
      [](const tensor<double>& x) {
        try {
          if (tw::axis_index() == 1) throw std::runtime_error("rank 1 gives up");
          return tw::psum(x);
        } catch (const tw::error&) {
          return tw::psum(x * 2.0);  // raises at once: the axis has failed
        }
      },
      MPI_COMM_WORLD);
  if (rank == 1) CHECK_THROWS_WITH(stubborn(shard(rank)), "rank 1 gives up");
  else
    CHECK_THROWS_WITH(stubborn(shard(rank)),
                      Catch::Matchers::Contains("rank 1 of " + std::to_string(n) + " failed: rank 1 gives up"));
}

TEST_CASE("pmap: a collective's cotangent that differs across ranks is an error naming tw::pvary") {
  const int rank = world_rank(), n = world_size();
  if (n < 2) return;
  const tensor<double> X = shard(rank);
  // psum's output meets rank-dependent values (x itself) without pvary.
  auto wrong = tw::pmap(
      [](const tensor<double>& x) { return tw::grad([](auto v) { return tw::psum(tw::sum(tw::psum(v) * v)); })(x); },
      MPI_COMM_WORLD);
  CHECK_THROWS_WITH(wrong(X),
                    Catch::Matchers::Contains("differs across ranks") && Catch::Matchers::Contains("tw::pvary"));
  // With pvary: d/dx_r sum_r' <S, x_r'> = 2 S.
  auto right = tw::pmap(
      [](const tensor<double>& x) {
        return tw::grad([](auto v) { return tw::psum(tw::sum(tw::pvary(tw::psum(v)) * v)); })(x);
      },
      MPI_COMM_WORLD);
  CHECK(max_rel_err(right(X), 2.0 * sum_over_ranks(identity)) <= tol);
}

TEST_CASE("collectives outside pmap, and pmap before MPI_Init's communicator, are errors") {
  const tensor<double> X = shard(world_rank());
  CHECK_THROWS_WITH(tw::psum(X), Catch::Matchers::Contains("psum: no tw::pmap is running on this thread"));
  CHECK_THROWS_WITH(tw::axis_index(), Catch::Matchers::Contains("axis_index: no tw::pmap is running"));
  CHECK_THROWS_WITH(tw::pmap([](auto x) { return x; }, MPI_COMM_NULL)(X), Catch::Matchers::Contains("MPI_COMM_NULL"));
  // grad around pmap of an f that holds a value: the backward pass's collectives would run
  // after pmap returned.
  auto outside = [&X](const tensor<double>& x) {
    return tw::grad(
        [&X](auto v) { return tw::pmap([&X](auto u) { return tw::psum(tw::sum(u * X)); }, MPI_COMM_WORLD)(v); })(x);
  };
  CHECK_THROWS_WITH(outside(X), Catch::Matchers::Contains("take grad inside pmap"));
}
