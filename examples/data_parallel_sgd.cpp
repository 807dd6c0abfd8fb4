// Data-parallel SGD with tw::pmap: each MPI rank holds a shard of the data set, takes the
// gradient of the global loss (the pmean of the ranks' losses) and applies the same update, so
// the weights stay equal on every rank. Checks the gradient and the weights after a few steps
// against single-process full-batch SGD, and the per-example gradients (vmap(grad) inside
// pmap) against the single-process ones.
//
//   mpirun -np 2 bazel-bin/examples/data_parallel_sgd       (Bazel: //examples:data_parallel_sgd_test)
#include <cmath>
#include <cstdio>
#include <functional>

#include <tower/mpi.hpp>

namespace tw = tower;

namespace {

// Logistic regression: the mean over a batch of softplus(-y <w, x>).
auto loss = [](auto w, auto X, auto y) { return tw::mean(tw::softplus(-y * tw::matmul(X, w))); };
auto example_loss = [](auto w, auto x, auto y) { return tw::softplus(-y * tw::dot(w, x)); };

double max_abs_diff(const tw::tensor<double>& a, const tw::tensor<double>& b) {
  double e = a.shape() == b.shape() ? 0.0 : INFINITY;
  for (std::int64_t i = 0; e < INFINITY && i < a.numel(); ++i) e = std::max(e, std::abs(a.data()[i] - b.data()[i]));
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  // The data set (every rank can make all of it; it keeps only its shard).
  const std::int64_t N = 4096, d = 8;
  if (N % ranks != 0) {
    if (rank == 0)
      std::fprintf(stderr, "data_parallel_sgd: %lld examples do not split over %d ranks\n", static_cast<long long>(N),
                   ranks);
    MPI_Finalize();
    return 1;
  }
  const tw::tensor<double> X = tw::randn<double>({N, d}, 1);
  const tw::tensor<double> y = tw::sign(tw::matmul(X, tw::randn<double>({d}, 2)) + 0.3 * tw::randn<double>({N}, 3));
  const std::int64_t n = N / ranks;
  const tw::tensor<double> Xr = tw::narrow(X, 0, rank * n, n), yr = tw::narrow(y, 0, rank * n, n);

  // One step's gradient, on each rank. pvary(w): w is the same on every rank, its gradient
  // the sum of the ranks' shares (the ranks' losses are averaged by pmean).
  auto global_grad = tw::pmap(
      [](const tw::tensor<double>& w, const tw::tensor<double>& Xs, const tw::tensor<double>& ys) {
        return tw::grad([&](auto v) { return tw::pmean(loss(tw::pvary(v), Xs, ys)); })(w);
      },
      MPI_COMM_WORLD);
  // The same on the runtime path, written as JAX's pmap idiom: the pmean of the local gradients.
  using tw::dyn::value;
  std::function<value(value, value, value)> erased = [](value w, value Xs, value ys) { return loss(w, Xs, ys); };
  auto global_grad_rt =
      tw::pmap([&](value w, value Xs, value ys) { return tw::pmean(tw::grad(erased)(w, Xs, ys)); }, MPI_COMM_WORLD);

  // Per-example gradients of the shard, gathered: [ranks, n, d] on every rank.
  auto per_example = tw::pmap(
      [](const tw::tensor<double>& w, const tw::tensor<double>& Xs, const tw::tensor<double>& ys) {
        return tw::all_gather(tw::vmap(tw::grad(example_loss), tw::in_dims(tw::none, 0, 0))(w, Xs, ys));
      },
      MPI_COMM_WORLD);

  const double lr = 0.5;
  tw::tensor<double> w = tw::zeros<double>({d}), w_ref = w;
  double grad_err = 0, grad_rt_err = 0, weight_err = 0;
  for (int step = 0; step < 10; ++step) {
    const tw::tensor<double> g = global_grad(w, Xr, yr);
    const tw::tensor<double> g_rt = global_grad_rt(value(w), value(Xr), value(yr)).to_tensor();
    const tw::tensor<double> g_ref = tw::grad(loss)(w_ref, X, y);  // single process, full batch
    grad_err = std::max(grad_err, max_abs_diff(g, g_ref));
    grad_rt_err = std::max(grad_rt_err, max_abs_diff(g_rt, g_ref));
    w = w - lr * g;
    w_ref = w_ref - lr * g_ref;
    weight_err = std::max(weight_err, max_abs_diff(w, w_ref));
  }
  const tw::tensor<double> pe = per_example(w, Xr, yr);
  const tw::tensor<double> pe_ref = tw::vmap(tw::grad(example_loss), tw::in_dims(tw::none, 0, 0))(w, X, y);
  const double pe_err = max_abs_diff(tw::reshape(pe, {N, d}), pe_ref);

  // The mean over the ranks is summed in another order than the full batch: a few ulps.
  const bool ok = grad_err <= 1e-12 && grad_rt_err <= 1e-12 && weight_err <= 1e-12 && pe_err == 0.0;
  const double final_loss = loss(w, X, y).item();
  if (rank == 0)
    std::printf(
        "data-parallel SGD on %d ranks, %lld examples of %lld features, 10 steps: loss %.6f\n"
        "max |gradient - full-batch gradient|: %.3g (static), %.3g (runtime); max |w - w_ref|: %.3g; per-example "
        "gradients: %.3g\n",
        ranks, static_cast<long long>(N), static_cast<long long>(d), final_loss, grad_err, grad_rt_err, weight_err,
        pe_err);
  if (!ok) std::fprintf(stderr, "data_parallel_sgd: rank %d differs from the single-process run\n", rank);
  MPI_Finalize();
  return ok ? 0 : 1;
}
