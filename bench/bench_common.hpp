#pragma once
// Shared pieces of tower's benchmarks (bench/): deterministic data, a do-not-optimise sink, and
// a main() that prints, after Google Benchmark's own table, one summary line per workload with
// each variant's median CPU time and its ratio to the hand-written code of the same binary.
//
// Benchmarks are named "<workload>/<variant>"; the variant "hand" is the reference. Run with
// --benchmark_repetitions=N to get medians (the summary uses the median aggregate when present,
// the single run otherwise).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tower::bench {

/// Deterministic pseudo-random numbers in [lo, hi) (splitmix64), the same on every run.
inline std::vector<double> uniform(std::size_t n, double lo, double hi, std::uint64_t seed) {
  std::vector<double> v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    x = lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
  }
  return v;
}

inline double max_abs_diff(const double* a, const double* b, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

/// Aborts the benchmark run when a variant's result differs from the hand-written one.
inline void check_close(const char* what, const double* a, const double* b, std::size_t n, double tol = 1e-9) {
  const double d = max_abs_diff(a, b, n);
  double scale = 1;
  for (std::size_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(b[i]));
  if (!(d <= tol * scale)) {
    std::fprintf(stderr, "bench: %s differs from the hand-written result by %g\n", what, d);
    std::exit(1);
  }
}

/// Console output plus a per-workload summary: median time and ratio to "<workload>/hand".
class summary_reporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      const bool agg = r.run_type == Run::RT_Aggregate;
      if (agg && r.aggregate_name != "median") continue;
      const std::string name = r.run_name.function_name;
      const auto slash = name.find('/');
      if (slash == std::string::npos) continue;
      auto& e = table_[name.substr(0, slash)][name.substr(slash + 1)];
      if (agg || !e.from_median) e = {r.GetAdjustedCPUTime(), agg, benchmark::GetTimeUnitString(r.time_unit)};
    }
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nsummary (median CPU time: the machine is shared; ratio = variant / hand-written)\n");
    for (const auto& [workload, variants] : table_) {
      const auto hand = variants.find("hand");
      std::printf("  %s\n", workload.c_str());
      for (const auto& [variant, e] : variants) {
        std::printf("    %-22s %12.4g %-3s", variant.c_str(), e.time, e.unit.c_str());
        if (hand != variants.end() && hand->second.time > 0) std::printf("  %8.2fx", e.time / hand->second.time);
        std::printf("\n");
      }
    }
  }

 private:
  struct entry {
    double time = 0;
    bool from_median = false;
    std::string unit;
  };
  std::map<std::string, std::map<std::string, entry>> table_;
};

inline int run_main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  summary_reporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace tower::bench

#define TOWER_BENCH_MAIN() \
  int main(int argc, char** argv) { return ::tower::bench::run_main(argc, argv); }
