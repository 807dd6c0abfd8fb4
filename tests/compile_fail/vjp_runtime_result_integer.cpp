// Diagnostic 13: vjp of a type-erased function (the runtime path) with no differentiable output.
// expect: vjp: f must return tensors or floating-point numbers (or a pytree of them), it returns int
// expect-clang: "vjp: f must return tensors or floating-point numbers (or a pytree of them)"
#include <functional>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  std::function<int(tw::dyn::value)> f = [](tw::dyn::value) { return 3; };
  auto r = tw::vjp(f, 1.0);
  (void)r;
}
