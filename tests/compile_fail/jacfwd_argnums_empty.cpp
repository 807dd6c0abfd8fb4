// Diagnostic 2: argnums naming no argument (jacfwd returned an empty tuple before).
// expect: jacfwd: argnums must name at least one argument
// expect-clang: "jacfwd: argnums must name at least one argument"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return x * x; };
  auto j = tw::jacfwd(f, tw::argnums<>)(1.0);
  (void)j;
}
