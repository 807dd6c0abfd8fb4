// functorch cross-check, compositions: vmap of grad / jacrev / jacfwd / hessian / jvp / vjp,
// Jacobians of Jacobians, grad through vmap, grad of grad (Hessian-vector products) and jvp of
// grad, against functorch's numbers on both paths (tests/functorch/xcheck.hpp).
#include <catch2/catch.hpp>

#include <tuple>
#include <utility>

#include "tests/functorch/xcheck.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing::functorch;

TEST_CASE("functorch cross-check: compositions") {
  const auto x3 = input("x3"), v3 = input("v3"), w3 = input("w3"), y4 = input("y4");
  const auto X43 = input("X43"), V43 = input("V43"), X423 = input("X423");

  xcheck<3>(
      "compose.vmap_grad", [](auto w, auto x, auto y) { return tw::softplus(-y * tw::dot(w, x)); },
      [&](auto f) { return tw::vmap(tw::grad(f), tw::in_dims(tw::none, 0, 0))(w3, X43, y4); });
  xcheck<2>(
      "compose.vmap_grad_argnums", [](auto w, auto x) { return tw::sum(tw::sin(w * x)); },
      [&](auto f) { return tw::vmap(tw::grad(f, tw::argnums<0, 1>), tw::in_dims(tw::none, 0))(w3, X43); });
  xcheck<1>(
      "compose.vmap_jacrev", [](auto x) { return tw::sin(x) * tw::sum(x); },
      [&](auto f) { return tw::vmap(tw::jacrev(f))(X43); });
  xcheck<1>(
      "compose.vmap_jacfwd", [](auto x) { return tw::softmax(x, -1); },
      [&](auto f) { return tw::vmap(tw::jacfwd(f))(X43); });
  xcheck<1>(
      "compose.vmap_hessian", [](auto x) { return tw::sum(tw::pow(x, 3.0)) * tw::sum(x); },
      [&](auto f) { return tw::vmap(tw::hessian(f))(X43); });
  xcheck<1>(
      "compose.jacfwd_jacrev", [](auto x) { return tw::sum(tw::sin(x)) * tw::prod(x); },
      [&](auto f) { return tw::jacfwd(tw::jacrev(f))(x3); });
  xcheck<1>(
      "compose.jacrev_jacrev", [](auto x) { return tw::sum(tw::exp(x)) * tw::norm(x); },
      [&](auto f) { return tw::jacrev(tw::jacrev(f))(x3); });
  // The inner vmap closes over w, which the outer grad traces.
  xcheck<1>(
      "compose.grad_of_vmap",
      [&X43](auto w) { return tw::sum(tw::vmap([w](auto x) { return tw::sum(tw::tanh(w * x)); })(X43)); },
      [&](auto f) { return tw::grad(f)(w3); });
  xcheck<2>(
      "compose.vmap_jvp",
      [](auto x, auto t) {
        return std::get<1>(tw::jvp([](auto u) { return tw::sin(u) * tw::sum(u); }, std::tuple{x}, std::tuple{t}));
      },
      [&](auto f) { return tw::vmap(f)(X43, V43); });
  xcheck<2>(
      "compose.vmap_vjp",
      [](auto x, auto c) {
        auto [out, pull] = tw::vjp([](auto u) { return tw::exp(u) * tw::sum(u); }, x);
        return std::get<0>(pull(c));
      },
      [&](auto f) { return tw::vmap(f)(X43, V43); });
  // grad of <grad(g)(x), v>: a Hessian-vector product by reverse over reverse.
  xcheck<1>(
      "compose.hvp_grad_grad",
      [&v3](auto x) { return tw::dot(tw::grad([](auto u) { return tw::sum(tw::pow(u, 3.0)) * tw::sum(u); })(x), v3); },
      [&](auto f) { return tw::grad(f)(x3); });
  xcheck<1>(
      "compose.jvp_of_grad", [](auto u) { return tw::logsumexp(u, 0) * tw::sum(u); },
      [&](auto f) { return tw::jvp(tw::grad(f), std::tuple{x3}, std::tuple{v3}); });
  xcheck<1>(
      "compose.vmap_grad_has_aux", [](auto x) { return std::make_pair(tw::sum(x * x), tw::sum(x)); },
      [&](auto f) { return tw::vmap(tw::grad(f, tw::has_aux))(X43); });
  xcheck<1>(
      "compose.vmap_vmap_grad", [](auto x) { return tw::sum(tw::sin(x)); },
      [&](auto f) { return tw::vmap(tw::vmap(tw::grad(f)))(X423); });
  require_all_run("compose.");
}
