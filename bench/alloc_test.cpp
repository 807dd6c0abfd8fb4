// Heap allocations per op on the static path for scalar functions: zero (the static path's
// promise: no heap allocation per op). Counted with a replaced global operator new; the per-op figure is the
// difference between a 20-op and a 10-op chain, so per-call costs (the tape) cancel out.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <tower/tower.hpp>

#include "bench/alloc_counter.hpp"

namespace tw = tower;

namespace {

auto chain10 = [](auto x) {
  auto a = tw::sin(x) * x;
  auto b = tw::exp((a + 1.0) * 0.1);
  auto c = tw::cos(b - x);
  return tw::tanh(c * c) * x;
};
auto chain20 = [](auto x) { return chain10(chain10(x) + x); };  // 21 ops

template <class F>
std::size_t allocations_of(F&& f) {
  f();  // warm up: thread-locals, the interpreter stack's vector
  const std::size_t before = tower::bench::allocations();
  f();
  return tower::bench::allocations() - before;
}

}  // namespace

TEST_CASE("grad of a scalar chain allocates nothing per op") {
  volatile double x = 0.7;
  const std::size_t a10 = allocations_of([&] { return tw::grad(chain10)(x); });
  const std::size_t a20 = allocations_of([&] { return tw::grad(chain20)(x); });
  INFO("grad: " << a10 << " allocations for 10 ops, " << a20 << " for 21 ops");
  CHECK(a20 == a10);
  CHECK(a10 == 0);  // nor per call: the tape's node list lives in its arena
}

TEST_CASE("grad(grad(f)) of a scalar chain allocates nothing per op") {
  volatile double x = 0.7;
  const std::size_t a10 = allocations_of([&] { return tw::grad(tw::grad(chain10))(x); });
  const std::size_t a20 = allocations_of([&] { return tw::grad(tw::grad(chain20))(x); });
  INFO("grad(grad): " << a10 << " allocations for 10 ops, " << a20 << " for 21 ops");
  CHECK(a20 == a10);
}

TEST_CASE("the allocation counter sees allocations") {
  const std::size_t n = allocations_of([] { return std::vector<double>(10).size(); });
  CHECK(n == 1);
}
