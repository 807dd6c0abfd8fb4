// Diagnostic 12: a Hana struct that is not a template over its leaf type cannot be a pytree
// (transforms rebuild it with their own leaves): the hint says how to declare it.
// expect: grad: argument 0 has type params, a Hana struct that is not a template over its leaf type; declare it as template <class T> struct params whose leaves have type T
// expect-clang: always_false<params>
// expect-clang: "grad: argument 0 is a Hana struct that is not a template over its leaf type; declare it as template <class T> struct S whose leaves have type T"
#include <boost/hana/adapt_struct.hpp>
#include <tower/tower.hpp>
namespace tw = tower;

struct params {
  tw::tensor<double> w, b;
};
BOOST_HANA_ADAPT_STRUCT(params, w, b);

int main() {
  params p{tw::tensor<double>({2}, {1, 2}), tw::tensor<double>({2}, {3, 4})};
  auto g = tw::grad([](const auto& q) { return tw::sum(q.w * q.b); })(p);
  (void)g;
}
