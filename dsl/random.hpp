#pragma once
// Random ops and vmap's randomness= policy (torch.func semantics).
//
//   tw::manual_seed(7);
//   auto noisy = [](auto x) { return x + tw::randn_like(x) * 0.1; };
//   tw::vmap(noisy, tw::randomness::different)(X);   // independent noise per example
//   tw::vmap(noisy, tw::randomness::same)(X);        // the same noise for every example
//   tw::vmap(noisy)(X);                              // tower::error: randomness is 'error'
//
// Every random op draws from this thread's generator (tw::manual_seed) and follows the policy
// of every enclosing vmap, whether or not the vmap batches its argument, and so do the
// factories tw::randn({shape}) and tw::rand({shape}):
// - randomness::error (the default): the op raises "vmap: called random operation ... while in
//   randomness error mode", also inside grad, jacrev, jacfwd or hessian inside the vmap;
// - randomness::different: each example draws its own values (the result is batched);
// - randomness::same: one draw, shared by every example.
// chunk_size does not change the numbers in either mode (tower/core/randomness.hpp).
//
// Random ops are not differentiated: under grad the draw is a constant, under jvp its tangent is
// zero. dropout is differentiable in x: x * mask / (1 - p), the mask a constant.
// The Jacobian transforms (jacrev, jacfwd, hessian) evaluate f at one point: a random op inside
// draws once for every basis direction (torch.func's jacfwd raises unless given
// randomness='same'; see docs/functorch_differences.md).
#include <cmath>
#include <cstdint>
#include <string>

#include "dsl/layout.hpp"
#include "dsl/pointwise.hpp"
#include "dsl/shape_ops.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/kernels/base.hpp"
#include "tower/static/op.hpp"
#include "tower/core/randomness.hpp"
#include "tower/tensor/tensor.hpp"

namespace tower {

namespace detail {

/// Standard normal values into p[0, n): Box-Muller on pairs of uniform draws.
template <class T>
void normal_fill(T* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - uniform01(), u2 = uniform01();  // u1 in (0, 1]: log(u1) is finite
    const double r = std::sqrt(-2.0 * std::log(u1)), th = 6.283185307179586 * u2;
    p[i] = static_cast<T>(r * std::cos(th));
    if (i + 1 < n) p[i + 1] = static_cast<T>(r * std::sin(th));
  }
}

/// A tensor of shape s filled by fill(pointer, count), in row-major order.
template <class T, class Fill>
tensor<T> draw_shaped(const char* op, shape_t s, Fill&& fill) {
  const std::int64_t n = allocation_size(op, s);
  buffer<T> b(static_cast<std::size_t>(n));
  fill(b.data(), n);
  return tensor<T>(std::move(s), std::move(b));
}
/// A value of x's shape and element type filled likewise.
template <class X, class Fill>
auto draw_like(const X& x, Fill&& fill) {
  if constexpr (kernels::is_plain_scalar_v<X>) {
    X v{};
    fill(&v, 1);
    return v;
  } else {
    return draw_shaped<kernels::element_t<X>>("draw", x.shape(), fill);
  }
}
inline constexpr auto normal_draws = [](auto* p, std::int64_t n) { normal_fill(p, n); };
inline constexpr auto uniform_draws = [](auto* p, std::int64_t n) {
  using T = std::remove_cvref_t<decltype(*p)>;
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(uniform01());
};

/// x's physical value with a batch of bs examples in dim 0 (x repeated when it has none).
template <class X>
auto repeat_batch(const X& x, std::int64_t bs) {
  shape_t one = shape(x);
  one.insert(one.begin(), 1);
  shape_t full = one;
  full[0] = bs;
  return broadcast_to(reshape(x, one), full);
}
template <class P, class B>
auto with_batch(const bval<P, B>& x, std::int64_t bs) {
  if constexpr (std::is_same_v<B, std::true_type>) return P(x.value);
  else return x.batched ? P(x.value) : repeat_batch(x.value, bs);
}
/// The value of x's first example (x itself when it has no batch): torch.func's x[0].
template <class P, class B>
auto first_example(const bval<P, B>& x) {
  if constexpr (std::is_same_v<B, std::true_type>) return reshape(narrow(x.value, 0, 0, 1), logical_shape(x));
  else return x.batched ? reshape(narrow(x.value, 0, 0, 1), logical_shape(x)) : P(x.value);
}

/// The batching rule of an op that draws values of its argument's shape (randn_like, rand_like,
/// randint_like): per example under different, one draw of the logical shape under same.
template <class Op, class P, class B>
auto random_like_batch(const Op& op, const interpreter_entry& e, std::int64_t bs, const bval<P, B>& x) {
  if (e.randomness == randomness_kind::error) random_in_error_mode(Op::name);
  if (e.randomness == randomness_kind::different) return call_op(op, with_batch(x, bs));
  return repeat_batch(call_op(op, first_example(x)), bs);
}

}  // namespace detail

