#pragma once
// Linear-algebra base kernels on tensor<T>, computed by Eigen (GEMM, LU, Cholesky) over the
// trailing two dims, with NumPy broadcasting of the leading (batch) dims.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "tower/kernels/eigen_headers.hpp"
#include "tower/kernels/base.hpp"

namespace tower::kernels {

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using const_matrix_map = Eigen::Map<const row_matrix<T>>;
template <class T>
using matrix_map = Eigen::Map<row_matrix<T>>;

/// Iterates the broadcast batch dims of two stacks of matrices: body(out_index, a_matrix, b_matrix).
template <class Body>
shape_t for_each_matrix_pair(const char* op, const shape_t& a, const shape_t& b, Body&& body) {
  const shape_t ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const shape_t batch = broadcast_shapes(op, ab, bb);
  for_each_broadcast(batch, ab, bb, body);
  return batch;
}

inline void require_matrices(const char* op, const shape_t& a, const shape_t& b) {
  if (a.size() < 2 || b.size() < 2)
    throw error(std::string(op) + ": expected matrices (rank >= 2), got shapes " + detail::shape_str(a) + " and " +
                detail::shape_str(b));
}

/// The positions of the nonzeros among the n entries at p, into pos, if there are at most n / 8
/// of them. Counts in blocks of 8 (a fixed trip count, which -O2 vectorises), looks inside a
/// block only when it has a nonzero, and stops once past n / 8: a dense operand costs a scan of
/// about an eighth of it.
template <class T>
bool sparse_positions(const T* p, std::int64_t n, std::vector<std::int64_t>& pos) {
  const std::size_t limit = static_cast<std::size_t>(n / 8);
  pos.clear();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int c = 0;
    for (int t = 0; t < 8; ++t) c += p[i + t] != T(0);
    if (c == 0) continue;
    for (int t = 0; t < 8; ++t)
      if (p[i + t] != T(0)) pos.push_back(i + t);
    if (pos.size() > limit) return false;
  }
  for (; i < n; ++i)
    if (p[i] != T(0)) pos.push_back(i);
  return pos.size() <= limit;
}

/// Whether the n x n matrix at p is diagonal: every entry off the diagonal is +0 or -0. The
/// entries off the diagonal are n - 1 runs of n, each between two diagonal entries; their bit
/// patterns are ORed without a branch, in four vectors of 32 bytes (GCC's and clang's vector
/// extension: an array of scalar accumulators vectorised under g++ only with AVX-512, and never
/// under clang), and the sign bit cleared at the end. A dense matrix fails on its first two
/// off-diagonal entries.
template <class T>
bool is_diagonal(const T* p, std::int64_t n) {
  using U = bits_of<T>;
  constexpr U magnitude = static_cast<U>(~(U(1) << (8 * sizeof(T) - 1)));
  if (n > 1 && ((std::bit_cast<U>(p[1]) | std::bit_cast<U>(p[n])) & magnitude)) return false;
  typedef U lanes __attribute__((vector_size(32)));
  constexpr std::int64_t L = 32 / sizeof(U);
  lanes a0 = {}, a1 = {}, a2 = {}, a3 = {};
  U rest = 0;
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    const T* run = p + i * (n + 1) + 1;
    std::int64_t j = 0;
    for (; j + 4 * L <= n; j += 4 * L) {
      lanes v0, v1, v2, v3;
      std::memcpy(&v0, run + j, sizeof v0);
      std::memcpy(&v1, run + j + L, sizeof v1);
      std::memcpy(&v2, run + j + 2 * L, sizeof v2);
      std::memcpy(&v3, run + j + 3 * L, sizeof v3);
      a0 |= v0;
      a1 |= v1;
      a2 |= v2;
      a3 |= v3;
    }
    for (; j < n; ++j) rest |= std::bit_cast<U>(run[j]);
  }
  const lanes a = a0 | a1 | a2 | a3;
  for (std::int64_t k = 0; k < L; ++k) rest |= a[k];
  return !(rest & magnitude);
}

