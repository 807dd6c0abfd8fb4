#pragma once
// Linear algebra: matmul (batch-broadcasting, torch semantics for 1-D operands), mm, mv, bmm,
// vecdot, dot, outer, trace, solve, cholesky. The primitives (matmul, vecdot, solve, cholesky) work
// on stacks of matrices [..., n, m] (of vectors for vecdot) with Eigen base kernels; vmap's batch
// dim is one more stack dim.
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "dsl/layout.hpp"
#include "dsl/pointwise.hpp"
#include "dsl/reduce.hpp"
#include "tower/kernels/linalg.hpp"
#include "tower/static/op.hpp"

namespace tower {

namespace detail {
template <class X>
auto mT(const X& x) {
  return transpose(x, -2, -1);
}

/// Batching rule of a primitive on stacks of matrices: line up the logical stack dims.
template <class Op, class A, class B>
auto batch_matrices(const Op& op, const A& a, const B& b) {
  const std::int64_t r = std::max(logical_rank(a), logical_rank(b));
  return call_op(op, pad_batched(a, r), pad_batched(b, r));
}

/// A base kernel defined on tensors only: a scalar operand raises tower::error.
template <class A, class B, class K>
auto tensor_kernel(const char* op, const A& a, const B& b, K kernel) {
  if constexpr (kernels::is_plain_scalar_v<A> || kernels::is_plain_scalar_v<B>) {
    throw error(std::string(op) + ": scalar operand");
    return kernels::as_tensor<kernels::common_element_t<A, B>>(a);
  } else {
    return kernel(a, b);
  }
}

/// JVP of a bilinear op: op(ta, b) + op(a, tb). A constant operand (a weight under jacfwd) has
/// a zero tangent: its product is skipped when the other term alone has the result's type.
template <class Op, class A, class B, class TA, class TB>
auto bilinear_jvp(const Op& op, const A& a, const B& b, const TA& ta, const TB& tb) {
  const std::uint32_t has = take_tangent_inputs();
  using R = decltype(call_op(op, ta, b) + call_op(op, a, tb));
  if constexpr (std::is_same_v<decltype(call_op(op, a, tb)), R>)
    if (!(has & 1u)) return call_op(op, a, tb);
  if constexpr (std::is_same_v<decltype(call_op(op, ta, b)), R>)
    if (!(has & 2u)) return call_op(op, ta, b);
  return call_op(op, ta, b) + call_op(op, a, tb);
}

/// The inner sizes of a product agree: a's last dim and b's dim `b_dim`, named with the user's op
/// and shapes (a 1-D operand gets a dim added before the kernel sees it).
template <class A, class B>
void require_inner_sizes(const char* op, const A& a, const B& b, std::int64_t b_dim) {
  const shape_t sa = shape(a), sb = shape(b);
  const std::int64_t k = sa.back(),
                     k2 =
                         sb[static_cast<std::size_t>(b_dim < 0 ? b_dim + static_cast<std::int64_t>(sb.size()) : b_dim)];
  if (k != k2)
    throw error(std::string(op) + ": shapes " + detail::shape_str(sa) + " and " + detail::shape_str(sb) +
                " cannot be multiplied (" + std::to_string(k) + " != " + std::to_string(k2) + ")");
}

template <class X>
void require_rank_at_least(const char* op, const X& x, std::int64_t r) {
  if (rank(x) < r)
    throw error(std::string(op) + ": expected rank >= " + std::to_string(r) + ", got shape " +
                detail::shape_str(shape(x)));
}
}  // namespace detail

/// Matrix product of stacks of matrices [..., n, k] x [..., k, m], stack dims broadcast.
struct matmul_op {
  static constexpr const char* name = "matmul";
  template <class A, class B>
  auto base(const A& a, const B& b) const {
    return detail::tensor_kernel(name, a, b, [](const auto& x, const auto& y) { return kernels::matmul(x, y); });
  }
  template <class BS, class A, class B>
  auto batch(BS, const A& a, const B& b) const {
    return detail::batch_matrices(*this, a, b);
  }
  /// With the batch last (batched::batch_last): a plain matrix times a batch of X [k] or [k, m],
  /// physically [k, B] or [k, m, B], is one product by [k, B] or [k, m B], and its result keeps
  /// the batch last. std::nullopt for other operands.
  template <class BS, class A, class B>
  auto batch_last_rule(BS, const A& a, const B& b) const {
    using P = std::remove_cvref_t<decltype(b.value)>;
    std::optional<P> r;
    if constexpr (is_tensor_v<P> && std::is_same_v<std::remove_cvref_t<decltype(a.value)>, P> &&
                  !decltype(a.batched)::value && decltype(b.batched)::value) {
      const P& w = a.value;
      const P& x = b.value;
      if (w.dim() == 2 && (x.dim() == 2 || x.dim() == 3) && x.shape()[0] == w.shape()[1]) {
        shape_t s = x.shape();
        s[0] = w.shape()[0];
        const P y = x.dim() == 2 ? call_op(*this, w, x)
                                 : call_op(*this, w, x.with_shape({x.shape()[0], x.numel() / x.shape()[0]}));
        r = y.with_shape(std::move(s));
      }
    }
    return r;
  }
  template <class G, class O, class A, class B>
  auto vjp(const G& g, const O&, const A& a, const B& b) const {
    const std::uint32_t need = detail::take_needed_inputs();
    return std::make_tuple(
        detail::gradient_if(need & 1u, [&] { return sum_to_like(call_op(*this, g, detail::mT(b)), a); }),
        detail::gradient_if(need & 2u, [&] { return sum_to_like(b_gradient(g, a), b); }));
  }
  template <class O, class A, class B, class TA, class TB>
  auto jvp(const O&, const A& a, const B& b, const TA& ta, const TB& tb) const {
    return detail::bilinear_jvp(*this, a, b, ta, tb);
  }

