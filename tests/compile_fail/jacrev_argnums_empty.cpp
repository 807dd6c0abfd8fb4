// Diagnostic 2: argnums naming no argument (the message named grad before).
// expect: jacrev: argnums must name at least one argument
// expect-clang: "jacrev: argnums must name at least one argument"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return x * x; };
  auto j = tw::jacrev(f, tw::argnums<>)(1.0);
  (void)j;
}
