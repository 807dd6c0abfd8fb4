// Transforms from several threads at once: the runtime interpreter stack and grad mode are
// thread_local, so threads never see each other's levels, tapes or grad mode. Each thread
// checks its own results against the same computation run alone on the main thread.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {

constexpr int thread_count = 4;
constexpr int rounds = 40;

auto logistic = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };

/// Everything one thread computes in one round, on both paths.
struct results {
  tensor<double> per_example_static;   // vmap(grad(logistic)) on the static path
  tensor<double> per_example_runtime;  // the same on the runtime path
  double third_derivative_static = 0;  // grad(grad(grad(f)))
  double third_derivative_runtime = 0;
  double grad_under_no_grad = 0;   // grad entered under no_grad still differentiates
  double no_grad_inside_grad = 0;  // no_grad inside grad stops the gradient
  bool error_seen = false;         // a tower::error raised and caught mid-round
  std::size_t depth_after = 99;
  bool grad_mode_after = false;
};

results compute(int seed) {
  const tensor<double> w = sample({4}, -1, 1, static_cast<unsigned>(seed));
  const tensor<double> X = sample({6, 4}, -1, 1, static_cast<unsigned>(seed + 100));
  const tensor<double> Y = sample({6}, -1, 1, static_cast<unsigned>(seed + 200));
  const double x0 = 0.1 * seed + 0.2;
  results r;
  r.per_example_static = tw::vmap(tw::grad(logistic), tw::in_dims(tw::none, 0, 0))(w, X, Y);

  std::function<value(value, value, value)> lr = [](value a, value b, value c) { return logistic(a, b, c); };
  r.per_example_runtime = tw::vmap(tw::grad(lr), tw::in_dims(tw::none, 0, 0))(w, X, Y).to_tensor();

  auto f = [](auto x) { return tw::sin(x) * tw::exp(x); };
  r.third_derivative_static = tw::grad(tw::grad(tw::grad(f)))(x0);
  std::function<value(value)> g = [](value x) { return tw::sin(x) * tw::exp(x); };
  for (int i = 0; i < 3; ++i) g = tw::grad(g);
  r.third_derivative_runtime = g(value(x0)).item();

  {
    tw::no_grad off;  // this thread only
    r.grad_under_no_grad = tw::grad(f)(x0);
  }
  r.no_grad_inside_grad = tw::grad([](auto x) {
    auto c = [&] {
      tw::no_grad off;
      return x * x;  // a constant for the grad
    }();
    return c + x;
  })(x0);

  try {
    (void)tw::vmap([](auto a, auto b) { return a + b; })(X, w);  // batch sizes 6 and 4
  } catch (const tw::error&) {
    r.error_seen = true;
  }
  r.depth_after = tw::interpreter_stack_depth();
  r.grad_mode_after = tw::is_grad_enabled();
  return r;
}

/// max_rel_err without Catch's assertions, which are not thread-safe: infinity when the shapes differ.
double rel_err(const tensor<double>& a, const tensor<double>& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double e = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i)
    e = std::max(e, std::abs(a.data()[i] - b.data()[i]) / std::max(1.0, std::abs(b.data()[i])));
  return e;
}

bool same(const tensor<double>& a, const tensor<double>& b) { return rel_err(a, b) == 0.0; }

}  // namespace