 private:
  /// a^T g. When g is a stack of columns (b a vector, as in A x), as (g^T a)^T: transposing a
  /// column is free (kernels::permute) and g^T a reads a's rows, where a^T g would copy a^T
  /// first.
  template <class G, class A>
  auto b_gradient(const G& g, const A& a) const {
    using Columns = decltype(detail::mT(call_op(*this, detail::mT(g), a)));
    if constexpr (std::is_same_v<Columns, decltype(call_op(*this, detail::mT(a), g))>)
      if (shape(g).back() == 1) return detail::mT(call_op(*this, detail::mT(g), a));
    return call_op(*this, detail::mT(a), g);
  }
};

/// Inner products over the last dim, leading dims broadcast: [..., k] . [..., k] -> [...]
/// (torch.linalg.vecdot for real tensors). A primitive rather than sum(a * b): under vmap a dot
/// against an unbatched vector is one GEMV, and its VJP scales the other operand without
/// materialising the broadcast cotangent.
struct vecdot_op {
  static constexpr const char* name = "vecdot";
  template <class A, class B>
  auto base(const A& a, const B& b) const {
    return detail::tensor_kernel(name, a, b, [](const auto& x, const auto& y) { return kernels::vecdot(x, y); });
  }
  template <class BS, class A, class B>
  auto batch(BS, const A& a, const B& b) const {
    return detail::batch_matrices(*this, a, b);
  }
  template <class G, class O, class A, class B>
  auto vjp(const G& g, const O&, const A& a, const B& b) const {
    const std::uint32_t need = detail::take_needed_inputs();
    return std::make_tuple(detail::gradient_if(need & 1u, [&] { return sum_to_like(unsqueeze(g, -1) * b, a); }),
                           detail::gradient_if(need & 2u, [&] { return sum_to_like(unsqueeze(g, -1) * a, b); }));
  }
  template <class O, class A, class B, class TA, class TB>
  auto jvp(const O&, const A& a, const B& b, const TA& ta, const TB& tb) const {
    return detail::bilinear_jvp(*this, a, b, ta, tb);
  }
};

namespace detail {
/// vecdot of two 1-D tw::fixed values: the products added pairwise (fixeds::tree_sum), unrolled.
template <>
struct fixed_rule<vecdot_op> {
  template <class A, class B>
  TOWER_ALWAYS_INLINE static auto run(const vecdot_op&, const A& a, const B& b) {
    if constexpr (!(is_fixed_v<A> && is_fixed_v<B>) || fixeds::rank<A>() != 1 || fixeds::rank<B>() != 1) {
      return dual_unsupported{};
    } else {
      static_assert(A::size == B::size, "dot: the two tw::fixed vectors have different sizes");
      return fixeds::tree_sum<0, static_cast<std::size_t>(A::size)>(
          [&](auto j) TOWER_INLINE_LAMBDA { return a.e[decltype(j)::value] * b.e[decltype(j)::value]; });
    }
  }
};
}  // namespace detail

/// vecdot(a, b): sum(a * b, -1) for [..., k] and [..., k], leading dims broadcast.
/// \code
/// tw::tensor<double> X({2, 3}, {1, 2, 3, 4, 5, 6}), w{1.0, 0.0, -1.0};
/// auto y = tw::vecdot(X, w);  // tensor([-2, -2]): one inner product per row
/// if (y.shape() != tw::shape_t{2} || y(0) != -2 || y(1) != -2) throw std::runtime_error("vecdot");
/// \endcode
template <operand A, operand B>
auto vecdot(const A& a, const B& b) {
  if constexpr (is_fixed_v<A> || is_fixed_v<B>) {
    return call_op(vecdot_op{}, a, b);  // sizes checked at compile time
  } else {
    if (rank(a) < 1 || rank(b) < 1 || shape(a).back() != shape(b).back())
      throw error("vecdot: expected [..., k] and [..., k], got shapes " + detail::shape_str(shape(a)) + " and " +
                  detail::shape_str(shape(b)));
    return call_op(vecdot_op{}, a, b);
  }
}

/// Inner product of two 1-D tensors.
/// \code
/// if (tw::dot(tw::tensor<double>{1, 2, 3}, tw::tensor<double>{4, 5, 6}).item() != 32) throw std::runtime_error("dot");
/// \endcode
template <operand X, operand Y>
auto dot(const X& x, const Y& y) {
  if constexpr (is_fixed_v<X> || is_fixed_v<Y>) {
    return call_op(vecdot_op{}, x, y);  // sizes checked at compile time
  } else {
    if (rank(x) != 1 || rank(y) != 1 || shape(x) != shape(y))
      throw error("dot: expected two 1-D tensors of the same length, got shapes " + detail::shape_str(shape(x)) +
                  " and " + detail::shape_str(shape(y)));
    return call_op(vecdot_op{}, x, y);
  }
}

/// torch.matmul: 1-D x 1-D is a dot product, 1-D operands get a dim added (then removed), and
/// higher ranks are stacks of matrices with broadcast stack dims.
/// \code
/// tw::tensor<double> A{{1, 2}, {3, 4}}, v{1, 1};
/// auto y = tw::matmul(A, v);   // [2, 2] x [2] -> [2]
/// if (y.shape() != tw::shape_t{2} || y(1) != 7 || tw::matmul(A, A)(1, 1) != 22) throw std::runtime_error("matmul");
/// \endcode
template <operand A, operand B>
auto matmul(const A& a, const B& b) {
  const std::int64_t ra = rank(a), rb = rank(b);
  if (ra == 0 || rb == 0)
    throw error("matmul: both operands need rank >= 1, got shapes " + detail::shape_str(shape(a)) + " and " +
                detail::shape_str(shape(b)));
  detail::require_inner_sizes("matmul", a, b, rb == 1 ? 0 : -2);
  if (ra >= 2 && rb >= 2) return call_op(matmul_op{}, a, b);
  auto r = ra == 1 ? (rb == 1 ? call_op(matmul_op{}, unsqueeze(a, 0), unsqueeze(b, -1))
                              : call_op(matmul_op{}, unsqueeze(a, 0), b))
                   : call_op(matmul_op{}, a, unsqueeze(b, -1));
  shape_t s = shape(r);
  if (rb == 1) s.erase(s.end() - 1);
  if (ra == 1) s.erase(s.end() - (rb == 1 ? 1 : 2));
  return reshape(r, s);
}

/// Matrix x matrix ([n, k] x [k, m]).
/// \code
/// tw::tensor<double> A{{1, 2}, {3, 4}};
/// if (tw::mm(A, tw::eye<double>(2))(1, 0) != 3 || tw::mm(A, A)(0, 1) != 10) throw std::runtime_error("mm");
/// \endcode
template <operand A, operand B>
auto mm(const A& a, const B& b) {
  if (rank(a) != 2 || rank(b) != 2)
    throw error("mm: expected two matrices, got shapes " + detail::shape_str(shape(a)) + " and " +
                detail::shape_str(shape(b)));
  detail::require_inner_sizes("mm", a, b, 0);
  return call_op(matmul_op{}, a, b);
}
/// Matrix x vector ([n, k] x [k]).
/// \code
/// if (tw::mv(tw::tensor<double>{{1, 2}, {3, 4}}, tw::tensor<double>{1, -1})(1) != -1) throw std::runtime_error("mv");
/// \endcode
template <operand A, operand V>
auto mv(const A& a, const V& v) {
  if (rank(a) != 2 || rank(v) != 1)
    throw error("mv: expected a matrix and a vector, got shapes " + detail::shape_str(shape(a)) + " and " +
                detail::shape_str(shape(v)));
  detail::require_inner_sizes("mv", a, v, 0);
  return matmul(a, v);
}
/// Batched matrix x matrix ([b, n, k] x [b, k, m]).
/// \code
/// auto a = tw::reshape(tw::arange<double>(8), {2, 2, 2});   // [[0, 1], [2, 3]] and [[4, 5], [6, 7]]
/// auto c = tw::bmm(a, a);
/// if (c.shape() != tw::shape_t{2, 2, 2} || c(1, 0, 0) != 4 * 4 + 5 * 6) throw std::runtime_error("bmm");
/// \endcode
template <operand A, operand B>
auto bmm(const A& a, const B& b) {
  if (rank(a) != 3 || rank(b) != 3 || shape(a)[0] != shape(b)[0])
    throw error("bmm: expected [b, n, k] and [b, k, m], got shapes " + detail::shape_str(shape(a)) + " and " +
                detail::shape_str(shape(b)));
  detail::require_inner_sizes("bmm", a, b, 1);
  return call_op(matmul_op{}, a, b);
}
/// Outer product of two vectors: [n] x [m] -> [n, m].
/// \code
/// auto o = tw::outer(tw::tensor<double>{1, 2}, tw::tensor<double>{3, 4, 5});
/// if (o.shape() != tw::shape_t{2, 3} || o(1, 2) != 10) throw std::runtime_error("outer");
/// \endcode
template <operand A, operand B>
auto outer(const A& a, const B& b) {
  if (rank(a) != 1 || rank(b) != 1)
    throw error("outer: expected two vectors, got shapes " + detail::shape_str(shape(a)) + " and " +
                detail::shape_str(shape(b)));
  return unsqueeze(a, 1) * unsqueeze(b, 0);
}
/// Sum of the diagonal of a matrix.
/// \code
/// if (tw::trace(tw::tensor<double>{{1, 2}, {3, 4}}).item() != 5) throw std::runtime_error("trace");
/// \endcode
template <operand X>
auto trace(const X& x) {
  const shape_t s = shape(x);
  if (s.size() != 2) throw error("trace: expected a matrix, got shape " + detail::shape_str(s));
  using T = std::conditional_t<is_dyn_v<X>, double, scalar_type_t<X>>;
  return sum(x * eye<T>(s[0], s[1]));
}

/// Solution X of A X = B for square A [..., n, n] and B [..., n, k] (LU, Eigen); singular A
/// raises tower::error.
struct solve_op {
  static constexpr const char* name = "solve";
  template <class A, class B>
  auto base(const A& a, const B& b) const {
    return detail::tensor_kernel(name, a, b, [](const auto& x, const auto& y) { return kernels::solve(x, y); });
  }
  template <class BS, class A, class B>
  auto batch(BS, const A& a, const B& b) const {
    return detail::batch_matrices(*this, a, b);
  }
  template <class G, class O, class A, class B>
  auto vjp(const G& g, const O& out, const A& a, const B& b) const {
    auto gb = call_op(*this, detail::mT(a), g);
    return std::make_tuple(sum_to_like(-call_op(matmul_op{}, gb, detail::mT(out)), a), sum_to_like(gb, b));
  }
  template <class O, class A, class B, class TA, class TB>
  auto jvp(const O& out, const A& a, const B&, const TA& ta, const TB& tb) const {
    return call_op(*this, a, tb - call_op(matmul_op{}, ta, out));
  }
};

/// solve(A, B) with B a matrix (stack) or a vector ([n]: the result is [n]).
/// \code
/// tw::tensor<double> A{{2, 1}, {1, 3}}, b{3, 5};
/// auto x = tw::solve(A, b);   // 2 x0 + x1 = 3, x0 + 3 x1 = 5: x = (0.8, 1.4)
/// if (std::abs(x(0) - 0.8) > 1e-15 || std::abs(x(1) - 1.4) > 1e-15) throw std::runtime_error("solve");
/// \endcode
template <operand A, operand B>
auto solve(const A& a, const B& b) {
  detail::require_rank_at_least("solve", a, 2);
  if (rank(b) == 1) return squeeze(call_op(solve_op{}, a, unsqueeze(b, -1)), -1);
  return call_op(solve_op{}, a, b);
}

/// Lower Cholesky factor of symmetric positive-definite matrices [..., n, n] (Eigen LLT). The
/// kernel factors the symmetric part (A + Aᵀ)/2, so derivatives are the symmetric ones.
struct cholesky_op {
  static constexpr const char* name = "cholesky";
  template <class X>
  auto base(const X& x) const {
    if constexpr (kernels::is_plain_scalar_v<X>) {
      throw error("cholesky: scalar operand");
      return kernels::as_tensor<X>(x);
    } else {
      return kernels::cholesky(x);
    }
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
  /// Φ: the lower triangle with the diagonal halved.
  template <class X>
  static auto phi(const X& x) {
    const std::int64_t n = shape(x).back();
    using T = std::conditional_t<is_dyn_v<X>, double, scalar_type_t<X>>;
    tensor<T> m = zeros<T>({n, n});
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j <= i; ++j) m(i, j) = i == j ? T(0.5) : T(1);
    return x * m;
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O& l, const X&) const {
    // S = L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹, gradient sym(S) (Murray 2016).
    auto p = phi(call_op(matmul_op{}, detail::mT(l), g));
    auto y = call_op(solve_op{}, detail::mT(l), p);
    auto s = detail::mT(call_op(solve_op{}, detail::mT(l), detail::mT(y)));
    return std::make_tuple((s + detail::mT(s)) * 0.5);
  }
  template <class O, class X, class T>
  auto jvp(const O& l, const X&, const T& t) const {
    // dL = L Φ(L⁻¹ sym(dA) L⁻ᵀ).
    auto m = call_op(solve_op{}, l, (t + detail::mT(t)) * 0.5);
    auto inner = detail::mT(call_op(solve_op{}, l, detail::mT(m)));
    return call_op(matmul_op{}, l, phi(inner));
  }
};

/// cholesky(A): the lower-triangular L with A = L Lᵀ for a symmetric positive-definite A [.., n, n];
/// raises tower::error when A is not positive definite.
/// \code
/// auto L = tw::cholesky(tw::tensor<double>{{4, 2}, {2, 5}});   // [[2, 0], [1, 2]]
/// if (L(0, 0) != 2 || L(1, 0) != 1 || L(0, 1) != 0 || L(1, 1) != 2) throw std::runtime_error("cholesky");
/// \endcode
inline constexpr op_fn<cholesky_op> cholesky{};

}  // namespace tower
