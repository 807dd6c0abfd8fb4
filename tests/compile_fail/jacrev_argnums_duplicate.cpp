// Diagnostic 2: argnums naming an argument twice (torch.func rejects it too).
// expect: jacrev: argnums names argument 1 twice; list each argument once
// expect-clang: "jacrev: argnums names argument 1 twice; list each argument once"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto y) { return x * y; };
  auto g = tw::jacrev(f, tw::argnums<1, 0, 1>)(1.0, 2.0);
  (void)g;
}
