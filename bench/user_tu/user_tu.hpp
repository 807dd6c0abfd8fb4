#pragma once
// Timing for the user-style benchmarks: each .cpp here is a user's program (one workload, one
// call site of tower, the hand-written code in the same binary). This header only times: the
// two variants run interleaved, each sample in thread CPU time, and the ratio reported is the
// median of the per-sample ratios (robust to a shared machine).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace user_tu {

inline double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

template <class F>
double sample(F& f, int inner) {
  const double t0 = cpu_now();
  for (int i = 0; i < inner; ++i) f();
  return (cpu_now() - t0) / inner;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Runs hand and tower interleaved (inner calls per sample, reps samples each) and prints
/// `name: tower <t> s, hand <t> s, <ratio>x` (ratio = tower / hand).
/// With USER_TU_PROFILE=n in the environment, runs tower n times and nothing else (a steady loop
/// for `perf record`); otherwise the interleaved comparison.
template <class Hand, class Tower>
void compare(const char* name, Hand hand, Tower tower, int inner = 1, int reps = 15) {
  if (const char* n = std::getenv("USER_TU_PROFILE")) {
    for (int i = std::atoi(n); i > 0; --i) tower();
    return;
  }
  // Each sample at least 2 ms of each variant: shorter ones (logistic d = 16 is 0.25 ms a call)
  // let one interrupt or page fault decide a sample's ratio.
  const double shortest = std::min(sample(hand, 1), sample(tower, 1));
  inner = std::max(inner, static_cast<int>(std::ceil(2e-3 / std::max(shortest, 1e-9))));
  std::vector<double> th, tt, r;
  for (int k = 0; k < reps; ++k) {
    double a, b;
    if (k % 2) {
      a = sample(hand, inner);
      b = sample(tower, inner);
    } else {
      b = sample(tower, inner);
      a = sample(hand, inner);
    }
    th.push_back(a);
    tt.push_back(b);
    r.push_back(b / a);
  }
  std::printf("%s: tower %.4g s, hand %.4g s, %.2fx\n", name, median(tt), median(th), median(r));
}

/// Exits with status 1 when the largest relative difference of n numbers exceeds tol.
inline void check(const char* name, const double* got, const double* want, std::size_t n, double tol = 1e-10) {
  double err = 0;
  for (std::size_t i = 0; i < n; ++i) err = std::max(err, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
  if (!(err <= tol)) {
    std::printf("%s: WRONG, max relative difference %.3g\n", name, err);
    std::exit(1);
  }
}

inline std::vector<double> uniform(std::size_t n, double lo, double hi, unsigned seed) {
  std::vector<double> v(n);
  unsigned s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * (s >> 8) / double(1u << 24);
  }
  return v;
}

}  // namespace user_tu
