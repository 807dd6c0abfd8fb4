#pragma once
// Transcendental functions (exp, log, sin, tanh, ...) for tower's pointwise kernels, from glibc's
// vector math library libmvec. g++ and clang++ link it without being asked: on x86-64 glibc,
// libm.so is a linker script that adds libmvec.so as needed (Bazel's //:tower also says -lmvec).
// Define TOWER_NO_LIBMVEC to use <cmath> everywhere.
//
//   double y = tw::kernels::vmath::sin_fn::scalar(x);                               // one number: <cmath>
//   tw::kernels::vmath::apply<tw::kernels::vmath::sin_fn>(in, out, n);             // n numbers: libmvec
//
// Why: glibc's scalar sin or tanh costs 7-10 ns per double and cannot be vectorised; libmvec
// computes 8 doubles in about 6 ns (AVX-512), which makes the tanh of an MLP layer or the sin of a
// Hessian 5-11x cheaper. libmvec is accurate to 4 ulp (glibc's scalar functions to ~1 ulp).
//
// One number takes <cmath>: libmvec on a single lane is slower than glibc's scalar code (11.5 ns
// against 6.8 ns for exp through the AVX-512 entry point), and vmap's per-example loops call
// transcendentals one number at a time. So a tensor's sin and a number's sin may differ within
// 4 ulp, as PyTorch's vectorised and scalar kernels do. A tensor's elements all take the same
// routine, whatever their position (a tail shorter than a packet is padded); a tensor with fewer
// numbers than one packet (8 doubles with AVX-512) takes <cmath>, as numbers do. A tw::fixed
// vector of numbers is a small tensor here: the same routine as a tensor of its numbers.
// The vector width is the widest the build enables (AVX-512, AVX2, else SSE2): every translation
// unit of a program must be compiled for the same -march, as with Eigen.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if !defined(TOWER_NO_LIBMVEC) && defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define TOWER_HAVE_LIBMVEC 1
#include <immintrin.h>
#else
#define TOWER_HAVE_LIBMVEC 0
#endif

// The functions libmvec has (glibc >= 2.35), in double and float (suffix f).
#define TOWER_VMATH_FUNCTIONS(X) \
  X(exp) X(expm1) X(log) X(log1p) X(sin) X(cos) X(tan) X(tanh) X(sinh) X(cosh) X(asin) X(acos) X(atan) X(erf)

#if TOWER_HAVE_LIBMVEC
// The vector function ABI's names: _ZGV<isa>N<lanes>v_<name>.
#if defined(__AVX512F__)
#define TOWER_VMATH_DECLARE(F)              \
  extern "C" __m512d _ZGVeN8v_##F(__m512d); \
  extern "C" __m512 _ZGVeN16v_##F##f(__m512);
#elif defined(__AVX2__)
#define TOWER_VMATH_DECLARE(F)              \
  extern "C" __m256d _ZGVdN4v_##F(__m256d); \
  extern "C" __m256 _ZGVdN8v_##F##f(__m256);
#else
#define TOWER_VMATH_DECLARE(F)              \
  extern "C" __m128d _ZGVbN2v_##F(__m128d); \
  extern "C" __m128 _ZGVbN4v_##F##f(__m128);
#endif
TOWER_VMATH_FUNCTIONS(TOWER_VMATH_DECLARE)
#undef TOWER_VMATH_DECLARE
#endif