/// out[i, c] = scale(i, c) * r[i, c] over a rows x m r, returning whether r is finite: x - x is
/// +0 for a finite x and NaN otherwise, and its bits are ORed in 8 lanes as r is read (a sum of
/// x * 0 instead chained the adds' latency: 2x slower).
template <class T, class Scale>
bool scale_checked(const T* r, std::int64_t rows, std::int64_t m, Scale scale, T* __restrict out) {
  using U = bits_of<T>;
  U acc[8] = {};
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* ri = r + i * m;
    T* o = out + i * m;
    std::int64_t c = 0;
    TOWER_LOOP_OF_BLOCKS
    for (; c + 8 <= m; c += 8) {
      TOWER_NO_ALIAS_LOOP
      for (std::int64_t u = 0; u < 8; ++u) {
        const T v = ri[c + u];
        o[c + u] = scale(i, c + u) * v;
        acc[u] |= std::bit_cast<U>(v - v);
      }
    }
    for (; c < m; ++c) {
      o[c] = scale(i, c) * ri[c];
      acc[0] |= std::bit_cast<U>(ri[c] - ri[c]);
    }
  }
  U any = 0;
  for (const U a : acc) any |= a;
  return any == 0;
}

/// The diagonal of the n x n matrix at p, in per-thread storage valid until the next call.
template <class T>
const T* diagonal_of(const T* p, std::int64_t n) {
  thread_local std::vector<T> d;  // n entries, not a shape
  d.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) d[static_cast<std::size_t>(i)] = p[i * n + i];
  return d.data();
}

/// diag(l) * r into out for a diagonal n x n l (r: n x m, or m x n when `r_transposed`), if r is
/// finite: skipping the zeros of l is exact only where 0 * r is 0. The check rides on the one
/// pass over r (scale_checked). false leaves out to be rewritten.
template <class T>
bool diagonal_product(const T* l, std::int64_t n, const T* r, std::int64_t m, bool r_transposed, T* __restrict out) {
  if (r_transposed) return transpose_into(r, m, n, out, diagonal_of(l, n));  // out[i, c] = l[i, i] r[c, i]
  return scale_checked(r, n, m, [l, n](std::int64_t i, std::int64_t) { return l[i * n + i]; }, out);
}

/// Whether the diagonal of the k x k matrix at p is all ones.
template <class T>
bool is_unit_diagonal(const T* p, std::int64_t k) {
  for (std::int64_t j = 0; j < k; ++j)
    if (p[j * k + j] != T(1)) return false;
  return true;
}

/// l * diag(r) into out for a rows x k l and a diagonal k x k r (jacfwd's basis with its batch
/// last, A e_j): each column of l scaled, if l is finite (see diagonal_product).
template <class T>
bool diagonal_right_product(const T* l, std::int64_t rows, std::int64_t k, const T* r, T* __restrict out) {
  const T* d = diagonal_of(r, k);
  return scale_checked(l, rows, k, [d](std::int64_t, std::int64_t c) { return d[c]; }, out);
}

/// l * r (rows x k times k x m, both row-major; `r_transposed`: r given as its transpose, m x k)
/// into out. Eigen's GEMM, except when l is mostly zeros and r finite: then one axpy of a row of
/// r per nonzero of l. The Jacobian transforms push an identity basis through matmul (jacrev:
/// diag(d) A; jacfwd: A e_j), where a GEMM multiplies by zeros almost only. Skipping a zero is
/// exact only where 0 * r is 0, hence finite r.
template <class T>
void product_into(const T* l, std::int64_t rows, std::int64_t k, const T* r, std::int64_t m, bool r_transposed,
                  T* out) {
  // A diagonal l (the basis after elementwise ops), found by one pass over l: one scaled row of r
  // per row of l.
  if (rows == k && m >= 8 && k >= 8 && is_diagonal(l, k) && diagonal_product(l, k, r, m, r_transposed, out)) return;
  thread_local std::vector<std::int64_t> pos;  // positions, up to n / 8 of them: not a shape
  if (m >= 8 && rows * k >= 64 && sparse_positions(l, rows * k, pos) && all_finite(r, k * m)) {
    // A transposed r with more nonzeros of l than r has rows (a stack of bases: jacfwd under vmap)
    // is transposed once, so that every axpy reads a contiguous row.
    thread_local std::vector<T> r_rows;  // k x m entries, not a shape
    if (r_transposed && static_cast<std::int64_t>(pos.size()) > k) {
      r_rows.resize(static_cast<std::size_t>(k * m));
      transpose_into(r, m, k, r_rows.data());
      r = r_rows.data();
      r_transposed = false;
    }
    // pos ascends, so rows come in order: a row's first nonzero writes it, later ones add to it,
    // and only rows without a nonzero are zero-filled (each row written once for a basis).
    std::int64_t filled = 0;  // rows [0, filled) are written
    for (const std::int64_t q : pos) {
      const std::int64_t i = q / k, j = q % k;
      const T v = l[q];
      T* o = out + i * m;
      const bool first = i >= filled;
      if (first) {
        std::fill(out + filled * m, o, T(0));
        filled = i + 1;
      }
      if (!r_transposed) {
        // Eigen's vectorised axpy: -O2 does not vectorise a loop of unknown length.
        auto row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(o, m);
        const auto term = v * Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(r + j * m, m);
        if (first) row = term;
        else row += term;
      } else if (first) {
        for (std::int64_t c = 0; c < m; ++c) o[c] = v * r[c * k + j];
      } else {
        for (std::int64_t c = 0; c < m; ++c) o[c] += v * r[c * k + j];
      }
    }
    std::fill(out + filled * m, out + rows * m, T(0));
  } else if (!r_transposed) {
    matrix_map<T>(out, rows, m).noalias() = const_matrix_map<T>(l, rows, k) * const_matrix_map<T>(r, k, m);
  } else {
    matrix_map<T>(out, rows, m).noalias() = const_matrix_map<T>(l, rows, k) * const_matrix_map<T>(r, m, k).transpose();
  }
}

