// Every op that takes tw::fixed values (fixed.hpp, fixed_ops.hpp) through one checker, against
// the same function on tensors: values, grad (the tape-free forward path against the tape), grad
// of grad, hessian and vmap(hessian) (elementwise jets), and vmap(grad) with in_dims fixed_rows
// against vmap(grad) with in_dims 0.
// (Conversions, errors, vmap's forms and Jacobians on fixed values: fixed_test.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::testing::require_close;
using tw::testing::sample;

namespace {

constexpr int N = 3;
constexpr std::int64_t B = 70;  // more than one block of 64 examples, and a tail
using vec = tw::fixed<double, N>;

vec fx(const tw::tensor<double>& t) { return tw::to_fixed<vec>(t); }
tw::tensor<double> tt(const vec& v) { return tw::to_tensor(v); }

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

int cases = 0;

/// f (a generic function of sizeof...(K) values, elementwise or reducing) on fixed values
/// against f on tensors; inputs drawn in [lo, hi].
template <kind... K, class F>
void check(const std::string& name, F f, double lo = -1, double hi = 1, unsigned seed = 1) {
  INFO("op " << name);
  constexpr std::size_t A = sizeof...(K);
  std::vector<tw::tensor<double>> xs;
  unsigned s = seed;
  ((xs.push_back(sample(shape_of<K>(), lo, hi, s++))), ...);
  auto fixed_args = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::make_tuple(fixed_arg<K>(xs[I])...); }(std::make_index_sequence<A>{});
  auto tensor_args = [&]<std::size_t... I>(std::index_sequence<I...>) { return std::make_tuple(tensor_arg<K>(xs[I])...); }(std::make_index_sequence<A>{});

  // Values.
  const auto yf = std::apply(f, fixed_args);
  const auto yt = std::apply(f, tensor_args);
  REQUIRE(tw::shape(yf) == tw::shape(yt));
  require_close(tw::testing::as_tensor(tw::sum(yf) * 1.0), tw::testing::as_tensor(tw::sum(yt) * 1.0), 1e-13);
  ++cases;

  // grad of a scalar loss, every argument: the tape-free path on fixed values against the tape.
  const vec wv = fx(sample({N}, -1, 1, seed + 50));
  auto loss_f = [&](const auto&... x) { return tw::sum(f(x...) * wv); };
  auto loss_t = [&](const auto&... x) { return tw::sum(f(x...) * tt(wv)); };
  auto all = [&]<std::size_t... I>(auto g, std::index_sequence<I...>) { return tw::grad(g, tw::argnums<static_cast<int>(I)...>); };
  const auto gf = std::apply(all(loss_f, std::make_index_sequence<A>{}), fixed_args);
  const auto gt = std::apply(all(loss_t, std::make_index_sequence<A>{}), tensor_args);
  auto compare = [&](const auto& a, const auto& b) {
    if constexpr (A == 1) require_close(tw::testing::as_tensor(tw::sum(a) * 1.0), tw::testing::as_tensor(tw::sum(b) * 1.0), 1e-12);
    else [&]<std::size_t... I>(std::index_sequence<I...>) {
      (require_close(tw::testing::as_tensor(tw::sum(std::get<I>(a)) * 1.0), tw::testing::as_tensor(tw::sum(std::get<I>(b)) * 1.0), 1e-12), ...);
    }(std::make_index_sequence<A>{});
  };
  compare(gf, gt);
  if constexpr (A == 1 && ((K == kind::vector) && ...)) {
    // Elementwise, too (the sums above could hide a permutation).
    require_close(tt(gf), gt, 1e-12);
  }
  ++cases;

  // grad of grad (forward over forward on fixed values) against the tape: d/dx <grad loss(x), v>.
  if constexpr (A == 1 && ((K == kind::vector) && ...)) {
    const vec v = fx(sample({N}, -1, 1, seed + 60));
    auto hv_f = tw::grad([&](const auto& x) { return tw::dot(tw::grad(loss_f)(x), v); });
    auto hv_t = tw::grad([&](const auto& x) { return tw::dot(tw::grad(loss_t)(x), tt(v)); });
    require_close(tt(hv_f(std::get<0>(fixed_args))), hv_t(std::get<0>(tensor_args)), 1e-10);
    ++cases;
  }

  // hessian of the loss in each vector argument (elementwise jets, hessian_forward.hpp) against
  // jacfwd(jacrev) on tensors; and vmap(hessian) with fixed_rows against in_dims 0.
  auto hessian_in = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
    constexpr kind kinds[] = {K...};
    if constexpr (kinds[I] == kind::vector) {
      using G = decltype(loss_f);
      constexpr bool on_jets = []<std::size_t... J>(std::index_sequence<J...>) {
        return tw::detail::hessian_on_jets<tw::jacrev_transform<G, tw::argnums_t<static_cast<int>(I)>>, static_cast<int>(I),
                                           std::remove_cvref_t<decltype(fixed_arg<kinds[J]>(std::declval<tw::tensor<double>>()))>...>();
      }(std::make_index_sequence<A>{});
      STATIC_REQUIRE(on_jets);
      const auto hf = std::apply(tw::hessian(loss_f, tw::argnums<static_cast<int>(I)>), fixed_args);
      const auto ht = std::apply(tw::hessian(loss_t, tw::argnums<static_cast<int>(I)>), tensor_args);
      require_close(tw::to_tensor(hf), ht, 1e-10);
      ++cases;
    }
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (hessian_in(std::integral_constant<std::size_t, I>{}), ...);
  }(std::make_index_sequence<A>{});
  if constexpr (A == 1 && ((K == kind::vector) && ...)) {
    const tw::tensor<double> X = sample({B, N}, lo, hi, seed + 200);
    require_close(tw::vmap(tw::hessian(loss_f), tw::in_dims(tw::fixed_rows<N>))(X), tw::vmap(tw::hessian(loss_t))(X), 1e-10);
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
    auto per_f = std::apply(tw::vmap(all(loss_f, std::make_index_sequence<A>{}), in_f),
                            [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tie(batched[I]...); }(std::make_index_sequence<A>{}));
    auto per_t = std::apply(tw::vmap(all(loss_t, std::make_index_sequence<A>{}), in_t),
                            [&]<std::size_t... I>(std::index_sequence<I...>) { return std::tie(batched[I]...); }(std::make_index_sequence<A>{}));
    if constexpr (A == 1) require_close(per_f, per_t, 1e-12);
    else [&]<std::size_t... I>(std::index_sequence<I...>) { (require_close(std::get<I>(per_f), std::get<I>(per_t), 1e-12), ...); }(std::make_index_sequence<A>{});
    ++cases;
  }
}

}  // namespace

