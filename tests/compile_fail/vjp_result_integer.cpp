// Diagnostic 13: vjp of a function with no differentiable output (torch.func raises too).
// expect: vjp: f must return tensors or floating-point numbers (or a pytree of them), it returns int
// expect-clang: "vjp: f must return tensors or floating-point numbers (or a pytree of them)"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return 3; };
  auto r = tw::vjp(f, 1.0);
  (void)r;
}
