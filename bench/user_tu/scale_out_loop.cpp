// Per-example Hessians on R^8 (B = 2^14) in a steady loop of 2,000 calls, one variant per process,
// timed as a whole: the serial vmap against vmap(..., tw::parallel(2)); and the serial vmap plus
// the sum of its Hessians (rank 0 alone) against tw::pmap over the ranks with a psum of each
// rank's summed Hessians. scale_out.cpp interleaves the variants in samples of 5 calls,
// where each call's serial part (and, under mpirun, the barriers) counts in every sample; this
// shows the steady state.
//
//   g++ -std=c++20 -O2 -march=native -DNDEBUG -Iinclude -I. -Idsl -I/usr/include/eigen3
//       $(mpicxx --showme:compile) bench/user_tu/scale_out_loop.cpp -lmvec -ltbb -pthread
//       $(mpicxx --showme:link) -o scale_out_loop               (one line)
//   ./scale_out_loop serial; ./scale_out_loop parallel
//   mpirun -np 2 --mca mpi_yield_when_idle 1 ./scale_out_loop summed   (rank 0 alone works)
//   mpirun -np 2 --mca mpi_yield_when_idle 1 ./scale_out_loop pmap
#include <tower/mpi.hpp>
#include <tower/parallel.hpp>

#include <cstdio>
#include <string>

#include "bench/user_tu/user_tu.hpp"
namespace tw = tower;

auto hessian_f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::string variant = argc > 1 ? argv[1] : "serial";
  const std::int64_t B = std::int64_t{1} << 14, n = B / ranks;
  const std::vector<double> v = user_tu::uniform(static_cast<std::size_t>(B * 8), -1, 1, 2);
  const tw::tensor<double> P({B, 8}, v), shard = tw::narrow(P, 0, rank * n, n);
  const auto serial = tw::vmap(tw::hessian(hessian_f));
  const auto parallel = tw::vmap(tw::hessian(hessian_f), tw::parallel(2));
  auto summed = tw::pmap([&](const tw::tensor<double>& x) { return tw::psum(tw::sum(serial(x), 0)); }, MPI_COMM_WORLD);
  const tw::tensor<double> want = tw::sum(serial(P), 0);
  double check = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int k = 0; k < 2000; ++k) {
    tw::tensor<double> s;
    if (variant == "pmap") s = summed(shard);
    else if (rank != 0) continue;
    else if (variant == "summed") s = tw::sum(serial(P), 0);
    else if (k == 0) s = tw::sum(variant == "parallel" ? parallel(P) : serial(P), 0);  // checked once
    else {
      (void)(variant == "parallel" ? parallel(P) : serial(P));
      continue;
    }
    check = std::max(check, std::abs(s.data()[k % 64] - want.data()[k % 64]) / (1 + std::abs(want.data()[k % 64])));
  }
  const double t = MPI_Wtime() - t0;
  if (rank == 0)
    std::printf("hessian_r8_2^14 %s on %d rank(s): %.3f s for 2000 calls (max rel. deviation %.1e)\n", variant.c_str(),
                ranks, t, check);
  MPI_Finalize();
  return check < 1e-12 ? 0 : 1;
}
