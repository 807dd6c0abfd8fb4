#pragma once
// The checker behind fixed_ops_unary_test.cpp and fixed_ops_binary_test.cpp: one op (a generic
// function of tw::fixed values, numbers and size-1 vectors) on fixed values against the same
// function on tensors — values, grad (the tape-free forward path against the tape), grad of grad,
// hessian (elementwise jets against central differences of the tape's gradient), and vmap(grad)
// with in_dims fixed_rows against vmap(grad) with in_dims 0.
//
// check_deep adds the exact comparisons that cost the most to compile: hessian on fixed against
// the tensor path's hessian (jacfwd(jacrev) on the tape), and vmap(hessian) with fixed_rows
// against a loop of hessians over the examples. Each instantiates a transform stack four deep (and
// its closure twin, static_level.hpp), about 15 s of g++ per op; the finite-difference Hessian
// reuses the gradient the grad check already compiled. So every op gets check, and a few ops that
// stand for the rule kinds (a jet_rule, the generic per-element rule, a dense fallback) get
// check_deep.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tower::testing::fixed_checker {

namespace tw = tower;

inline constexpr int N = 3;
inline constexpr std::int64_t B = 70;  // more than one block of 64 examples, and a tail
using vec = tw::fixed<double, N>;

inline vec fx(const tw::tensor<double>& t) { return tw::to_fixed<vec>(t); }
inline tw::tensor<double> tt(const vec& v) { return tw::to_tensor(v); }

/// One argument of a checked function: a 3-vector, a number, or a size-1 vector (broadcast).
enum class kind { vector, number, single };

/// The argument as the fixed path sees it and as the tensor path sees it.
template <kind K>
auto fixed_arg(const tw::tensor<double>& t) {
  if constexpr (K == kind::vector) return fx(t);
  else if constexpr (K == kind::number) return t.item();
  else return tw::to_fixed<tw::fixed<double, 1>>(t);
}
template <kind K>
auto tensor_arg(const tw::tensor<double>& t) {
  if constexpr (K == kind::number) return t.item();
  else return t;
}
template <kind K>
tw::shape_t shape_of() {
  if constexpr (K == kind::vector) return {N};
  else if constexpr (K == kind::number) return {};
  else return {1};
}

/// (op, rule) cases checked in this test binary.
inline int cases = 0;

/// grad of g in every argument.
template <std::size_t A, class G>
auto grad_all(G g) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return tw::grad(g, tw::argnums<static_cast<int>(I)...>); }(
      std::make_index_sequence<A>{});
}

/// Element I of a gradient of A arguments (the gradient itself when A is 1).
template <std::size_t I, std::size_t A, class G>
const auto& component(const G& g) {
  if constexpr (A == 1) return g;
  else return std::get<I>(g);
}

/// Central differences, column by column, of gradient component I of `gradient` (a function of
/// the tuple args) in argument I, a vector of N elements.
template <std::size_t I, std::size_t A, class Gradient, class Args>
tw::tensor<double> fd_hessian(const Gradient& gradient, const Args& args) {
  const double h = 1e-5;
  const tw::tensor<double>& x = std::get<I>(args);
  std::vector<double> out(static_cast<std::size_t>(N * N));
  for (std::int64_t j = 0; j < N; ++j) {
    std::vector<double> p(x.data(), x.data() + N), m = p;
    p[static_cast<std::size_t>(j)] += h;
    m[static_cast<std::size_t>(j)] -= h;
    Args ap = args, am = args;
    std::get<I>(ap) = tw::tensor<double>({N}, p);
    std::get<I>(am) = tw::tensor<double>({N}, m);
    const auto gp = std::apply(gradient, ap);
    const auto gm = std::apply(gradient, am);
    const tw::tensor<double>& cp = component<I, A>(gp);
    const tw::tensor<double>& cm = component<I, A>(gm);
    for (std::int64_t i = 0; i < N; ++i) out[static_cast<std::size_t>(i * N + j)] = (cp.data()[i] - cm.data()[i]) / (2 * h);
  }
  return tw::tensor<double>({N, N}, out);
}

