// Scaling out per-example work, as a user's program: Lennard-Jones forces (B = 2^20, [B, 3]: per
// example, and as the gradient of the total energy, a backward pass through the vmap) and
// per-example Hessians on R^8 (B = 2^14), serial vmap against
//   - tw::vmap(f, tw::parallel(2)) on 2 threads (run without mpirun), and
//   - tw::pmap over the MPI ranks, each rank with B / ranks examples, plus a collective: the
//     psum of the summed result (the net force, the summed Hessian), or an all_gather of the
//     whole result onto every rank (run with mpirun -np 2).
// Wall time (the work is on several cores); the variants run interleaved, the ratio printed is the
// median of per-sample ratios serial / scaled. With mpirun it also measures MPI's latency and
// bandwidth with a ping-pong between ranks 0 and 1. Checks the numbers first (exits 1 if not).
//
//   g++ -std=c++20 -O2 -march=native -DNDEBUG -Iinclude -I. -Idsl -I/usr/include/eigen3
//       $(mpicxx --showme:compile) bench/user_tu/scale_out.cpp -lmvec -ltbb -pthread
//       $(mpicxx --showme:link) -o scale_out               (one line)
//   ./scale_out                                                   # threads
//   mpirun -np 2 --mca mpi_yield_when_idle 1 ./scale_out          # ranks (and ping-pong)
#include <tower/mpi.hpp>
#include <tower/parallel.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};
auto hessian_f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

namespace {

int rank = 0, ranks = 1;

double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/// Seconds per call of f, started and stopped together on every rank (barriers), over inner calls.
template <class F>
double timed(F& f, int inner) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = wall();
  for (int i = 0; i < inner; ++i) f();
  MPI_Barrier(MPI_COMM_WORLD);
  return (wall() - t0) / inner;
}

/// serial and each scaled variant interleaved; prints medians and the median ratio.
template <class S, class... V>
void compare(const char* name, int inner, int reps, S serial, V... scaled) {
  constexpr std::size_t n = sizeof...(V);
  std::vector<double> ts;
  std::vector<std::vector<double>> tv(n), ratio(n);
  for (int k = 0; k < reps; ++k) {
    const double s = timed(serial, inner);
    ts.push_back(s);
    std::size_t i = 0;
    ((tv[i].push_back(timed(scaled, inner)), ratio[i].push_back(s / tv[i].back()), ++i), ...);
  }
  if (rank == 0) {
    std::printf("%s: serial %.4g s", name, user_tu::median(ts));
    for (std::size_t i = 0; i < n; ++i)
      std::printf(", variant %zu %.4g s (%.2fx)", i + 1, user_tu::median(tv[i]), user_tu::median(ratio[i]));
    std::printf("\n");
  }
}

tw::tensor<double> rows(std::int64_t b, std::int64_t d, double lo, double hi, unsigned seed) {
  return tw::tensor<double>({b, d}, user_tu::uniform(static_cast<std::size_t>(b * d), lo, hi, seed));
}

void require_equal(const char* what, const tw::tensor<double>& a, const tw::tensor<double>& b, double tol) {
  if (a.shape() != b.shape()) {
    std::printf("%s: WRONG shape\n", what);
    std::exit(1);
  }
  user_tu::check(what, a.data(), b.data(), static_cast<std::size_t>(a.numel()), tol);
}

/// Serial against 2 threads for the per-example function vf (a tw::vmap).
template <class VF, class VP>
void threads(const char* name, const VF& vf, const VP& vp, const tw::tensor<double>& X, int inner) {
  tw::tensor<double> a, b;
  auto serial = [&] { a = vf(X); };
  auto parallel = [&] { b = vp(X); };
  serial();
  parallel();
  require_equal(name, b, a, 0.0);
  compare(name, inner, 31, serial, parallel);
}

/// Serial (rank 0, whole batch; the others wait) against pmap (each rank its shard) with a
/// psum of the summed result, and with an all_gather of the result.
template <class VF>
void processes(const char* name, const VF& vf, const tw::tensor<double>& X, int inner) {
  const std::int64_t B = X.shape()[0], n = B / ranks;
  const tw::tensor<double> shard = tw::narrow(X, 0, rank * n, n);
  tw::tensor<double> a, a_sum, b, b_sum, c;
  auto serial = [&] {
    if (rank != 0) return;
    a = vf(X);
    a_sum = tw::sum(a, 0);
  };
  auto reduce = tw::pmap(
      [&](const tw::tensor<double>& x) {
        auto r = vf(x);
        return std::make_tuple(r, tw::psum(tw::sum(r, 0)));
      },
      MPI_COMM_WORLD);
  auto gather = tw::pmap([&](const tw::tensor<double>& x) { return tw::all_gather(vf(x)); }, MPI_COMM_WORLD);
  auto with_psum = [&] { std::tie(b, b_sum) = reduce(shard); };
  auto with_gather = [&] { c = gather(shard); };
  serial();
  with_psum();
  with_gather();
  if (rank == 0) {
    require_equal(name, b, tw::narrow(a, 0, 0, n), 0.0);
    require_equal(name, b_sum, a_sum, 1e-12);  // summed in another order
    require_equal(name, tw::reshape(c, a.shape()), a, 0.0);
  }
  compare(name, inner, 31, serial, with_psum, with_gather);
}

