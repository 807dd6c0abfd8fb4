// Diagnostic 12: the same non-template Hana struct as a batched vmap argument.
// expect: vmap: argument 0 has type params, a Hana struct that is not a template over its leaf type; declare it as template <class T> struct params whose leaves have type T
// expect-clang: always_false<params>
// expect-clang: "vmap: argument 0 is a Hana struct that is not a template over its leaf type; declare it as template <class T> struct S whose leaves have type T"
#include <boost/hana/adapt_struct.hpp>
#include <tower/tower.hpp>
namespace tw = tower;

struct params {
  tw::tensor<double> w, b;
};
BOOST_HANA_ADAPT_STRUCT(params, w, b);

int main() {
  params p{tw::tensor<double>({3, 2}, {1, 2, 3, 4, 5, 6}), tw::tensor<double>({3, 2}, {1, 2, 3, 4, 5, 6})};
  tw::tensor<double> r = tw::vmap([](const auto& q) { return tw::sum(q.w * q.b); })(p);
  return r.numel() == 0;
}
