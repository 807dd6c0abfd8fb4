// Diagnostic 6: a user-defined op without a batching rule, used under strict vmap (otherwise the
// per-example fallback runs it): the op is named.
// expect: op twice (twice_op) has no batching rule for transform vmap
// expect-clang: always_false<twice_op>
// expect-clang: "op: has no batching rule for transform vmap
#include <tower/tower.hpp>
namespace tw = tower;

struct twice_op {
  static constexpr const char* name = "twice";
  static constexpr bool strict_vmap = true;
  template <class X>
  auto base(const X& x) const {
    return tw::kernels::map(x, [](auto v) { return 2 * v; });
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    return std::make_tuple(g * 2.0);
  }
};
inline constexpr tw::op_fn<twice_op> twice{};

int main() {
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> r = tw::vmap([](auto x) { return twice(x); })(X);
  return r.numel() == 0;
}
