// Diagnostic 12: a struct of tw::member_dim in_dims for an argument of another type.
// expect: vmap: an in_dims entry that is a struct of tw::member_dim needs an argument of the same struct template
// expect-clang: "vmap: an in_dims entry that is a struct of tw::member_dim needs an argument of the same struct template"
#include <boost/hana/define_struct.hpp>
#include <tuple>
#include <tower/tower.hpp>
namespace tw = tower;

template <class T>
struct two {
  BOOST_HANA_DEFINE_STRUCT(two, (T, a), (T, b));
};

int main() {
  auto f = [](const auto& t) { return std::get<0>(t) * std::get<1>(t); };
  tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6});
  auto r = tw::vmap(f, tw::in_dims(two<tw::member_dim>{0, tw::none}))(std::make_tuple(X, X));
  (void)r;
}
