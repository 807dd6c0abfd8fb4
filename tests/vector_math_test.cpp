// kernels/vector_math.hpp: libmvec's functions on a tensor give every element the same bits
// whatever its position (full packets, padded tails, in place), stay within 4 ulp of <cmath>,
// keep IEEE special values, and tower's ops on numbers, tensors, fixed values and under vmap's two
// forms agree to that accuracy.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <tower/tower.hpp>

namespace tw = tower;
namespace vm = tower::kernels::vmath;

namespace {

template <class T>
std::vector<T> samples(std::size_t n, double lo, double hi) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<T>(lo + (hi - lo) * (0.5 + 0.5 * std::sin(1.3 * static_cast<double>(i) + 0.2)));
  return v;
}

/// Numbers per libmvec packet (1 when tower uses <cmath> throughout).
template <class T>
constexpr std::int64_t packet_lanes() {
#if TOWER_HAVE_LIBMVEC
  return vm::lanes<T>;
#else
  return 1;
#endif
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

/// |a - b| in units in the last place of b.
template <class T>
double ulps(T a, T b) {
  if (a == b) return 0;
  const T step = std::nextafter(b, std::numeric_limits<T>::infinity()) - b;
  return std::abs(static_cast<double>(a) - static_cast<double>(b)) / static_cast<double>(step);
}

/// Fn over [lo, hi]: apply() on every length 0..3 packets + 3 (all tail lengths) matches
/// packet_call() bit for bit, and is within max_ulps of <cmath>.
template <class Fn, class T>
void check_function(const char* name, double lo, double hi, double max_ulps) {
  INFO(name << (std::is_same_v<T, float> ? " (float)" : " (double)"));
  const std::vector<T> x = samples<T>(1000, lo, hi);
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, ulps(vm::packet_call<Fn>(x[i]), Fn::scalar(x[i])));
  }
  CHECK(worst <= max_ulps);
  for (std::int64_t n = 0; n <= 3 * 16 + 3; ++n) {
    std::vector<T> out(static_cast<std::size_t>(n) + 1, T(-7));
    vm::apply<Fn>(x.data(), out.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      const T xi = x[static_cast<std::size_t>(i)];
      // Fewer numbers than a packet take <cmath>, like numbers; more take libmvec, tails padded.
      REQUIRE(same_bits(out[static_cast<std::size_t>(i)],
                        n < packet_lanes<T>() ? Fn::scalar(xi) : vm::packet_call<Fn>(xi)));
    }
    REQUIRE(out[static_cast<std::size_t>(n)] == T(-7));  // nothing written past n
  }
  REQUIRE(packet_lanes<T>() <= 16);
  std::vector<T> in_place(x.begin(), x.begin() + 37);
  vm::apply<Fn>(in_place.data(), in_place.data(), 37);
  for (std::size_t i = 0; i < 37; ++i) REQUIRE(same_bits(in_place[i], vm::packet_call<Fn>(x[i])));
}

template <class T>
void check_all() {
  check_function<vm::exp_fn, T>("exp", -20, 20, 4);
  check_function<vm::expm1_fn, T>("expm1", -3, 3, 4);
  check_function<vm::log_fn, T>("log", 1e-3, 1e3, 4);
  check_function<vm::log1p_fn, T>("log1p", -0.9, 10, 4);
  check_function<vm::sin_fn, T>("sin", -10, 10, 4);
  check_function<vm::cos_fn, T>("cos", -10, 10, 4);
  check_function<vm::tan_fn, T>("tan", -1.5, 1.5, 4);
  check_function<vm::tanh_fn, T>("tanh", -5, 5, 4);
  check_function<vm::sinh_fn, T>("sinh", -5, 5, 4);
  check_function<vm::cosh_fn, T>("cosh", -5, 5, 4);
  check_function<vm::asin_fn, T>("asin", -0.99, 0.99, 4);
  check_function<vm::acos_fn, T>("acos", -0.99, 0.99, 4);
  check_function<vm::atan_fn, T>("atan", -10, 10, 4);
  check_function<vm::erf_fn, T>("erf", -3, 3, 4);
}

}  // namespace

TEST_CASE("vector math: every element of a tensor takes the same routine, within 4 ulp of <cmath>") {
  check_all<double>();
  check_all<float>();
}