/// Batched matrix product [..., n, k] x [..., k, m] -> [..., n, m] (Eigen GEMM per matrix).
template <class T>
tensor<T> matmul(const tensor<T>& a, const tensor<T>& b) {
  require_matrices("matmul", a.shape(), b.shape());
  const std::int64_t n = a.shape()[a.shape().size() - 2], k = a.shape().back(), k2 = b.shape()[b.shape().size() - 2],
                     m = b.shape().back();
  if (k != k2)
    throw error("matmul: shapes " + detail::shape_str(a.shape()) + " and " + detail::shape_str(b.shape()) +
                " cannot be multiplied (" + std::to_string(k) + " != " + std::to_string(k2) + ")");
  const shape_t ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  shape_t s = broadcast_shapes("matmul", ab, bb);
  const std::int64_t count = numel_of(s);
  s.push_back(n);
  s.push_back(m);
  // A diagonal b (jacfwd's basis with its batch last, found by one pass over b; a dense b fails on
  // its first entries off the diagonal): a itself, shared, for the identity, else a with its
  // columns scaled; either only if a is finite (a GEMM's 0 * inf would be NaN).
  const bool b_diagonal = count == 1 && a.dim() == 2 && b.dim() == 2 && k == m && k >= 8 && is_diagonal(b.data(), k);
  if (b_diagonal && is_unit_diagonal(b.data(), k) && all_finite(a.data(), a.numel())) return a;
  buffer<T> out(static_cast<std::size_t>(count * n * m));
  // One GEMM for the whole stack when one side is a single matrix (vmap's batching rule against
  // an unbatched weight, and its VJP/JVP): a stack of [n, k] matrices is one [count * n, k]
  // matrix, and a stack of [k] columns is one [count, k] matrix. Per-matrix products only when
  // both sides vary along the stack.
  if (count > 1 && bb.empty() && numel_of(ab) == count) {
    product_into(a.data(), count * n, k, b.data(), m, false, out.data());
  } else if (count > 1 && ab.empty() && numel_of(bb) == count && m == 1) {
    product_into(b.data(), count, k, a.data(), n, true, out.data());
  } else if (b_diagonal && diagonal_right_product(a.data(), n, k, b.data(), out.data())) {
    // a times a diagonal b: a with its columns scaled
  } else {
    for_each_matrix_pair("matmul", a.shape(), b.shape(), [&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
      const auto x = const_matrix_map<T>(a.data() + ia * n * k, n, k);
      const auto y = const_matrix_map<T>(b.data() + ib * k * m, k, m);
      auto o = matrix_map<T>(out.data() + i * n * m, n, m);
      // Outer products (per-example gradients of a matrix-vector product) skip GEMM's packing,
      // which costs more than the product itself: a column times a row is Eigen's vectorised
      // outer-product loop (a lazyProduct computed each entry as a 1-term dot, 2x slower).
      // Eigen picks GEMV for matrix-vector products.
      if (k == 1) o.noalias() = x.col(0) * y.row(0);
      else o.noalias() = x * y;
    });
  }
  return tensor<T>(s, std::move(out));
}

