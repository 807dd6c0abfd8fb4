// Diagnostic 3: out_dims with the wrong number of entries for the results.
// expect: vmap: out_dims has 3 entries but f returns 2 results
// expect-clang: always_false<tower::out_dims_t<long, long, long>
// expect-clang: "vmap: out_dims has 3 entries but f returns 2 results"
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  auto f = [](auto x) { return std::make_tuple(x * 2.0, tw::sin(x)); };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = tw::vmap(f, tw::in_dims(0), tw::out_dims(0, 1, 0))(X);
  (void)r;
}