TEST_CASE("fixed: every elementwise op, sum and dot against tensors (values, grad, grad of grad, hessian, vmap(grad))") {
  using enum kind;
  // Unary ops on their domains.
  check<vector>("neg", [](const auto& x) { return -x; });
  check<vector>("abs", [](const auto& x) { return tw::abs(x); }, 0.2, 1);
  check<vector>("exp", [](const auto& x) { return tw::exp(x); });
  check<vector>("expm1", [](const auto& x) { return tw::expm1(x); });
  check<vector>("log", [](const auto& x) { return tw::log(x); }, 0.3, 2);
  check<vector>("log1p", [](const auto& x) { return tw::log1p(x); }, 0.1, 2);
  check<vector>("sqrt", [](const auto& x) { return tw::sqrt(x); }, 0.3, 2);
  check<vector>("rsqrt", [](const auto& x) { return tw::rsqrt(x); }, 0.3, 2);
  check<vector>("square", [](const auto& x) { return tw::square(x); });
  check<vector>("sin", [](const auto& x) { return tw::sin(x); });
  check<vector>("cos", [](const auto& x) { return tw::cos(x); });
  check<vector>("tan", [](const auto& x) { return tw::tan(x); });
  check<vector>("tanh", [](const auto& x) { return tw::tanh(x); });
  check<vector>("sinh", [](const auto& x) { return tw::sinh(x); });
  check<vector>("cosh", [](const auto& x) { return tw::cosh(x); });
  check<vector>("asin", [](const auto& x) { return tw::asin(x); }, -0.8, 0.8);
  check<vector>("acos", [](const auto& x) { return tw::acos(x); }, -0.8, 0.8);
  check<vector>("atan", [](const auto& x) { return tw::atan(x); });
  check<vector>("sigmoid", [](const auto& x) { return tw::sigmoid(x); });
  check<vector>("softplus", [](const auto& x) { return tw::softplus(x); });
  check<vector>("relu", [](const auto& x) { return tw::relu(x); }, 0.1, 1);
  check<vector>("erf", [](const auto& x) { return tw::erf(x); });
  check<vector>("reciprocal", [](const auto& x) { return tw::reciprocal(x); }, 0.3, 2);
  // Binary ops: vector with vector, with a number on either side, with a size-1 vector.
  auto binary = [](const std::string& name, auto f, double lo, double hi) {
    check<vector, vector>(name, f, lo, hi);
    check<vector, number>(name + " (vector, number)", f, lo, hi);
    check<number, vector>(name + " (number, vector)", f, lo, hi);
    check<single, vector>(name + " (size 1, vector)", f, lo, hi);
  };
  binary("add", [](const auto& a, const auto& b) { return a + b; }, -1, 1);
  binary("sub", [](const auto& a, const auto& b) { return a - b; }, -1, 1);
  binary("mul", [](const auto& a, const auto& b) { return a * b; }, -1, 1);
  binary("div", [](const auto& a, const auto& b) { return a / b; }, 0.5, 2);
  binary("pow", [](const auto& a, const auto& b) { return tw::pow(a, b); }, 0.5, 2);
  binary("maximum", [](const auto& a, const auto& b) { return tw::maximum(a, b); }, -1, 1);
  binary("minimum", [](const auto& a, const auto& b) { return tw::minimum(a, b); }, -1, 1);
  binary("atan2", [](const auto& a, const auto& b) { return tw::atan2(a, b); }, 0.5, 2);
  // where with a comparison (not differentiated) choosing between two differentiated values.
  check<vector, vector>("where(gt)", [](const auto& a, const auto& b) { return tw::where(tw::gt(a, b), a * b, a - b); });
  // Reductions to a number, and compositions.
  check<vector>("sum", [](const auto& x) { return tw::sum(tw::sin(x)) * x; });
  check<vector, vector>("dot", [](const auto& a, const auto& b) { return tw::dot(a, b) * a; });
  check<vector, vector>("vecdot", [](const auto& a, const auto& b) { return tw::vecdot(tw::exp(a), b) + b; });
  check<vector, number>("lennard-jones", [](const auto& r, const auto& c) {
    auto s = c / tw::sum(r * r);
    auto s3 = s * s * s;
    return 4.0 * (s3 * s3 - s3) * r;
  }, 0.6, 1.4);
  WARN("fixed checker: " << cases << " (op, rule) cases");
  CHECK(cases > 290);
}