TEST_CASE("transforms on several threads at once give each thread its own, correct results") {
  // The references, computed alone on this thread.
  std::vector<results> expected;
  for (int t = 0; t < thread_count; ++t) expected.push_back(compute(t + 1));
  for (const auto& e : expected) {
    REQUIRE(e.error_seen);
    REQUIRE(e.depth_after == 0);
    REQUIRE(e.grad_mode_after);
    require_close(e.per_example_runtime, e.per_example_static, 1e-12);
    require_close(e.third_derivative_runtime, e.third_derivative_static, 1e-12);
  }

  // Grad mode is per thread: this thread runs under no_grad while the others compute.
  tw::no_grad main_thread_off;
  std::vector<std::vector<std::string>> failures(thread_count);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t) {
    threads.emplace_back([&, t] {
      auto& fail = failures[static_cast<std::size_t>(t)];
      if (!tw::is_grad_enabled()) fail.push_back("a new thread starts with grad mode off");
      ready.fetch_add(1);
      while (ready.load() < thread_count) std::this_thread::yield();  // start together
      for (int round = 0; round < rounds; ++round) {
        const results r = compute(t + 1);
        const results& e = expected[static_cast<std::size_t>(t)];
        const std::string at = "round " + std::to_string(round) + ": ";
        if (!same(r.per_example_static, e.per_example_static)) fail.push_back(at + "static vmap(grad) differs");
        if (!same(r.per_example_runtime, e.per_example_runtime)) fail.push_back(at + "runtime vmap(grad) differs");
        if (r.third_derivative_static != e.third_derivative_static) fail.push_back(at + "static grad^3 differs");
        if (r.third_derivative_runtime != e.third_derivative_runtime) fail.push_back(at + "runtime grad^3 differs");
        if (r.grad_under_no_grad != e.grad_under_no_grad) fail.push_back(at + "grad under no_grad differs");
        if (r.no_grad_inside_grad != e.no_grad_inside_grad) fail.push_back(at + "no_grad inside grad differs");
        if (!r.error_seen) fail.push_back(at + "the batch-size error was not raised");
        if (r.depth_after != 0) fail.push_back(at + "interpreter stack not empty");
        if (!r.grad_mode_after) fail.push_back(at + "grad mode not restored");
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE_FALSE(tw::is_grad_enabled());  // the main thread's mode, untouched by the others
  for (int t = 0; t < thread_count; ++t) {
    INFO("thread " << t);
    const auto& f = failures[static_cast<std::size_t>(t)];
    CHECK(f.empty());
    for (const auto& m : f) UNSCOPED_INFO(m);
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
}

namespace {
using rfn = std::function<value(value)>;

/// Runs body on a new thread and returns the message of the tower::error it raised ("" if none).
template <class F>
std::string error_on_new_thread(F body) {
  std::string message = "(no error)";
  std::thread([&] {
    try {
      body();
    } catch (const tw::error& e) {
      message = e.what();
    }
  }).join();
  return message;
}
}  // namespace

TEST_CASE("a batched value that escaped a vmap on another thread is dead there too, both paths") {
  // Each thread's first vmap is level 1: only a process-unique serial tells thread A's level-1
  // batch from thread B's, which would otherwise take A's rows as its own.
  const tensor<double> X = sample({3, 2}, -1, 1, 1), Z = sample({3, 2}, -1, 1, 2);
  std::optional<tw::batched<tensor<double>, 1>> leaked;
  value rleaked;
  std::thread([&] {
    (void)tw::vmap([&](auto x) {
      if constexpr (std::is_same_v<decltype(x), tw::batched<tensor<double>, 1>>) leaked = x;
      return x;
    })(X);
    (void)tw::vmap(rfn([&](value x) {
      rleaked = x;
      return x;
    }))(X);
  }).join();
  REQUIRE(leaked);
  const std::string words = "was used after that vmap returned";
  CHECK_THAT(error_on_new_thread([&] { (void)tw::vmap([&](auto z) { return z + *leaked; })(Z); }),
             Catch::Contains(words));
  CHECK_THAT(error_on_new_thread([&] {
               (void)tw::vmap(rfn([](value z) { return z; }))(
                   Z);  // so that the next vmap is this thread's second, as rleaked's
               (void)tw::vmap(rfn([&](value z) { return z + rleaked; }))(Z);
             }),
             Catch::Contains(words));
  CHECK_THAT(error_on_new_thread([&] { (void)tw::sin(rleaked); }), Catch::Contains(words));
}

TEST_CASE("a grad value that escaped is a constant on every thread that uses it at once, both paths") {
  // The escaped values' tapes (static) and graph nodes (runtime) belong to the grad that made
  // them: a grad on another thread must not record them, let alone write to them in its backward
  // pass (run this test under -fsanitize=thread to check for races).
  const tensor<double> x0 = sample({3}, -1, 1, 3);
  std::optional<tw::grad_value<tensor<double>, 1>> leaked;
  value rleaked;
  // Made by a thread's first and second grad, as the workers' first round makes theirs.
  std::thread([&] {
    (void)tw::grad([&](auto x) {
      if constexpr (std::is_same_v<decltype(x), tw::grad_value<tensor<double>, 1>>) leaked = x * tw::sin(x);
      return tw::sum(x);
    })(x0);
    (void)tw::grad(rfn([&](value x) {
      rleaked = x * tw::sin(x);
      return tw::sum(rleaked * x);
    }))(x0);
  }).join();
  REQUIRE(leaked);
  const tensor<double> c = x0 * tw::sin(x0);  // the escaped values' primal
  std::vector<std::vector<std::string>> failures(thread_count);
  std::vector<std::thread> threads;
  for (int t = 0; t < thread_count; ++t)
    threads.emplace_back([&, t] {
      auto& fail = failures[static_cast<std::size_t>(t)];
      const tensor<double> y = sample({3}, -1, 1, static_cast<unsigned>(10 + t));
      // d/dy sum(y² c) = 2 y c: the escaped value contributes its primal only.
      const tensor<double> expected = 2.0 * y * c;
      for (int round = 0; round < rounds; ++round) {
        // The gradient keeps the captured value's level in its type (transforms/static/level.hpp): a dead
        // one here, so a constant wrapper whose primal is the gradient.
        const tensor<double> gs = tw::grad([&](auto v) { return tw::sum(v * v * *leaked); })(y).primal;
        const tensor<double> gr = tw::grad(rfn([&](value v) { return tw::sum(v * v * rleaked); }))(y).to_tensor();
        // Nested: the inner grad's gradient 2 v² c, differentiated by the outer one: 4 v c.
        const tensor<double> gg =
            tw::grad(rfn([&](value v) {
              return tw::sum(tw::grad(rfn([&](value u) { return tw::sum(u * u * v * rleaked); }))(v));
            }))(y)
                .to_tensor();
        if (rel_err(gs, expected) > 1e-12) fail.push_back("static gradient differs");
        if (rel_err(gr, expected) > 1e-12) fail.push_back("runtime gradient differs");
        if (rel_err(gg, 2.0 * expected) > 1e-12) fail.push_back("runtime nested gradient differs");
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < thread_count; ++t) {
    INFO("thread " << t);
    const auto& f = failures[static_cast<std::size_t>(t)];
    CHECK(f.empty());
    for (std::size_t k = 0; k < std::min<std::size_t>(f.size(), 3); ++k) UNSCOPED_INFO(f[k]);
  }
}
