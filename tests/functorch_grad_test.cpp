// functorch cross-check, reverse and forward mode: grad (argnums, has_aux, grad of grad), vjp and
// jvp (pytree outputs and cotangents), including the edge values torch defines (prod with zeros,
// norm at 0, kinks, ties), against functorch's numbers on both paths (tests/functorch/xcheck.hpp).
#include <catch2/catch.hpp>

#include <limits>
#include <tuple>
#include <utility>

#include "tests/functorch/xcheck.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing::functorch;
using tw::tensor;

TEST_CASE("functorch cross-check: grad") {
  const auto x3 = input("x3"), y3 = input("y3"), A23 = input("A23"), B34 = input("B34");
  const double s = number("s");
  auto sum_sin = [](auto x) { return tw::sum(tw::sin(x)); };
  auto prod = [](auto x) { return tw::prod(x); };
  auto norm = [](auto x) { return tw::norm(x); };
  auto lse = [](auto x) { return tw::logsumexp(x, 0); };
  auto at = [](const tensor<double>& x) { return [x](auto f) { return tw::grad(f)(x); }; };

  xcheck<1>("grad.sin_sum", sum_sin, at(x3));
  xcheck<1>("grad.scalar", [](auto c) { return tw::pow(c, 3.0) * tw::sin(c); }, [&](auto f) { return tw::grad(f)(s); });
  xcheck<2>(
      "grad.argnums_0_1", [](auto x, auto y) { return tw::sum(x * y) + tw::sum(x * x) * tw::sum(y); },
      [&](auto f) { return tw::grad(f, tw::argnums<0, 1>)(x3, y3); });
  xcheck<2>(
      "grad.argnums_1", [](auto x, auto y) { return tw::sum(x * tw::exp(y)); },
      [&](auto f) { return tw::grad(f, tw::argnums<1>)(x3, y3); });
  xcheck<1>(
      "grad.has_aux", [](auto x) { return std::make_pair(tw::sum(tw::exp(x)), tw::cos(x)); },
      [&](auto f) { return tw::grad(f, tw::has_aux)(x3); });
  xcheck<1>("grad.matmul_tanh", [&B34](auto a) { return tw::sum(tw::tanh(tw::matmul(a, B34))); }, at(A23));
  xcheck<2>(
      "grad.dot_squared", [](auto x, auto y) { return tw::pow(tw::dot(x, y), 2.0); },
      [&](auto f) { return tw::grad(f, tw::argnums<0, 1>)(x3, y3); });
  xcheck<1>("grad.logsumexp", lse, at(x3));
  xcheck<1>("grad.log_softmax", [&y3](auto x) { return tw::sum(tw::log_softmax(x, -1) * y3); }, at(x3));
  xcheck<1>("grad.prod", prod, at(x3));
  xcheck<1>("grad.prod_one_zero", prod, at(input("one_zero3")));
  xcheck<1>("grad.prod_two_zeros", prod, at(input("two_zeros3")));
  xcheck<1>("grad.norm", norm, at(x3));
  xcheck<1>("grad.norm_at_zero", norm, at(input("zeros3")));
  // torch differentiates exp(x - logsumexp(x)), which is exp(inf - inf) = NaN at an infinite
  // element; tower takes x - max as 0 where x is the max, so the gradient is the softmax there.
  differs<1>("grad.logsumexp_inf", lse, at(input("inf3")), {tensor<double>({3}, {1.0, 0.0, 0.0})});
  differs<1>("grad.logsumexp_all_neg_inf", lse, at(input("ninf3")), {tensor<double>({3}, {1.0 / 3, 1.0 / 3, 1.0 / 3})});
  xcheck<1>("grad.amax_ties", [](auto x) { return tw::amax(x); }, at(input("ties3")));
  xcheck<1>("grad.abs_relu_kinks", [](auto x) { return tw::sum(tw::abs(x) + tw::relu(x)); }, at(input("kinks3")));
  xcheck<1>("grad.sqrt_at_zero", [](auto x) { return tw::sum(tw::sqrt(x)); }, at(input("sqrt3")));
  xcheck<1>(
      "grad.maximum_tie", [other = input("max_other3")](auto x) { return tw::sum(tw::maximum(x, other)); },
      at(input("max_at3")));
  xcheck<1>(
      "grad.layout_chain",
      [](auto m) { return tw::sum(tw::pow(tw::narrow(tw::reshape(tw::transpose(m, 0, 1), {6}), 0, 1, 4), 2.0)); },
      at(A23));
  xcheck<1>("grad.mean_var", [](auto x) { return tw::var(x) + tw::mean(x) * tw::sum(x); }, at(x3));
  xcheck<1>(
      "grad.smooth_ops", [](auto x) { return tw::sum(tw::softplus(x) * tw::sigmoid(x) + tw::tanh(x) * tw::atan(x)); },
      at(x3));
  xcheck<1>("grad.pow", [](auto x) { return tw::sum(tw::pow(tw::abs(x) + 1.0, 2.5)); }, at(x3));
  xcheck<2>(
      "grad.atan2", [](auto x, auto y) { return tw::sum(tw::atan2(x, y)); },
      [&](auto f) { return tw::grad(f, tw::argnums<0, 1>)(x3, y3); });
  xcheck<1>("grad.log_sqrt_positive", [](auto x) { return tw::sum(tw::log(x) * tw::sqrt(x)); }, at(input("pos3")));
  xcheck<1>(
      "grad.grad_scalar", [](auto c) { return tw::sin(c) * tw::pow(c, 2.0); },
      [&](auto f) { return tw::grad(tw::grad(f))(s); });
  xcheck<1>("grad.amax_dim_mean", [](auto m) { return tw::sum(tw::amax(m, 1)) + tw::prod(tw::mean(m, 0)); }, at(A23));

  require_all_run("grad.");
}

