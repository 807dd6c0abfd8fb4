#pragma once
// Interop with Eigen: copy tensors in and out of Eigen matrices and vectors, and view a tensor's
// storage as an Eigen::Map without copying (tensors are row-major, so a rank-2 tensor maps to a
// row-major matrix, and a rank-1 tensor to a vector).
//
//   Eigen::MatrixXd m = tw::to_eigen(t);            // copy (rank 1 -> column vector n x 1)
//   tw::tensor<double> u = tw::from_eigen(m);       // copy; a vector (one column) becomes rank 1
//   auto view = tw::eigen_view(t);                  // Map<const row-major matrix>, no copy
//   tw::eigen_map(t) *= 2.0;                        // writable Map (detaches shared storage first)
#include "tower/core/config.hpp"  // first: a clear #error below C++20
#if TOWER_CXX20
#include <cstdint>
#include <vector>

#include "tower/kernels/eigen_headers.hpp"
#include "tower/core/error.hpp"
#include "tower/tensor/tensor.hpp"

namespace tower {

template <class T>
using eigen_row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {
template <class T>
void eigen_shape(const tensor<T>& t, std::int64_t& rows, std::int64_t& cols) {
  if (t.dim() == 2) {
    rows = t.shape()[0];
    cols = t.shape()[1];
  } else if (t.dim() == 1) {
    rows = t.shape()[0];
    cols = 1;
  } else {
    throw error("eigen: expected a tensor of rank 1 or 2, got shape " + shape_str(t.shape()));
  }
}
}  // namespace detail

/// A zero-copy read-only view of a rank-1 (n x 1) or rank-2 tensor as a row-major Eigen matrix.
/// \code
/// #include <tower/eigen.hpp>
/// tw::tensor<double> A{{1, 2}, {3, 4}};
/// if (tw::eigen_view(A)(1, 0) != 3 || tw::eigen_view(A).determinant() != -2) throw std::runtime_error("eigen_view");
/// \endcode
template <class T>
Eigen::Map<const eigen_row_matrix<T>> eigen_view(const tensor<T>& t) {
  std::int64_t r, c;
  detail::eigen_shape(t, r, c);
  return Eigen::Map<const eigen_row_matrix<T>>(t.data(), r, c);
}

/// A zero-copy writable view; storage shared with other tensors is copied first (value semantics).
/// \code
/// #include <tower/eigen.hpp>
/// tw::tensor<double> A{{1, 2}, {3, 4}};
/// tw::eigen_map(A)(0, 1) = 5;
/// if (A(0, 1) != 5) throw std::runtime_error("eigen_map");
/// \endcode
template <class T>
Eigen::Map<eigen_row_matrix<T>> eigen_map(tensor<T>& t) {
  std::int64_t r, c;
  detail::eigen_shape(t, r, c);
  return Eigen::Map<eigen_row_matrix<T>>(t.data(), r, c);
}

/// A copy as an Eigen matrix (column-major by default; rank 1 gives an n x 1 vector).
/// \code
/// #include <tower/eigen.hpp>
/// Eigen::MatrixXd m = tw::to_eigen(tw::tensor<double>{{1, 2}, {3, 4}});
/// if (m(1, 0) != 3 || tw::to_eigen(tw::tensor<double>{1, 2}).cols() != 1) throw std::runtime_error("to_eigen");
/// \endcode
template <class T>
Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> to_eigen(const tensor<T>& t) {
  return eigen_view(t);
}

/// A copy of an Eigen matrix or vector as a tensor: a compile-time column vector becomes rank 1,
/// anything else rank 2.
/// \code
/// #include <tower/eigen.hpp>
/// if (tw::from_eigen(Eigen::Vector3d(1, 2, 3)).shape() != tw::shape_t{3} || tw::from_eigen(Eigen::Matrix2d::Identity())(1, 1) != 1)
///   throw std::runtime_error("from_eigen");
/// \endcode
template <class Derived>
tensor<typename Derived::Scalar> from_eigen(const Eigen::MatrixBase<Derived>& m) {
  using T = typename Derived::Scalar;
  const auto rows = static_cast<std::int64_t>(m.rows()), cols = static_cast<std::int64_t>(m.cols());
  eigen_row_matrix<T> rm = m;
  buffer<T> data = copy_buffer(rm.data(), static_cast<std::size_t>(rm.size()));
  if constexpr (Derived::ColsAtCompileTime == 1) return tensor<T>({rows}, std::move(data));
  else return tensor<T>({rows, cols}, std::move(data));
}

}  // namespace tower
#endif  // TOWER_CXX20