/// A random op as a function object: checks vmap's randomness, then runs the op.
template <class Op>
struct random_op_fn {
  template <operand... A>
  auto operator()(const A&... a) const {
    detail::check_randomness(Op::name);
    return call_op(Op{}, a...);
  }
};

/// The batching rule of an op that draws values of its argument's shape (CRTP).
template <class Op>
struct random_like {
  static constexpr bool differentiable = false;
  template <class BS, class X>
  auto batch_with_entry(const interpreter_entry& e, BS bs, const X& x) const {
    return detail::random_like_batch(static_cast<const Op&>(*this), e, bs, x);
  }
};

struct randn_like_op : random_like<randn_like_op> {
  static constexpr const char* name = "randn_like";
  template <class X>
  auto base(const X& x) const {
    return detail::draw_like(x, detail::normal_draws);
  }
};

struct rand_like_op : random_like<rand_like_op> {
  static constexpr const char* name = "rand_like";
  template <class X>
  auto base(const X& x) const {
    return detail::draw_like(x, detail::uniform_draws);
  }
};

struct randint_like_op : random_like<randint_like_op> {
  static constexpr const char* name = "randint_like";
  std::int64_t low, high;
  template <class X>
  auto base(const X& x) const {
    return detail::draw_like(x, [this](auto* p, std::int64_t n) {
      using T = std::remove_cvref_t<decltype(*p)>;
      const double span = static_cast<double>(high - low);
      for (std::int64_t i = 0; i < n; ++i)
        p[i] = static_cast<T>(std::min(high - 1, low + static_cast<std::int64_t>(detail::uniform01() * span)));
    });
  }
};

namespace detail {
/// 1 where u < p, else 0, as p's type: bernoulli's draw u against its probabilities p, which
/// must be in [0, 1].
struct bernoulli_compare_op : binary_pointwise<bernoulli_compare_op> {
  static constexpr const char* name = "bernoulli";
  static constexpr bool elementwise = true;
  static constexpr bool differentiable = false;
  template <class U, class P>
  auto base(const U& u, const P& p) const {
    return kernels::zip(name, u, p, [](auto x, auto y) {
      if (!(y >= 0 && y <= 1))
        throw error("bernoulli: probabilities must be in [0, 1], got " + std::to_string(static_cast<double>(y)));
      return x < y ? 1 : 0;
    });
  }
};
}  // namespace detail

struct bernoulli_op {
  static constexpr const char* name = "bernoulli";
  static constexpr bool differentiable = false;
  /// 1 with probability p[i], else 0: a uniform draw u of p's shape (row-major), then u < p.
  template <class P>
  auto base(const P& p) const {
    return detail::bernoulli_compare_op{}.base(rand_like_op{}.base(p), p);
  }
  /// Per example under different; under same one uniform draw of the logical shape, compared
  /// with each example's probabilities (an unbatched p gives one shared result).
  template <class BS, class P, class B>
  auto batch_with_entry(const interpreter_entry& e, BS bs, const bval<P, B>& p) const {
    if (e.randomness == randomness_kind::error) detail::random_in_error_mode(name);
    if (e.randomness == randomness_kind::different) return call_op(*this, detail::with_batch(p, bs));
    return call_op(detail::bernoulli_compare_op{},
                   detail::repeat_batch(call_op(rand_like_op{}, detail::first_example(p)), bs),
                   detail::with_batch(p, bs));
  }
};

/// Standard normal values with x's shape and element type.
/// \code
/// auto x = tw::zeros<double>({3});
/// tw::manual_seed(1);
/// auto a = tw::randn_like(x);   // [3] of N(0, 1) draws
/// tw::manual_seed(1);
/// if (tw::randn_like(x)(2) != a(2) || a(0) == a(1)) throw std::runtime_error("randn_like");
/// \endcode
inline constexpr random_op_fn<randn_like_op> randn_like{};

