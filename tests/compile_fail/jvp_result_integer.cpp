// Diagnostic 13: jvp of a function with no differentiable output.
// expect: jvp: f must return tensors or floating-point numbers (or a pytree of them), it returns int
// expect-clang: "jvp: f must return tensors or floating-point numbers (or a pytree of them)"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return 3; };
  auto r = tw::jvp(f, std::tuple{1.0}, std::tuple{1.0});
  (void)r;
}
