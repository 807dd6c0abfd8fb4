// Misuse found only at run time: each raises tower::error with the words of docs/diagnostics.md,
// on both paths, and afterwards the interpreter stack and grad mode are as they were and the next
// transform call works.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {

using rfn = std::function<value(value)>;
using rfn2 = std::function<value(value, value)>;

/// A transform call that works, on both paths: the "next call" after every error.
void require_transforms_work() {
  auto f = [](auto x) { return tw::sin(x) * x; };
  require_close(tw::grad(f)(0.5), std::cos(0.5) * 0.5 + std::sin(0.5), 1e-12);
  rfn fr = [](value x) { return tw::sin(x) * x; };
  require_close(tw::grad(fr)(0.5).item(), std::cos(0.5) * 0.5 + std::sin(0.5), 1e-12);
  const tensor<double> X = sample({3, 2}, -1, 1, 5);
  require_close(tw::vmap(tw::grad([](auto w) { return tw::sum(w * w); }))(X), X * 2.0, 1e-12);
}

/// Runs `call` with grad mode on and off: it must raise tower::error containing every needle,
/// and leave the stack empty, grad mode (and the no-grad threshold) as they were, and the next
/// call working.
template <class Call>
void require_error(Call&& call, const std::vector<std::string>& needles) {
  for (const bool mode : {true, false}) {
    INFO("grad mode " << mode);
    {
      tw::grad_mode_guard guard(mode);
      bool thrown = false;
      try {
        call();
      } catch (const tw::error& e) {
        thrown = true;
        const std::string what = e.what();
        INFO("message: " << what);
        for (const auto& n : needles) {
          INFO("expected to contain: " << n);
          CHECK(what.find(n) != std::string::npos);
        }
      }
      REQUIRE(thrown);
      REQUIRE(tw::interpreter_stack_depth() == 0);
      REQUIRE(tw::is_grad_enabled() == mode);
      REQUIRE(tw::detail::grad_mode().no_grad_below == 0);
    }
    REQUIRE(tw::is_grad_enabled());
    require_transforms_work();
  }
}

