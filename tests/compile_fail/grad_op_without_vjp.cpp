// Diagnostic 6: a user-defined op without a VJP rule, used under grad: the op is named.
// expect: op twice (twice_op) has no VJP rule for transform grad
// expect-clang: always_false<twice_op>
// expect-clang: "op: has no VJP rule for transform grad
#include <tower/tower.hpp>
namespace tw = tower;

struct twice_op {
  static constexpr const char* name = "twice";
  template <class X>
  auto base(const X& x) const {
    return tw::kernels::map(x, [](auto v) { return 2 * v; });
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return tw::call_op(*this, x.value);
  }
};
inline constexpr tw::op_fn<twice_op> twice{};

int main() {
  double g = tw::grad([](auto x) { return twice(x); })(1.0);
  return g > 0;
}
