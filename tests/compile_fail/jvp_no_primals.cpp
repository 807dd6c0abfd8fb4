// Diagnostic 7: jvp with no primals (the message named sin's base kernel before).
// expect: jvp: give at least one primal (and its tangent): f has nothing to differentiate
// expect-clang: "jvp: give at least one primal (and its tangent): f has nothing to differentiate"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto r = tw::jvp(tw::sin, std::tuple<>{}, std::tuple<>{});
  (void)r;
}