/// Uniform values in [0, 1) with x's shape and element type.
/// \code
/// auto u = tw::rand_like(tw::zeros<float>({100}));
/// for (float v : u.values()) if (!(v >= 0 && v < 1)) throw std::runtime_error("rand_like");
/// \endcode
inline constexpr random_op_fn<rand_like_op> rand_like{};

/// Uniform integers in [low, high) with x's shape, as x's element type.
/// \code
/// auto k = tw::randint_like(tw::zeros<double>({100}), 0, 10);   // values 0, 1, ..., 9
/// for (double v : k.values()) if (v != std::floor(v) || v < 0 || v > 9) throw std::runtime_error("randint_like");
/// \endcode
template <operand X>
auto randint_like(const X& x, std::int64_t low, std::int64_t high) {
  if (high <= low)
    throw error("randint_like: high must be greater than low, got low=" + std::to_string(low) +
                ", high=" + std::to_string(high));
  detail::check_randomness(randint_like_op::name);
  return call_op(randint_like_op{{}, low, high}, x);
}

/// 0/1 draws, 1 with probability p (elementwise; p's values must be in [0, 1]), as p's type.
/// \code
/// auto coin = tw::bernoulli(tw::full_like(tw::zeros<double>({1000}), 0.3));   // 1 with probability 0.3
/// double ones = tw::sum(coin).item();   // binomial(1000, 0.3): mean 300, sd 14.5
/// if (tw::sum(tw::bernoulli(tw::tensor<double>({2}, {0.0, 1.0}))).item() != 1 || std::abs(ones - 300) > 100)
///   throw std::runtime_error("bernoulli");
/// \endcode
inline constexpr random_op_fn<bernoulli_op> bernoulli{};

/// Dropout: in training, each element of x is zeroed with probability p and the others are
/// scaled by 1 / (1 - p); with train=false, x unchanged. Differentiable in x (the gradient is
/// mask / (1 - p)); the mask follows vmap's randomness like every random op.
/// \code
/// auto x = tw::full<double>({8}, 3.0);
/// auto h = tw::dropout(x, 0.5);          // training: each element 0 or 3 / 0.5
/// for (double v : h.values()) if (v != 0 && v != 6) throw std::runtime_error("dropout");
/// if (tw::dropout(x, 0.5, false)(7) != 3) throw std::runtime_error("evaluation: identity");
/// \endcode
template <operand X>
auto dropout(const X& x, double p, bool train = true) {
  auto masked = [&](double keep) { return x * (call_op(bernoulli_op{}, full_like(x, keep)) * (1.0 / keep)); };
  if constexpr (is_dual_unsupported_v<decltype(masked(1.0))>) {
    return dual_unsupported{};  // inside a probe of a tape-free form, which declines
  } else {
    if (!(p >= 0.0 && p <= 1.0)) throw error("dropout: p must be in [0, 1], got " + std::to_string(p));
    if (!train || p == 0.0) return x * 1.0;
    if (p == 1.0) return x * 0.0;  // every element dropped; no draw (as torch.func)
    detail::check_randomness("dropout");
    return masked(1.0 - p);
  }
}

/// Standard normal values of the given shape, from this thread's generator; inside vmap they
/// follow its randomness (per example under different, shared under same, an error under error).
/// (tw::randn<T>(shape, seed) draws from a generator of its own seed instead: tensor.hpp.)
/// \code
/// tw::manual_seed(0);
/// tw::tensor<double> z = tw::randn({2, 3});
/// tw::manual_seed(0);
/// if (z.shape() != tw::shape_t{2, 3} || tw::randn({2, 3})(1, 2) != z(1, 2)) throw std::runtime_error("randn");
/// \endcode
template <class T = double>
tensor<T> randn(shape_t s) {
  detail::check_randomness("randn");
  return detail::draw_shaped<T>("randn", std::move(s), detail::normal_draws);
}

/// Uniform values in [0, 1) of the given shape (as tw::randn({shape}) for the generator and vmap).
/// \code
/// tw::tensor<double> u = tw::rand({4});
/// for (double v : u.values()) if (!(v >= 0 && v < 1)) throw std::runtime_error("rand");
/// \endcode
template <class T = double>
tensor<T> rand(shape_t s) {
  detail::check_randomness("rand");
  return detail::draw_shaped<T>("rand", std::move(s), detail::uniform_draws);
}

}  // namespace tower
