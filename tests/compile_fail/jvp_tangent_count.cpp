// Diagnostic 7: jvp with a different number of tangents than primals.
// expect: jvp: give one tangent per primal
// expect-clang: "jvp: give one tangent per primal"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto y) { return x * y; };
  auto [y, t] = tw::jvp(f, std::tuple{1.0, 2.0}, std::tuple{1.0});
  (void)y;
  (void)t;
}
