// Diagnostic 13: vjp of a function returning an empty tuple.
// expect: vjp: f returns no output to differentiate (std::tuple<>)
// expect-clang: "vjp: f returns no output to differentiate (an empty pytree)"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::tuple<>{}; };
  auto r = tw::vjp(f, 1.0);
  (void)r;
}