/// Inner products over the last dim, leading dims broadcast: [..., k] . [..., k] -> [...].
/// A stack against one vector is one GEMV (vmap of a dot against an unbatched vector).
template <class T>
tensor<T> vecdot(const tensor<T>& a, const tensor<T>& b) {
  if (a.dim() < 1 || b.dim() < 1 || a.shape().back() != b.shape().back())
    throw error("vecdot: expected [..., k] and [..., k], got shapes " + detail::shape_str(a.shape()) + " and " +
                detail::shape_str(b.shape()));
  const std::int64_t k = a.shape().back();
  const shape_t la(a.shape().begin(), a.shape().end() - 1), lb(b.shape().begin(), b.shape().end() - 1);
  const shape_t s = broadcast_shapes("vecdot", la, lb);
  const std::int64_t count = numel_of(s);
  buffer<T> out(static_cast<std::size_t>(count));
  if (count > 1 && (la.empty() || lb.empty()) && k > 0) {
    const tensor<T>& stack = la.empty() ? b : a;
    const tensor<T>& vec = la.empty() ? a : b;
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(out.data(), count).noalias() =
        const_matrix_map<T>(stack.data(), count, k) *
        Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(vec.data(), k);
  } else {
    const T* pa = a.data();
    const T* pb = b.data();
    for_each_broadcast(s, la, lb, [&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
      T acc = 0;
      for (std::int64_t j = 0; j < k; ++j) acc += pa[ia * k + j] * pb[ib * k + j];
      out[static_cast<std::size_t>(i)] = acc;
    });
  }
  return tensor<T>(s, std::move(out));
}

/// Solves A X = B for square A [..., n, n] and B [..., n, k] (LU with partial pivoting);
/// tower::error when a matrix is singular (reciprocal condition below machine epsilon).
template <class T>
tensor<T> solve(const tensor<T>& a, const tensor<T>& b) {
  require_matrices("solve", a.shape(), b.shape());
  const std::int64_t n = a.shape().back(), n2 = a.shape()[a.shape().size() - 2], nb = b.shape()[b.shape().size() - 2],
                     k = b.shape().back();
  if (n != n2 || nb != n)
    throw error("solve: expected A of shape [..., n, n] and B of shape [..., n, k], got " +
                detail::shape_str(a.shape()) + " and " + detail::shape_str(b.shape()));
  const shape_t ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  shape_t s = broadcast_shapes("solve", ab, bb);
  const std::int64_t count = numel_of(s);
  s.push_back(n);
  s.push_back(k);
  buffer<T> out(static_cast<std::size_t>(count * n * k));
  for_each_matrix_pair("solve", a.shape(), b.shape(), [&](std::int64_t i, std::int64_t ia, std::int64_t ib) {
    const Eigen::PartialPivLU<row_matrix<T>> lu(const_matrix_map<T>(a.data() + ia * n * n, n, n));
    if (!(lu.rcond() > std::numeric_limits<T>::epsilon()))
      throw error("solve: matrix " + std::to_string(i) + " of A (shape " + detail::shape_str(a.shape()) +
                  ") is singular");
    matrix_map<T>(out.data() + i * n * k, n, k) = lu.solve(const_matrix_map<T>(b.data() + ib * n * k, n, k));
  });
  return tensor<T>(s, std::move(out));
}

/// Lower Cholesky factor L (A = L Lᵀ) of each symmetric positive-definite [..., n, n] matrix.
/// The kernel factors the symmetric part (A + Aᵀ)/2, so it is a function of all entries and its
/// derivative is the symmetric one. tower::error when a matrix is not positive definite.
template <class T>
tensor<T> cholesky(const tensor<T>& a) {
  if (a.dim() < 2 || a.shape().back() != a.shape()[a.shape().size() - 2])
    throw error("cholesky: expected square matrices [..., n, n], got shape " + detail::shape_str(a.shape()));
  const std::int64_t n = a.shape().back(), count = a.numel() / std::max<std::int64_t>(1, n * n);
  buffer<T> out(static_cast<std::size_t>(a.numel()), T(0));
  for (std::int64_t i = 0; i < count; ++i) {
    const const_matrix_map<T> m(a.data() + i * n * n, n, n);
    const row_matrix<T> sym = (m + m.transpose()) * T(0.5);
    const Eigen::LLT<row_matrix<T>> llt(sym);
    if (llt.info() != Eigen::Success)
      throw error("cholesky: matrix " + std::to_string(i) + " of shape " + detail::shape_str(a.shape()) +
                  " is not positive definite");
    matrix_map<T>(out.data() + i * n * n, n, n) = llt.matrixL();
  }
  return tensor<T>(a.shape(), std::move(out));
}

}  // namespace tower::kernels
