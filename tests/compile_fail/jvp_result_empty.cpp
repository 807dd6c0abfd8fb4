// Diagnostic 13: jvp of a function returning an empty tuple.
// expect: jvp: f returns no output to differentiate (std::tuple<>)
// expect-clang: "jvp: f returns no output to differentiate (an empty pytree)"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto) { return std::tuple<>{}; };
  auto r = tw::jvp(f, std::tuple{1.0}, std::tuple{1.0});
  (void)r;
}