/// Half the round trip of an n-byte message between ranks 0 and 1.
double ping_pong(std::size_t bytes, int reps) {
  std::vector<char> buf(bytes);
  std::vector<double> t;
  for (int k = 0; k < 5; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < reps; ++i) {
      if (rank == 0) {
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(buf.data(), static_cast<int>(bytes), MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), static_cast<int>(bytes), MPI_CHAR, 0, 0, MPI_COMM_WORLD);
      }
    }
    t.push_back((MPI_Wtime() - t0) / reps / 2);
  }
  return user_tu::median(t);
}

/// The ceiling two threads give on this machine: a hand-written loop over examples
/// (row(x, out) computes one example's result from its `in` numbers into `out` numbers), plain
/// against the same loop split over 2 threads by oneTBB.
template <class Row>
void hand_written_ceiling(const char* name, const tw::tensor<double>& X, std::int64_t in, std::int64_t out, Row row,
                          int inner) {
  const std::int64_t B = X.shape()[0];
  const double* x = X.data();
  std::vector<double> a(static_cast<std::size_t>(out * B)), b(a.size());
  auto rows = [&](double* r, std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i) row(x + in * i, r + out * i);
  };
  tbb::task_arena arena(2);
  auto serial = [&] { rows(a.data(), 0, B); };
  auto parallel = [&] {
    arena.execute([&] {
      tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, B, std::max<std::int64_t>(1, B / 64)),
                        [&](const tbb::blocked_range<std::int64_t>& g) { rows(b.data(), g.begin(), g.end()); });
    });
  };
  serial();
  parallel();
  user_tu::check(name, b.data(), a.data(), a.size(), 0.0);
  compare(name, inner, 31, serial, parallel);
}

/// Hand-written Lennard-Jones gradient and Hessian of hessian_f (as bench/user_tu/hessian_r8.cpp).
void lj_row(const double* r, double* g) {
  const double s = 1.0 / (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]), s2 = s * s;
  const double c = 4.0 * (6.0 * s2 * s2 * s - 3.0 * s2) * -2.0 * s2;  // dE/ds ds/dr = c r
  for (int k = 0; k < 3; ++k) g[k] = c * r[k];
}
void hessian_row(const double* x, double* h) {
  constexpr int n = 8;
  double q = 1.0;
  for (int i = 0; i < n; ++i) q += x[i] * x[i];
  const double a = 2.0 / q, c = -4.0 / (q * q);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) h[i * n + j] = c * x[i] * x[j];
    h[i * n + i] += a - std::sin(x[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  const tw::tensor<double> R = rows(std::int64_t{1} << 20, 3, 0.7, 1.7, 1);
  const tw::tensor<double> P = rows(std::int64_t{1} << 14, 8, -1, 1, 2);
  const tw::tensor<double> R16 = rows(16, 3, 0.7, 1.7, 3);
  const auto forces = tw::vmap(tw::grad(energy));
  const auto hessians = tw::vmap(tw::hessian(hessian_f));
  if (ranks == 1) {
    hand_written_ceiling("hand-written lennard_jones_2^20 threads (variant 1: tbb::parallel_for on 2 threads)", R, 3, 3,
                         lj_row, 5);
    hand_written_ceiling("hand-written hessian_r8_2^14 threads (variant 1: tbb::parallel_for on 2 threads)", P, 8, 64,
                         hessian_row, 5);
    threads("lennard_jones_2^20 threads (variant 1: parallel(2))", forces, tw::vmap(tw::grad(energy), tw::parallel(2)),
            R, 5);
    threads("hessian_r8_2^14 threads (variant 1: parallel(2))", hessians,
            tw::vmap(tw::hessian(hessian_f), tw::parallel(2)), P, 5);
    threads("hessian_r8_2^14 threads (variant 1: parallel)", hessians, tw::vmap(tw::hessian(hessian_f), tw::parallel),
            P, 5);
    threads("lennard_jones_16 threads (variant 1: parallel(2))", forces, tw::vmap(tw::grad(energy), tw::parallel(2)),
            R16, 20000);
    // The backward pass through a parallel vmap: forces as the gradient of the total energy.
    auto total = [](auto r) { return tw::sum(tw::vmap(energy)(r)); };
    auto total_parallel = [](auto r) { return tw::sum(tw::vmap(energy, tw::parallel(2))(r)); };
    threads("lennard_jones_2^20 grad of the total (variant 1: parallel(2))", tw::grad(total), tw::grad(total_parallel),
            R, 5);
  } else {
    processes("lennard_jones_2^20 ranks (variant 1: pmap + psum, 2: pmap + all_gather)", forces, R, 5);
    processes("hessian_r8_2^14 ranks (variant 1: pmap + psum, 2: pmap + all_gather)", hessians, P, 5);
    const double lat = ping_pong(8, 10000), big = ping_pong(std::size_t{8} << 20, 20);
    if (rank == 0)
      std::printf("ping-pong: latency %.3g us (8 bytes), bandwidth %.3g GB/s (8 MiB: %.3g ms one way)\n", lat * 1e6,
                  static_cast<double>(std::size_t{8} << 20) / big / 1e9, big * 1e3);
  }
  MPI_Finalize();
}
