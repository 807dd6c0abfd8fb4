// Diagnostic 3: in_dims with the wrong number of entries for the arguments.
// expect: vmap: in_dims has 2 entries but f takes 3 arguments
// expect-clang: "vmap: in_dims has 2 entries but f takes 3 arguments"
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x, auto y, auto z) { return x * y + z; };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  tw::tensor<double> r = tw::vmap(f, tw::in_dims(0, 0))(X, X, X);
  return r.numel() == 0;
}