/// f (a generic function of sizeof...(K) values, elementwise or reducing) on fixed values
/// against f on tensors; inputs drawn in [lo, hi]. Deep: see the header comment.
template <bool Deep, kind... K, class F>
void run(const std::string& name, F f, double lo, double hi, unsigned seed) {
  INFO("op " << name);
  constexpr std::size_t A = sizeof...(K);
  constexpr bool unary_vector = A == 1 && ((K == kind::vector) && ...);
  std::vector<tw::tensor<double>> xs;
  unsigned s = seed;
  ((xs.push_back(sample(shape_of<K>(), lo, hi, s++))), ...);
  auto fixed_args = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::make_tuple(fixed_arg<K>(xs[I])...); }(std::make_index_sequence<A>{});
  auto tensor_args = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::make_tuple(tensor_arg<K>(xs[I])...); }(std::make_index_sequence<A>{});

  // Values.
  const auto yf = std::apply(f, fixed_args);
  const auto yt = std::apply(f, tensor_args);
  REQUIRE(tw::shape(yf) == tw::shape(yt));
  require_close(as_tensor(tw::sum(yf) * 1.0), as_tensor(tw::sum(yt) * 1.0), 1e-13);
  ++cases;

  // grad of a scalar loss, every argument: the tape-free path on fixed values against the tape.
  const vec wv = fx(sample({N}, -1, 1, seed + 50));
  auto loss_f = [&](const auto&... x) { return tw::sum(f(x...) * wv); };
  auto loss_t = [&](const auto&... x) { return tw::sum(f(x...) * tt(wv)); };
  const auto grad_t = grad_all<A>(loss_t);
  const auto gf = std::apply(grad_all<A>(loss_f), fixed_args);
  const auto gt = std::apply(grad_t, tensor_args);
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (require_close(as_tensor(tw::sum(component<I, A>(gf)) * 1.0), as_tensor(tw::sum(component<I, A>(gt)) * 1.0), 1e-12), ...);
  }(std::make_index_sequence<A>{});
  if constexpr (unary_vector) require_close(tt(gf), gt, 1e-12);  // elementwise: a sum could hide a permutation
  ++cases;

  // grad of grad (forward over forward on fixed values) against the tape: d/dx <grad loss(x), v>.
  if constexpr (unary_vector) {
    const vec v = fx(sample({N}, -1, 1, seed + 60));
    auto hv_f = tw::grad([&](const auto& x) { return tw::dot(tw::grad(loss_f)(x), v); });
    auto hv_t = tw::grad([&](const auto& x) { return tw::dot(tw::grad(loss_t)(x), tt(v)); });
    require_close(tt(hv_f(std::get<0>(fixed_args))), hv_t(std::get<0>(tensor_args)), 1e-10);
    ++cases;
  }

  // hessian of the loss in each vector argument, on elementwise jets (hessian_forward.hpp),
  // against central differences of the tape's gradient; deep: against the tensor path exactly.
  auto hessian_in = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
    constexpr kind kinds[] = {K...};
    if constexpr (kinds[I] == kind::vector) {
      using G = decltype(loss_f);
      constexpr bool on_jets = []<std::size_t... J>(std::index_sequence<J...>) {
        return tw::detail::hessian_on_jets<tw::jacrev_transform<G, tw::argnums_t<static_cast<int>(I)>>, static_cast<int>(I),
                                           std::remove_cvref_t<decltype(fixed_arg<kinds[J]>(std::declval<tw::tensor<double>>()))>...>();
      }(std::make_index_sequence<A>{});
      STATIC_REQUIRE(on_jets);
      const tw::tensor<double> hf = tw::to_tensor(std::apply(tw::hessian(loss_f, tw::argnums<static_cast<int>(I)>), fixed_args));
      require_close(hf, fd_hessian<I, A>(grad_t, tensor_args), 1e-7);
      ++cases;
      if constexpr (Deep) {
        require_close(hf, std::apply(tw::hessian(loss_t, tw::argnums<static_cast<int>(I)>), tensor_args), 1e-10);
        ++cases;
      }
    }
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (hessian_in(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<A>{});

  // Deep: vmap(hessian) with fixed_rows (one forward-over-forward pass per example) against
  // hessian on each row.
  if constexpr (Deep && unary_vector) {
    const tw::tensor<double> X = sample({B, N}, lo, hi, seed + 200);
    const tw::tensor<double> H = tw::vmap(tw::hessian(loss_f), tw::in_dims(tw::fixed_rows<N>))(X);
    REQUIRE(H.shape() == tw::shape_t{B, N, N});
    for (std::int64_t b = 0; b < B; ++b) require_close(row(H, b), tw::to_tensor(tw::hessian(loss_f)(fx(row(X, b)))), 1e-13);
    ++cases;
  }

  // vmap(grad) with fixed_rows for the vector arguments against in_dims 0 on tensors.
  if constexpr (((K == kind::vector) || ...)) {
    std::vector<tw::tensor<double>> batched;
    unsigned bs_seed = seed + 100;
    ((batched.push_back(K == kind::vector ? sample({B, N}, lo, hi, bs_seed++) : sample({B}, lo, hi, bs_seed++))), ...);
    auto entry_fixed = [](auto k) {
      if constexpr (decltype(k)::value == kind::vector) return tw::fixed_rows<N>;
      else return 0;
    };
    const auto in_f = tw::in_dims(entry_fixed(std::integral_constant<kind, K>{})...);
    const auto in_t = tw::in_dims((static_cast<void>(K), 0)...);
    auto batched_args = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tie(batched[I]...); }(std::make_index_sequence<A>{});
    auto per_f = std::apply(tw::vmap(grad_all<A>(loss_f), in_f), batched_args);
    auto per_t = std::apply(tw::vmap(grad_t, in_t), batched_args);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (require_close(component<I, A>(per_f), component<I, A>(per_t), 1e-12), ...);
    }(std::make_index_sequence<A>{});
    ++cases;
  }
}

/// Every check but the deep ones (see the header comment).
template <kind... K, class F>
void check(const std::string& name, F f, double lo = -1, double hi = 1, unsigned seed = 1) {
  run<false, K...>(name, f, lo, hi, seed);
}

/// Every check, the deep ones too.
template <kind... K, class F>
void check_deep(const std::string& name, F f, double lo = -1, double hi = 1, unsigned seed = 1) {
  run<true, K...>(name, f, lo, hi, seed);
}

}  // namespace tower::testing::fixed_checker
