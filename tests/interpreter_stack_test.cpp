// The interpreter stack, grad mode and the runtime path's errors.
#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

TEST_CASE("the stack is empty after a transform returns or throws, on both paths") {
  auto f = [](auto x) { return tw::sin(x); };
  REQUIRE(tw::interpreter_stack_depth() == 0);
  (void)tw::vmap(tw::grad(f))(sample({3}));
  REQUIRE(tw::interpreter_stack_depth() == 0);

  auto thrower = [](auto x) -> decltype(x) { throw std::runtime_error("boom"); };
  REQUIRE_THROWS_AS(tw::vmap(tw::grad(thrower))(sample({3})), std::runtime_error);
  REQUIRE(tw::interpreter_stack_depth() == 0);
  REQUIRE(tw::is_grad_enabled());

  std::function<value(value)> rthrow = [](value) -> value { throw std::runtime_error("boom"); };
  {
    tw::no_grad ng;
    REQUIRE_THROWS_AS(tw::vmap(tw::grad(rthrow))(sample({3})), std::runtime_error);
    REQUIRE_FALSE(tw::is_grad_enabled());
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
  REQUIRE(tw::is_grad_enabled());
  // And the next call works.
  require_close(tw::grad(f)(0.5), std::cos(0.5));
}

TEST_CASE("retrieve_current_interpreter and temporarily_pop_interpreter_stack") {
  REQUIRE_THROWS_AS(tw::retrieve_current_interpreter(), tw::error);
  std::function<value(value)> f = [](value x) {
    const auto& top = tw::retrieve_current_interpreter();
    REQUIRE(top.key == tw::transform_type::grad);
    REQUIRE(tw::runtime::grad_interpreter(top).level() == 2);
    REQUIRE_THROWS_WITH(tw::runtime::vmap_interpreter(top), Catch::Contains("expected a vmap interpreter, got grad"));
    {
      tw::temporarily_pop_interpreter_stack pop;
      REQUIRE(tw::retrieve_current_interpreter().key == tw::transform_type::vmap);
      REQUIRE(tw::runtime::vmap_interpreter(tw::retrieve_current_interpreter()).batch_size() == 3);
    }
    REQUIRE(tw::retrieve_current_interpreter().key == tw::transform_type::grad);
    return tw::sin(x);
  };
  (void)tw::vmap(tw::grad(f))(sample({3}));
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

TEST_CASE("grad inside no_grad still computes gradients (both paths)") {
  auto f = [](auto x) { return x * x; };
  std::function<value(value)> fr = [](value x) { return x * x; };
  tw::no_grad ng;
  require_close(tw::grad(f)(3.0), 6.0, 0);
  require_close(tw::grad(fr)(3.0).item(), 6.0, 0);
}

TEST_CASE("no_grad inside grad stops gradients (both paths)") {
  auto f = [](auto x) {
    auto c = [&] {
      tw::no_grad ng;
      return x * x;
    }();
    return c + x;  // c is a constant: d/dx = 1
  };
  require_close(tw::grad(f)(3.0), 1.0, 0);
  std::function<value(value)> fr = [&](value x) { return f(x); };
  require_close(tw::grad(fr)(3.0).item(), 1.0, 0);
}

TEST_CASE("grad entered under no_grad lowers under no_grad: the outer grad does not see its ops") {
  // Inside the outer grad, an inner grad is entered with grad mode off. Its work on the outer
  // level is not recorded, so its result is a constant for the outer grad (functorch semantics).
  auto outer = [](auto x) {
    auto r = [&] {
      tw::no_grad ng;
      return tw::grad([&](auto y) { return x * y; })(1.0);  // = x, but untracked
    }();
    return x * r;  // d/dx = r = x (not 2x)
  };
  require_close(tw::grad(outer)(1.5), 1.5, 1e-12);
  std::function<value(value)> outer_r = [](value x) {
    std::function<value(value)> inner = [&](value y) { return x * y; };
    value r = [&] {
      tw::no_grad ng;
      return tw::grad(inner)(value(1.0));
    }();
    return x * r;
  };
  require_close(tw::grad(outer_r)(1.5).item(), 1.5, 1e-12);
}

TEST_CASE("no_fwd_grad inside jvp stops tangents; jvp entered under no_fwd_grad lowers under it (both paths)") {
  // The forward-mode counterparts of the two grad cases above.
  auto stopped = [](auto x) {
    auto c = [&] {
      tw::no_fwd_grad off;
      return x * x;
    }();
    return c + x;  // c is a constant: tangent 1
  };
  require_close(std::get<1>(tw::jvp(stopped, std::tuple{3.0}, std::tuple{1.0})), 1.0, 0);
  std::function<value(value)> stopped_r = [&](value x) { return stopped(x); };
  require_close(std::get<1>(tw::jvp(stopped_r, std::tuple{value(3.0)}, std::tuple{value(1.0)})).item(), 1.0, 0);

  // An inner jvp entered with forward mode off: its ops on the outer level carry no tangent, so
  // r = x is a constant for the outer jvp and d(x r)/dx = r (not 2x).
  auto outer = [](auto x) {
    auto r = [&] {
      tw::no_fwd_grad off;
      return std::get<1>(tw::jvp([&](auto y) { return x * y; }, std::tuple{1.0}, std::tuple{1.0}));
    }();
    return x * r;
  };
  require_close(std::get<1>(tw::jvp(outer, std::tuple{1.5}, std::tuple{1.0})), 1.5, 1e-12);
  std::function<value(value)> outer_r = [](value x) {
    std::function<value(value)> inner = [&](value y) { return x * y; };
    value r = [&] {
      tw::no_fwd_grad off;
      return std::get<1>(tw::jvp(inner, std::tuple{value(1.0)}, std::tuple{value(1.0)}));
    }();
    return x * r;
  };
  require_close(std::get<1>(tw::jvp(outer_r, std::tuple{value(1.5)}, std::tuple{value(1.0)})).item(), 1.5, 1e-12);
}

namespace {
// A user op with a base kernel and batching rule but no VJP rule.
struct no_vjp_op {
  static constexpr const char* name = "no_vjp";
  template <class X>
  auto base(const X& x) const {
    return tw::kernels::map(x, [](auto v) { return 2 * v; });
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return tw::call_op(*this, x.value);
  }
};
}  // namespace

TEST_CASE("a missing kernel or an unknown transform key gives tower::error naming both") {
  std::function<value(value)> f = [](value x) { return tw::call_op(no_vjp_op{}, x); };
  REQUIRE_THROWS_WITH(tw::grad(f)(1.0),
                      Catch::Contains("no_vjp") && Catch::Contains("VJP rule") && Catch::Contains("'grad'"));
  REQUIRE(tw::vmap(f)(sample({2})).to_tensor().shape() == tw::shape_t{2});  // has a batching rule

  // It has no JVP rule either.
  REQUIRE_THROWS_WITH(tw::jvp(f, std::tuple{1.0}, std::tuple{1.0}),
                      Catch::Contains("no_vjp") && Catch::Contains("JVP rule") && Catch::Contains("'jvp'"));
  // A key outside transform_type.
  {
    tw::interpreter_scope scope(static_cast<tw::transform_type>(7), 1);
    value x = tw::dyn::wrap(static_cast<tw::transform_type>(7), 1, scope.entry().serial, value(1.0));
    REQUIRE_THROWS_WITH(tw::sin(x), Catch::Contains("'sin'") && Catch::Contains("unknown transform key 7"));
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

TEST_CASE("a grad value that escapes its transform acts as a constant (dead wrapper)") {
  // Static path: the escaped wrapper's tape is gone; using it computes with its primal.
  tw::grad_value<double, 1> leaked{};
  (void)tw::grad([&](auto x) {
    // (The same lambda is also instantiated one closure level up, where x has another type.)
    if constexpr (std::is_same_v<decltype(x), tw::grad_value<double, 1>>) leaked = x * 2.0;
    return x;
  })(3.0);
  auto later = leaked * 5.0;  // no live grad: the value is a constant
  REQUIRE(later.primal == 30.0);
  REQUIRE(later.node == nullptr);
  // Used inside a new grad, it is a constant there too. (The gradient keeps the captured
  // value's level in its type, transforms/static/level.hpp: here a dead one, so a constant wrapper.)
  const auto g = tw::grad([&](auto y) { return y * leaked; })(1.0);
  static_assert(std::is_same_v<decltype(g), const tw::grad_value<double, 1>>);
  REQUIRE(g.primal == 6.0);
  REQUIRE(g.node == nullptr);

  // Runtime path.
  value rleak;
  std::function<value(value)> f = [&](value x) {
    rleak = x * 2.0;
    return x;
  };
  (void)tw::grad(f)(3.0);
  REQUIRE((rleak * 5.0).item() == 30.0);
}
