// A user-defined op with its own batching rule and its own derivative, used under vmap and grad
// on both paths exactly like tower's built-in ops.
//
// `normalize` maps each row (last dim) of x to unit length: y = x / |x|. Written as a
// composition it would record sqrt, sum, mul and div on the tape; as an op it records one node
// with a hand-derived VJP (g - y <g, y>) / |x| and JVP (t - y <t, y>) / |x|. Its batching rule
// is one line: the op already works row-wise on any leading dims, so vmap's batch dim (dim 0 of
// the physical value) is just one more leading dim.
#include <cmath>
#include <cstdio>
#include <functional>

#include <tower/tower.hpp>

namespace tw = tower;

struct normalize_op {
  static constexpr const char* name = "normalize";

  // Base kernel on plain tensors (double or float): called at the bottom of every dispatch.
  template <class X>
  auto base(const X& x) const {
    using T = tw::kernels::element_t<X>;
    const tw::tensor<T> n = tw::kernels::map(
        tw::kernels::sum(tw::kernels::map(x, [](T v) { return v * v; }), {-1}, true), [](T v) { return std::sqrt(v); });
    return tw::kernels::zip("normalize", x, n, [](T a, T b) { return a / b; });
  }

  // Batching rule: the physical value has the batch in dim 0; the op is row-wise, so it applies
  // as is. (A rule gets bval{value, batched} per argument; see dsl/ for rules that must line up
  // batched and unbatched arguments.)
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return tw::call_op(*this, x.value);
  }

  // Derivative rules, written with tower's ops so they work at every level (grad of grad,
  // vmap of grad) and on both paths.
  template <class G, class O, class X>
  auto vjp(const G& g, const O& y, const X& x) const {
    return std::make_tuple((g - y * tw::sum(g * y, -1, true)) / tw::norm(x, 2.0, -1, true));
  }
  template <class O, class X, class T>
  auto jvp(const O& y, const X& x, const T& t) const {
    return (t - y * tw::sum(t * y, -1, true)) / tw::norm(x, 2.0, -1, true);
  }
};

inline constexpr tw::op_fn<normalize_op> normalize{};

int main() {
  // Cosine-similarity loss of one example: 1 - <normalize(W x), normalize(y)>.
  auto loss = [](auto w, auto x, auto y) { return 1.0 - tw::sum(normalize(tw::matmul(w, x)) * normalize(y)); };

  const tw::tensor<double> W = tw::randn<double>({3, 4}, 1), X = tw::randn<double>({5, 4}, 2),
                           Y = tw::randn<double>({5, 3}, 3);

  // Per-example gradients wrt W: vmap(grad) with W shared, on the static path...
  const tw::tensor<double> G = tw::vmap(tw::grad(loss), tw::in_dims(tw::none, 0, 0))(W, X, Y);
  // ...and on the runtime path (a type-erased function).
  using tw::dyn::value;
  std::function<value(value, value, value)> erased = [&](value w, value x, value y) { return loss(w, x, y); };
  const tw::tensor<double> Gr = tw::vmap(tw::grad(erased), tw::in_dims(tw::none, 0, 0))(W, X, Y).to_tensor();

  // Check example 0 against central finite differences.
  const tw::tensor<double> x0 = tw::narrow(X, 0, 0, 1), y0 = tw::narrow(Y, 0, 0, 1);
  auto f0 = [&](const tw::tensor<double>& w) { return loss(w, tw::reshape(x0, {4}), tw::reshape(y0, {3})).item(); };
  double max_err = 0;
  for (std::int64_t i = 0; i < W.numel(); ++i) {
    tw::tensor<double> wp = W, wm = W;
    wp.data()[i] += 1e-6;
    wm.data()[i] -= 1e-6;
    const double fd = (f0(wp) - f0(wm)) / 2e-6;
    max_err = std::max({max_err, std::abs(G.data()[i] - fd), std::abs(Gr.data()[i] - G.data()[i])});
  }
  std::printf("per-example gradients of a cosine loss through a custom op: shape [%lld, %lld, %lld]\n",
              static_cast<long long>(G.shape()[0]), static_cast<long long>(G.shape()[1]),
              static_cast<long long>(G.shape()[2]));
  std::printf("max |vmap(grad) - finite differences| (example 0), |static - runtime|: %.3g\n", max_err);
  return max_err < 1e-6 ? 0 : 1;
}