// A user op whose VJP rule throws: an error raised in the middle of the backward pass.
struct throwing_vjp_op {
  static constexpr const char* name = "throwing_vjp";
  template <class X>
  auto base(const X& x) const {
    return tw::kernels::map(x, [](auto v) { return 3 * v; });
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return tw::call_op(*this, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    throw tw::error("throwing_vjp: backward failed");
    return std::make_tuple(g);
  }
};
inline constexpr tw::op_fn<throwing_vjp_op> throwing_vjp{};

// A user op with no VJP rule (the static path rejects it at compile time; see
// tests/compile_fail/grad_op_without_vjp.cpp).
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

TEST_CASE("grad of a function returning a tensor of rank > 0: the rank is known only at run time") {
  const tensor<double> x = sample({3});
  require_error([&] { (void)tw::grad([](auto v) { return v * 2.0; })(x); },
                {"grad: f must return a scalar", "it returned a value of shape [3]"});
  rfn fr = [](value v) { return v * 2.0; };
  require_error([&] { (void)tw::grad(fr)(x); }, {"grad: f must return a scalar", "it returned a value of shape [3]"});
  // Also under has_aux, and nested under vmap.
  require_error([&] { (void)tw::grad([](auto v) { return std::make_tuple(v * 2.0, v); }, tw::has_aux)(x); },
                {"grad: f must return a scalar, it returned a value of shape [3]"});
  const tensor<double> X = sample({2, 3, 4});
  require_error([&] { (void)tw::vmap(tw::grad([](auto v) { return tw::sum(v, 0); }))(X); },
                {"grad: f must return a scalar, it returned a value of shape [4]"});
  require_error([&] { (void)tw::vmap(tw::grad(rfn([](value v) { return tw::sum(v, 0); })))(X); },
                {"grad: f must return a scalar, it returned a value of shape [4]"});
}

TEST_CASE("argnums out of range on the runtime path has the static path's words") {
  std::array<value, 2> args{value(1.0), value(2.0)};
  auto call = [](const std::array<value, 2>& w) { return w[0] * w[1]; };
  require_error([&] { (void)tw::dyn::run_grad<false>(call, {0, 2}, args); },
                {"grad: argnums index 2 is out of range for a function of 2 arguments"});
}

TEST_CASE("vmap: batch sizes that differ name both arguments, both paths") {
  const tensor<double> a = sample({3, 2}), b = sample({4, 2});
  auto f = [](auto x, auto y) { return x + y; };
  const std::vector<std::string> words{"vmap: batch sizes differ", "argument 0 has size 3 at dim 0",
                                       "argument 1 has size 4 at dim 0"};
  require_error([&] { (void)tw::vmap(f)(a, b); }, words);
  require_error([&] { (void)tw::vmap(rfn2([](value x, value y) { return x + y; }))(a, b); }, words);
  // Inside grad: the vmap's error, and the grad's entry is popped too.
  require_error([&] { (void)tw::grad([&](auto w) { return tw::sum(tw::vmap(f)(a * w, b)); })(1.0); }, words);
}

TEST_CASE("vmap: in_dims out of range for the actual rank, both paths") {
  const tensor<double> a = sample({3, 2});
  const std::vector<std::string> words{"vmap: in_dims[0] = 2 is out of range for argument 0 of shape [3, 2]"};
  require_error([&] { (void)tw::vmap([](auto x) { return x; }, tw::in_dims(2))(a); }, words);
  require_error([&] { (void)tw::vmap(rfn([](value x) { return x; }), tw::in_dims(2))(a); }, words);
  require_error([&] { (void)tw::vmap([](auto x) { return x; }, tw::in_dims(-3))(a); },
                {"in_dims[0] = -3 is out of range"});
  // A runtime scalar has rank 0: no dim to batch (the static path rejects a double at compile
  // time, tests/compile_fail/vmap_batched_scalar.cpp).
  require_error([&] { (void)tw::vmap(rfn([](value x) { return x; }))(value(2.0)); },
                {"vmap: in_dims[0] = 0 is out of range for argument 0 of shape []"});
  // All arguments unbatched.
  require_error([&] { (void)tw::vmap([](auto x) { return x; }, tw::in_dims(tw::none))(a); },
                {"vmap: at least one argument must be batched"});
}

TEST_CASE("vmap: out_dims out of range for the result's rank, both paths and every form") {
  const tensor<double> a = sample({3, 2}), wide = sample({70, 2});
  const std::string message =
      "vmap: out_dims entry 2 is out of range for an output of shape [3, 2] (its batch dim included)";
  auto sq = [](auto x) { return tw::sum(x * x); };
  require_error([&] { (void)tw::vmap([](auto x) { return x; }, tw::in_dims(0), tw::out_dims(2))(a); }, {message});
  require_error([&] { (void)tw::vmap(tw::grad(sq), tw::out_dims(2))(a); }, {message});  // the per-example loop
  require_error([&] { (void)tw::vmap(tw::grad(sq), tw::out_dims(-3), tw::strategy::packets)(a); },
                {"vmap: out_dims entry -3 is out of range for an output of shape [3, 2]"});
  require_error([&] { (void)tw::vmap(rfn([](value x) { return x; }), tw::in_dims(0), tw::out_dims(2))(a); }, {message});
  require_error([&] { (void)tw::vmap(rfn([](value x) { return x * 2.0; }), tw::out_dims(2))(wide); },  // traced
                {"vmap: out_dims entry 2 is out of range for an output of shape [70, 2]"});
}

TEST_CASE("shape mismatches inside transforms name the op and both shapes, both paths") {
  const tensor<double> a = sample({3}), b = sample({4});
  auto f = [&](auto x) { return tw::sum(x * b); };
  require_error([&] { (void)tw::grad(f)(a); }, {"mul: shapes [3] and [4] are not broadcastable"});
  rfn fr = [&](value x) { return tw::sum(x * b); };
  require_error([&] { (void)tw::grad(fr)(a); }, {"mul: shapes [3] and [4] are not broadcastable"});
  const tensor<double> A = sample({2, 3}), Z = sample({5, 2, 3});
  // Under vmap the kernel sees physical shapes (the batch, here 2, is dim 0 of the batched one);
  // vmap adds the shapes the op's arguments have per example, those of f's own values, also
  // under nested vmaps and with the batch last.
  const std::string per_example = "(inside vmap, where the op's arguments have shapes [3] and [4] per example)";
  require_error([&] { (void)tw::vmap(tw::grad(f))(A); },
                {"mul: shapes [2, 3] and [4] are not broadcastable", per_example});
  require_error([&] { (void)tw::vmap(tw::grad(fr))(A); },
                {"mul: shapes [2, 3] and [4] are not broadcastable", per_example});
  require_error([&] { (void)tw::vmap(tw::vmap(f))(Z); }, {"mul: shapes [5, 2, 3] and [4]", per_example});
  require_error([&] { (void)tw::vmap(tw::vmap(fr))(Z); }, {"mul: shapes [5, 2, 3] and [4]", per_example});
  require_error([&] { (void)tw::vmap(f, tw::in_dims(1))(tw::transpose(A, 0, 1)); }, {per_example});
  auto g = [&](auto x) { return tw::dot(x, b); };
  require_error([&] { (void)tw::grad(g)(a); }, {"dot: expected two 1-D tensors of the same length", "[3] and [4]"});
}

TEST_CASE("a batched value used after its vmap returned is an error, both paths") {
  const tensor<double> X = sample({3, 2});
  std::optional<tw::batched<tensor<double>, 1>> leaked;
  (void)tw::vmap([&](auto x) {
    // (The lambda is also instantiated one closure level up, where x has another type.)
    if constexpr (std::is_same_v<decltype(x), tw::batched<tensor<double>, 1>>) leaked = x;
    return x;
  })(X);
  REQUIRE(leaked);
  const std::vector<std::string> words{"a value batched by a vmap", "was used after that vmap returned"};
  require_error([&] { (void)tw::sin(*leaked); }, words);
  // Used inside a new vmap of the same level: still the old, dead batch.
  require_error([&] { (void)tw::vmap([&](auto x) { return x + *leaked; })(X); }, words);

  value rleak;
  (void)tw::vmap(rfn([&](value x) {
    rleak = x;
    return x;
  }))(X);
  require_error([&] { (void)tw::sin(rleak); }, words);
  require_error([&] { (void)rleak.to_tensor(); }, words);
  require_error([&] { (void)tw::vmap(rfn([&](value x) { return x + rleak; }))(X); }, words);
}

TEST_CASE("a value still wrapped by a live transform cannot be read as a plain tensor") {
  rfn f = [](value x) {
    (void)x.to_tensor();
    return x;
  };
  require_error([&] { (void)tw::grad(f)(1.0); }, {"to_tensor on a value wrapped by a live grad (level 1)"});
}

TEST_CASE("an op without a VJP rule on the runtime path names the op and the transform") {
  rfn f = [](value x) { return tw::call_op(no_vjp_op{}, x); };
  require_error([&] { (void)tw::grad(f)(1.0); }, {"op 'no_vjp' has no VJP rule for transform 'grad'"});
  require_error([&] { (void)tw::vmap(tw::grad(f))(sample({2})); },
                {"op 'no_vjp' has no VJP rule for transform 'grad'"});
}

TEST_CASE("an error raised during the backward pass, both paths") {
  auto f = [](auto x) { return tw::sum(throwing_vjp(x) * x); };
  require_error([&] { (void)tw::grad(f)(sample({3})); }, {"throwing_vjp: backward failed"});
  require_error([&] { (void)tw::vmap(tw::grad(f))(sample({2, 3})); }, {"throwing_vjp: backward failed"});
  rfn fr = [](value x) { return tw::sum(throwing_vjp(x) * x); };
  require_error([&] { (void)tw::grad(fr)(sample({3})); }, {"throwing_vjp: backward failed"});
  require_error([&] { (void)tw::grad(tw::grad(fr))(1.0); }, {"throwing_vjp: backward failed"});
}

TEST_CASE("a captured value used only on traced arguments is still carried, never a wrong number") {
  // The level a closure call runs at comes from its result at the closure level, on traced
  // values (transforms/static/level.hpp, widened_level): a function that touches the captured value only
  // there still gets a gradient tracked by the outer grad, d/dx [x * d/dy (x y)] = 2x.
  auto outer = [](auto x) {
    auto inner = tw::grad([&](auto y) {
      if constexpr (tw::is_static_wrapper_v<decltype(y)>) return x * y;
      else return y;
    });
    return x * inner(1.0);
  };
  REQUIRE(std::abs(tw::grad(outer)(1.5) - 3.0) < 1e-12);
}

TEST_CASE("an error caught inside an outer transform leaves the outer transform's entry live") {
  const tensor<double> a = sample({3, 2}), b = sample({4, 2});
  auto outer = [&](auto x) {
    const std::size_t depth = tw::interpreter_stack_depth();
    CHECK(depth == 1);
    CHECK_THROWS_AS(tw::vmap([](auto p, auto q) { return p + q; })(a, b), tw::error);
    CHECK_THROWS_AS(tw::grad([](auto v) { return v * 2.0; })(a), tw::error);
    CHECK(tw::interpreter_stack_depth() == depth);
    CHECK(tw::is_grad_enabled());
    return x * x * x;
  };
  require_close(tw::grad(outer)(2.0), 12.0, 1e-12);
  rfn outer_r = [&](value x) {
    CHECK(tw::interpreter_stack_depth() == 1);
    CHECK_THROWS_AS(tw::vmap(rfn2([](value p, value q) { return p + q; }))(a, b), tw::error);
    CHECK(tw::interpreter_stack_depth() == 1);
    return x * x * x;
  };
  require_close(tw::grad(outer_r)(2.0).item(), 12.0, 1e-12);
  {
    tw::no_grad off;
    require_close(tw::grad(outer)(2.0), 12.0, 1e-12);
    REQUIRE_FALSE(tw::is_grad_enabled());
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

namespace {
// A user's own kind of tower::error, raised by a user op's kernel.
struct refused : tw::error {
  refused() : tw::error("refused: the kernel says no") {}
};
struct refusing_op {
  static constexpr const char* name = "refusing";
  template <class X>
  auto base(const X& x) const {
    if (tw::shape(x) == tw::shape_t{2, 3}) throw refused();
    if (tw::shape(x) == tw::shape_t{2, 4}) throw tw::error("refusing: shape [2, 4]");
    return x;
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return tw::call_op(*this, x.value);
  }
};
}  // namespace

TEST_CASE(
    "an error a kernel raises under vmap gets the per-example shapes; a user's own kind of error keeps its type") {
  auto f = [](auto x) { return tw::call_op(refusing_op{}, x); };
  std::function<value(value)> fr = [](value x) { return tw::call_op(refusing_op{}, x); };
  REQUIRE_THROWS_AS(tw::vmap(f)(sample({2, 3})), refused);
  REQUIRE_THROWS_AS(tw::vmap(fr)(sample({2, 3})), refused);
  REQUIRE_THROWS_WITH(tw::vmap(f)(sample({2, 3})), "tower: refused: the kernel says no");
  const std::string worded =
      "tower: refusing: shape [2, 4] (inside vmap, where the op's arguments have shapes [4] per example)";
  REQUIRE_THROWS_WITH(tw::vmap(f)(sample({2, 4})), worded);
  REQUIRE_THROWS_WITH(tw::vmap(fr)(sample({2, 4})), worded);
}
