// Diagnostic 2: argnums naming an argument twice (torch.func rejects it too).
// expect: jacfwd: argnums names argument 0 twice; list each argument once
// expect-clang: "jacfwd: argnums names argument 0 twice; list each argument once"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto y) { return x * y; };
  auto g = tw::jacfwd(f, tw::argnums<0, 0>)(1.0, 2.0);
  (void)g;
}
