// Diagnostic 6: a user-defined op with a VJP rule but no JVP rule, under hessian (forward over
// reverse): the first error names the op and says that forward mode needs its JVP rule.
// expect: op twice (twice_op) has no JVP rule, which forward mode (jvp, jacfwd, hessian) needs; give it a jvp member
// expect-clang: always_false<twice_op>
// expect-clang: "op: has no JVP rule, which forward mode (jvp, jacfwd, hessian) needs; give it a jvp member
#include <tuple>
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
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    return std::make_tuple(2.0 * g);
  }
};
inline constexpr tw::op_fn<twice_op> twice{};

int main() {
  tw::tensor<double> x({2}, {1, 2});
  tw::tensor<double> h = tw::hessian([](auto v) { return tw::sum(twice(v) * v); })(x);
  return h.numel() == 0;
}
