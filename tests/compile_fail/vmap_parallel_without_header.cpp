// tw::parallel parses with <tower/tower.hpp> alone; running it needs <tower/parallel.hpp> and oneTBB.
// expect: tw::parallel needs #include <tower/parallel.hpp> and oneTBB
// expect-clang: "tw::parallel needs #include <tower/parallel.hpp> and oneTBB
#include <tower/tower.hpp>
namespace tw = tower;

int main() {
  const tw::tensor<double> X({4, 3}, std::vector<double>(12, 1.0));
  (void)tw::vmap([](auto x) { return tw::sum(x * x); }, tw::parallel)(X);
}