TEST_CASE("vector math: IEEE special values and arguments far out") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(std::isnan(vm::packet_call<vm::sin_fn>(nan)));
  CHECK(std::isnan(vm::packet_call<vm::sin_fn>(inf)));
  CHECK(std::isnan(vm::packet_call<vm::log_fn>(-1.0)));
  CHECK(vm::packet_call<vm::log_fn>(0.0) == -inf);
  CHECK(vm::packet_call<vm::exp_fn>(1000.0) == inf);
  CHECK(vm::packet_call<vm::exp_fn>(-1000.0) == 0.0);
  CHECK(vm::packet_call<vm::tanh_fn>(inf) == 1.0);
  CHECK(vm::packet_call<vm::tanh_fn>(-40.0) == -1.0);
  CHECK(std::signbit(vm::packet_call<vm::sin_fn>(-0.0)));
  CHECK(vm::packet_call<vm::expm1_fn>(1e-300) == 1e-300);
  CHECK(vm::packet_call<vm::sin_fn>(1e22) == Approx(std::sin(1e22)).margin(1e-15));  // Payne-Hanek range
  CHECK(vm::packet_call<vm::cos_fn>(1e300) == Approx(std::cos(1e300)).margin(1e-15));
  // Special lanes next to ordinary ones do not disturb them.
  const std::vector<double> x{0.5, nan, inf, -inf, 1e22, -0.0, 3.0, 0.25, 700.0, -2.0, 1e-310};
  std::vector<double> y(x.size());
  vm::apply<vm::sin_fn>(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(y[i], vm::packet_call<vm::sin_fn>(x[i])));
  REQUIRE(y[0] == Approx(std::sin(0.5)).epsilon(1e-15));
  vm::apply<vm::exp_fn>(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(same_bits(y[i], vm::packet_call<vm::exp_fn>(x[i])));
  CHECK(y[8] == Approx(std::exp(700.0)).epsilon(1e-15));
}

TEST_CASE("vector math: tower's ops on numbers, tensors, fixed values and vmap agree") {
  const std::vector<double> v = samples<double>(45, -1.2, 1.2);
  const tw::tensor<double> X({45}, v);
  auto f = [](auto x) {
    return tw::tanh(tw::sin(x) * 2.0) + tw::exp(x) * tw::log1p(x + 1.5) + tw::atan(x) + tw::erf(x);
  };
  const tw::tensor<double> on_tensor = f(X);
  const tw::tensor<double> g_batched = tw::vmap(tw::grad(f), tw::strategy::batched)(X);
  const tw::tensor<double> g_fused = tw::vmap(tw::grad(f), tw::strategy::fused)(X);
  for (std::int64_t i = 0; i < 45; ++i) {
    const double x = v[static_cast<std::size_t>(i)];
    // A tensor's transcendentals come from libmvec, a number's from <cmath>: within 4 ulp each.
    REQUIRE(on_tensor(i) == Approx(f(x)).epsilon(1e-14));
    const double g = tw::grad(f)(x);
    REQUIRE(g_batched(i) == Approx(g).epsilon(1e-14));
    // Both on numbers; the last bit may still move: -march=native contracts a * b + c into FMAs
    // differently in different code, and the per-example form runs grad without a tape
    // (scalar_dual), summing a product rule's terms in another order.
    REQUIRE(g_fused(i) == Approx(g).epsilon(1e-15));
    // d/dx by hand: 2 cos x (1 - tanh^2) + e^x log1p(x + 1.5) + e^x / (x + 2.5) + 1 / (1 + x^2) + 2/sqrt(pi) e^{-x^2}
    const double t = std::tanh(2 * std::sin(x));
    REQUIRE(g == Approx(2 * std::cos(x) * (1 - t * t) + std::exp(x) * std::log1p(x + 1.5) + std::exp(x) / (x + 2.5) +
                        1 / (1 + x * x) + 1.1283791670955126 * std::exp(-x * x))
                     .epsilon(1e-13));
  }
  const tw::fixed<double, 5> xf{v[0], v[1], v[2], v[3], v[4]};
  // A fixed vector takes the routine a tensor of its numbers takes (libmvec from one packet on).
  const auto yf = tw::sin(xf);
  const tw::tensor<double> yt = tw::sin(tw::to_tensor(xf));
  for (int i = 0; i < 5; ++i) {
    REQUIRE(same_bits(yf[i], yt(i)));
    REQUIRE(ulps(yf[i], std::sin(v[static_cast<std::size_t>(i)])) <= 4);
  }
  const tw::tensor<float> Xf({37}, samples<float>(37, -3, 3));  // more than one packet of floats
  const tw::tensor<float> Yf = tw::cos(Xf);
  for (std::int64_t i = 0; i < 37; ++i) {
    REQUIRE(same_bits(Yf(i), vm::packet_call<vm::cos_fn>(Xf(i))));
    REQUIRE(ulps(Yf(i), std::cos(Xf(i))) <= 4);
  }
}
