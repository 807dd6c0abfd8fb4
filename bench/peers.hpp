#pragma once
// Peer AD libraries the benchmarks compare against, each present when its Debian package is
// (scripts/bootstrap-bench installs them): TOWER_BENCH_HAVE_{EIGEN_AD,CERES,SACADO,ADOLC}.
// Small adapters give forward-mode types one spelling: variable<AD, N>(v, j) seeds direction j,
// derivative<N>(y, j) reads it back.
#include <array>
#include <cstddef>

#if __has_include(<unsupported/Eigen/AutoDiff>)
#include <Eigen/Core>
#include <unsupported/Eigen/AutoDiff>
#define TOWER_BENCH_HAVE_EIGEN_AD 1
#else
#define TOWER_BENCH_HAVE_EIGEN_AD 0
#endif

#if __has_include(<ceres/jet.h>)
#include <ceres/jet.h>
#define TOWER_BENCH_HAVE_CERES 1
#else
#define TOWER_BENCH_HAVE_CERES 0
#endif

#if __has_include(<Sacado_Fad_SFad.hpp>)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic ignored "-Wclass-memaccess"
#include <Sacado_Fad_SFad.hpp>
#include <Sacado_ELRCacheFad_SFad.hpp>
#pragma GCC diagnostic pop
#define TOWER_BENCH_HAVE_SACADO 1
#else
#define TOWER_BENCH_HAVE_SACADO 0
#endif

#if __has_include(<adolc/adolc.h>)
#include <adolc/adolc.h>
#define TOWER_BENCH_HAVE_ADOLC 1
#else
#define TOWER_BENCH_HAVE_ADOLC 0
#endif

namespace peers {

#if TOWER_BENCH_HAVE_EIGEN_AD
template <int N>
using eigen_ad = Eigen::AutoDiffScalar<Eigen::Matrix<double, N, 1>>;
#endif

template <class AD, int N>
AD variable(double v, int j) {
#if TOWER_BENCH_HAVE_EIGEN_AD
  if constexpr (std::is_same_v<AD, eigen_ad<N>>) return AD(v, N, j);
#endif
#if TOWER_BENCH_HAVE_CERES
  if constexpr (std::is_same_v<AD, ceres::Jet<double, N>>) return AD(v, j);
#endif
#if TOWER_BENCH_HAVE_SACADO
  if constexpr (std::is_same_v<AD, Sacado::Fad::SFad<double, N>>) return AD(N, j, v);
  if constexpr (std::is_same_v<AD, Sacado::ELRCacheFad::SFad<double, N>>) return AD(N, j, v);
#endif
}

template <int N, class AD>
double derivative(const AD& y, int j) {
#if TOWER_BENCH_HAVE_EIGEN_AD
  if constexpr (std::is_same_v<AD, eigen_ad<N>>) return y.derivatives()[j];
#endif
#if TOWER_BENCH_HAVE_CERES
  if constexpr (std::is_same_v<AD, ceres::Jet<double, N>>) return y.v[j];
#endif
#if TOWER_BENCH_HAVE_SACADO
  if constexpr (std::is_same_v<AD, Sacado::Fad::SFad<double, N>>) return y.dx(j);
  if constexpr (std::is_same_v<AD, Sacado::ELRCacheFad::SFad<double, N>>) return y.dx(j);
#endif
}

/// The gradient of f: R^N -> R at x by forward mode with N directions, into g.
template <class AD, int N, class F>
void forward_gradient(const F& f, const double* x, double* g) {
  std::array<AD, N> v;
  for (int j = 0; j < N; ++j) v[static_cast<std::size_t>(j)] = variable<AD, N>(x[j], j);
  const AD y = f(v);
  for (int j = 0; j < N; ++j) g[j] = derivative<N>(y, j);
}

#if TOWER_BENCH_HAVE_ADOLC
/// Records f: R^N -> R on ADOL-C tape `tag` at x (the tape is re-used by the drivers).
template <int N, class F>
void adolc_tape(short tag, const F& f, const double* x) {
  trace_on(tag);
  std::array<adouble, N> v;
  for (int j = 0; j < N; ++j) v[static_cast<std::size_t>(j)] <<= x[j];
  adouble y = f(v);
  double out;
  y >>= out;
  trace_off();
}
#endif

}  // namespace peers