namespace tower::kernels::vmath {

#if TOWER_HAVE_LIBMVEC
#if defined(__AVX512F__)
using packet_d = __m512d;
using packet_f = __m512;
#define TOWER_VMATH_D(F) _ZGVeN8v_##F
#define TOWER_VMATH_F(F) _ZGVeN16v_##F##f
#elif defined(__AVX2__)
using packet_d = __m256d;
using packet_f = __m256;
#define TOWER_VMATH_D(F) _ZGVdN4v_##F
#define TOWER_VMATH_F(F) _ZGVdN8v_##F##f
#else
using packet_d = __m128d;
using packet_f = __m128;
#define TOWER_VMATH_D(F) _ZGVbN2v_##F
#define TOWER_VMATH_F(F) _ZGVbN4v_##F##f
#endif
// A specialisation, not std::conditional_t: a template argument would drop the vector attribute.
template <class T>
struct packet_of;
template <>
struct packet_of<double> {
  using type = packet_d;
};
template <>
struct packet_of<float> {
  using type = packet_f;
};
template <class T>
using packet_t = typename packet_of<T>::type;
/// Numbers of type T in one packet.
template <class T>
inline constexpr std::int64_t lanes = sizeof(packet_t<T>) / sizeof(T);
#endif

// One tag per function: its <cmath> form, and its libmvec forms when available.
#if TOWER_HAVE_LIBMVEC
#define TOWER_VMATH_TAG(F)                                             \
  struct F##_fn {                                                      \
    template <class T>                                                 \
    static T scalar(T x) {                                             \
      return std::F(x);                                                \
    }                                                                  \
    static packet_d packet(packet_d x) { return TOWER_VMATH_D(F)(x); } \
    static packet_f packet(packet_f x) { return TOWER_VMATH_F(F)(x); } \
  };
#else
#define TOWER_VMATH_TAG(F) \
  struct F##_fn {          \
    template <class T>     \
    static T scalar(T x) { \
      return std::F(x);    \
    }                      \
  };
#endif
TOWER_VMATH_FUNCTIONS(TOWER_VMATH_TAG)
#undef TOWER_VMATH_TAG

/// True when Fn on T runs through libmvec.
template <class T>
inline constexpr bool vectorized_v = TOWER_HAVE_LIBMVEC && (std::is_same_v<T, double> || std::is_same_v<T, float>);

#if TOWER_HAVE_LIBMVEC
namespace detail {
template <class T>
packet_t<T> load(const T* p) {
  packet_t<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void store(T* p, const packet_t<T>& v) {
  std::memcpy(p, &v, sizeof v);
}
}  // namespace detail
#endif

/// Fn of one number by the routine apply() uses for tensors (lane 0 of a broadcast packet).
template <class Fn, class T>
T packet_call(T x) {
#if TOWER_HAVE_LIBMVEC
  if constexpr (vectorized_v<T>) {
    T in[lanes<T>];
    for (auto& v : in) v = x;
    const packet_t<T> r = Fn::packet(detail::load(in));
    T out;
    std::memcpy(&out, &r, sizeof out);
    return out;
  } else
#endif
    return Fn::scalar(x);
}

/// out[i] = Fn(in[i]) for i < n, a packet at a time; `out` may be `in`. Same bits as
/// packet_call<Fn> on each number, unless n is less than a packet: then Fn::scalar, like a number.
template <class Fn, class T>
void apply(const T* in, T* out, std::int64_t n) {
#if TOWER_HAVE_LIBMVEC
  if constexpr (vectorized_v<T>) {
    constexpr std::int64_t W = lanes<T>;
    if (n < W) {  // fewer numbers than a packet (a rank-0 tensor, vmap at batch size 1): like numbers
      for (std::int64_t i = 0; i < n; ++i) out[i] = Fn::scalar(in[i]);
      return;
    }
    std::int64_t i = 0;
    for (; i + W <= n; i += W) detail::store(out + i, Fn::packet(detail::load(in + i)));
    if (i < n) {  // the tail, padded with a number from it so every lane is in the domain
      T tail[W];
      for (std::int64_t j = 0; j < W; ++j) tail[j] = in[i + (i + j < n ? j : 0)];
      detail::store(tail, Fn::packet(detail::load(tail)));
      for (std::int64_t j = 0; i + j < n; ++j) out[i + j] = tail[j];
    }
    return;
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) out[i] = Fn::scalar(in[i]);
}

}  // namespace tower::kernels::vmath

#undef TOWER_VMATH_D
#undef TOWER_VMATH_F