TEST_CASE("functorch cross-check: vjp and jvp") {
  const auto x3 = input("x3"), y3 = input("y3"), v3 = input("v3"), w3 = input("w3");
  const auto A23 = input("A23"), B34 = input("B34"), C24 = input("C24"), T23 = input("T23");
  const double s = number("s");
  // (f's output, vjp_fn(cotangent)), as functorch's vjp_at in generate.py.
  auto vjp_at = [](auto f, const auto& ct, const auto&... primals) {
    auto [out, pull] = tw::vjp(f, primals...);
    return std::make_pair(out, pull(ct));
  };

  xcheck<1>("vjp.sin", [](auto x) { return tw::sin(x); }, [&](auto f) { return vjp_at(f, v3, x3); });
  xcheck<2>(
      "vjp.matmul", [](auto a, auto b) { return tw::matmul(a, b); }, [&](auto f) { return vjp_at(f, C24, A23, B34); });
  xcheck<1>(
      "vjp.tuple_out", [](auto x) { return std::make_tuple(tw::sin(x), tw::sum(x) * x); },
      [&](auto f) { return vjp_at(f, std::make_tuple(v3, w3), x3); });
  xcheck<1>("vjp.sum_dim", [](auto m) { return tw::sum(m, 0); }, [&](auto f) { return vjp_at(f, y3, A23); });
  xcheck<1>("vjp.softmax", [](auto m) { return tw::softmax(m, -1); }, [&](auto f) { return vjp_at(f, T23, A23); });

  xcheck<1>(
      "jvp.sin", [](auto x) { return tw::sin(x); }, [&](auto f) { return tw::jvp(f, std::tuple{x3}, std::tuple{v3}); });
  xcheck<2>(
      "jvp.two_args", [](auto x, auto y) { return x * y + tw::exp(y); },
      [&](auto f) { return tw::jvp(f, std::tuple{x3, y3}, std::tuple{v3, w3}); });
  xcheck<1>(
      "jvp.matmul", [&B34](auto a) { return tw::matmul(a, B34); },
      [&](auto f) { return tw::jvp(f, std::tuple{A23}, std::tuple{T23}); });
  xcheck<1>(
      "jvp.tuple_out", [](auto x) { return std::make_tuple(tw::cos(x), tw::norm(x)); },
      [&](auto f) { return tw::jvp(f, std::tuple{x3}, std::tuple{v3}); });
  xcheck<1>(
      "jvp.logsumexp", [](auto m) { return tw::logsumexp(m, 1); },
      [&](auto f) { return tw::jvp(f, std::tuple{A23}, std::tuple{T23}); });
  xcheck<1>(
      "jvp.scalar", [](auto c) { return tw::pow(c, 3.0); },
      [&](auto f) { return tw::jvp(f, std::tuple{s}, std::tuple{1.5}); });

  require_all_run("vjp.");
  require_all_run("jvp.");
}
