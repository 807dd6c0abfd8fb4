// functorch cross-check, vmap: in_dims, out_dims, pytree outputs, nesting, and the batching rules
// of elementwise, reduction, product and layout ops, against functorch's numbers on both paths
// (tests/functorch/xcheck.hpp).
#include <catch2/catch.hpp>

#include <tuple>

#include "tests/functorch/xcheck.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using namespace tower::testing::functorch;

TEST_CASE("functorch cross-check: vmap") {
  const auto X43 = input("X43"), Y43 = input("Y43"), B34 = input("B34"), M33 = input("M33");
  const auto X423 = input("X423"), B432 = input("B432");
  const double s = number("s");

  xcheck<1>("vmap.sin", [](auto x) { return tw::sin(x); }, [&](auto f) { return tw::vmap(f)(X43); });
  xcheck<1>("vmap.sum", [](auto x) { return tw::sum(x); }, [&](auto f) { return tw::vmap(f)(X43); });
  xcheck<2>(
      "vmap.in_dims_none", [](auto x, auto b) { return tw::matmul(x, b); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(0, tw::none))(X43, B34); });
  xcheck<1>(
      "vmap.in_dims_1", [](auto x) { return x * 2.0 + tw::sum(x); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(1))(X43); });
  xcheck<1>(
      "vmap.in_dims_neg1", [](auto x) { return x * tw::sum(x); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(-1))(X43); });
  xcheck<1>(
      "vmap.out_dims_1", [](auto x) { return tw::exp(x); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(0), tw::out_dims(1))(X43); });
  xcheck<1>(
      "vmap.out_dims_0_applies_to_all", [](auto x) { return std::make_tuple(tw::sin(x), tw::sum(x)); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(0), tw::out_dims(0))(X43); });
  xcheck<1>(
      "vmap.out_dims_per_output", [](auto x) { return std::make_tuple(x * 2.0, tw::outer(x, x)); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(0), tw::out_dims(0, 1))(X43); });
  xcheck<2>(
      "vmap.tuple_out", [](auto x, auto y) { return std::make_tuple(x * y, tw::sum(x - y)); },
      [&](auto f) { return tw::vmap(f)(X43, Y43); });
  xcheck<2>(
      "vmap.nested", [](auto x, auto y) { return tw::dot(x, y); },
      [&](auto f) { return tw::vmap(tw::vmap(f, tw::in_dims(0, tw::none)), tw::in_dims(tw::none, 0))(X43, Y43); });
  xcheck<2>(
      "vmap.bmm", [](auto a, auto b) { return tw::matmul(a, b); }, [&](auto f) { return tw::vmap(f)(X423, B432); });
  xcheck<2>(
      "vmap.mv_unbatched_matrix", [](auto m, auto v) { return tw::matmul(m, v); },
      [&](auto f) { return tw::vmap(f, tw::in_dims(tw::none, 0))(M33, X43); });
  xcheck<2>("vmap.dot", [](auto x, auto y) { return tw::dot(x, y); }, [&](auto f) { return tw::vmap(f)(X43, Y43); });
  xcheck<1>("vmap.softmax", [](auto x) { return tw::softmax(x, -1); }, [&](auto f) { return tw::vmap(f)(X43); });
  xcheck<1>(
      "vmap.log_softmax_dim0", [](auto m) { return tw::log_softmax(m, 0); }, [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>("vmap.logsumexp", [](auto m) { return tw::logsumexp(m, 1); }, [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>("vmap.transpose", [](auto m) { return tw::transpose(m, 0, 1); }, [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>("vmap.reshape", [](auto m) { return tw::reshape(m, {6}); }, [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>(
      "vmap.permute_unsqueeze", [](auto m) { return tw::unsqueeze(tw::permute(m, {1, 0}), 0); },
      [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>("vmap.narrow", [](auto x) { return tw::narrow(x, 0, 1, 2); }, [&](auto f) { return tw::vmap(f)(X43); });
  xcheck<2>("vmap.cat", [](auto x, auto y) { return tw::cat({x, y}); }, [&](auto f) { return tw::vmap(f)(X43, Y43); });
  xcheck<2>(
      "vmap.stack_dim1", [](auto x, auto y) { return tw::stack({x, y}, 1); },
      [&](auto f) { return tw::vmap(f)(X43, Y43); });
  xcheck<1>(
      "vmap.amax_amin", [](auto m) { return std::make_tuple(tw::amax(m, 0), tw::amin(m, 1)); },
      [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>("vmap.prod", [](auto x) { return tw::prod(x); }, [&](auto f) { return tw::vmap(f)(X43); });
  xcheck<1>(
      "vmap.mean_var", [](auto m) { return std::make_tuple(tw::mean(m, 1), tw::var(m, 1)); },
      [&](auto f) { return tw::vmap(f)(X423); });
  xcheck<1>("vmap.norm", [](auto x) { return tw::norm(x); }, [&](auto f) { return tw::vmap(f)(X43); });
  xcheck<2>(
      "vmap.maximum_pow", [](auto x, auto y) { return tw::maximum(x, y) * tw::pow(tw::abs(x) + 1.0, 1.5); },
      [&](auto f) { return tw::vmap(f)(X43, Y43); });
  xcheck<2>(
      "vmap.unbatched_scalar_arg", [](auto x, auto c) { return x * c; },
      [&](auto f) { return tw::vmap(f, tw::in_dims(0, tw::none))(X43, s); });

  require_all_run("vmap.");
}
