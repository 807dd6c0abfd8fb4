// Diagnostic 6: an op whose base kernel does not accept the argument types: the op is named.
// expect: op scalar_only (scalar_only_op) has no base kernel for arguments (tower::tensor<double>)
// expect-clang: always_false<scalar_only_op, tower::tensor<double>>
// expect-clang: "op: has no base kernel for these argument types
#include <tower/tower.hpp>
namespace tw = tower;

struct scalar_only_op {
  static constexpr const char* name = "scalar_only";
  double base(double x) const { return 2 * x; }
};
inline constexpr tw::op_fn<scalar_only_op> scalar_only{};

int main() {
  tw::tensor<double> x({3}, {1, 2, 3});
  auto r = scalar_only(x);
  (void)r;
}
