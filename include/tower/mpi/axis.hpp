#pragma once
// The rank axis of tw::pmap (include/tower/mpi.hpp): the communicator its collectives use, and
// the agreement that keeps a failure on one rank from deadlocking the others.
//
// Every collective, and the end of every pmap, starts with one small MPI_Allreduce (MAX over a
// header and its negation, so every rank learns the minimum and maximum of each field): whether
// a rank failed, which step it is at, and the dtype and shape of its value. All ranks therefore
// make the same sequence of header calls, and each decides from the same numbers:
//   - a rank whose f threw (pmap catches it) joins the next header with "failed"; the others
//     are at their next collective or at the end of pmap, so that header completes everywhere;
//     the lowest failing rank's message is broadcast and every rank raises;
//   - ranks at different steps (a collective under rank-dependent control flow), or values of
//     different shapes, make every rank raise tower::error instead of reaching a data call that
//     would never match.
// After an agreed failure the frame communicates no more: a later collective (f caught the
// error and went on) raises at once, and pmap raises the failure again at its end.
// The MPI C API only: Open MPI's and MPICH's C++ bindings (deprecated) do not compile warning-free.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tower/core/error.hpp"
#include "tower/core/shape_vector.hpp"

namespace tower::detail::mpi {

/// One live tw::pmap on this thread.
struct axis_frame {
  MPI_Comm comm;
  int rank = 0;
  int size = 1;
  bool agreed_failure = false;  // every rank knows: no more communication in this pmap
  std::string failure;          // what every rank raises
};

inline std::vector<axis_frame*>& axis_stack() {
  thread_local std::vector<axis_frame*> s;
  return s;
}

/// The innermost pmap of this thread, for collective `op`.
inline axis_frame& current_axis(const char* op) {
  auto& s = axis_stack();
  if (s.empty())
    throw error(std::string(op) +
                ": no tw::pmap is running on this thread (collectives run inside the f of tw::pmap(f, comm), on the "
                "thread that "
                "called it; take grad inside pmap, not around it)");
  axis_frame& a = *s.back();
  if (a.agreed_failure) throw error(a.failure);
  return a;
}

/// The step a header announces; ranks must be at the same one.
enum class step : int { psum = 1, all_gather = 2, cotangent_check = 3, pmap_end = 4 };

inline const char* step_name(double k) {
  switch (static_cast<int>(k)) {
    case 1:
      return "psum";
    case 2:
      return "all_gather";
    case 3:
      return "the backward pass of a collective";
    case 4:
      return "the end of tw::pmap";
    default:
      return "a collective";
  }
}

template <class T>
inline MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<double>() {
  return MPI_DOUBLE;
}
template <>
inline MPI_Datatype datatype<float>() {
  return MPI_FLOAT;
}
template <class T>
inline constexpr int dtype_code = sizeof(T) == sizeof(double) ? 1 : 2;

inline void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS)
    throw error(std::string("pmap: ") + what + " failed with MPI error code " + std::to_string(rc));
}

/// What a rank brings to a header.
struct header {
  step kind;
  int dtype = 0;  // 0: no value, 1: double, 2: float
  shape_t shape{};
  std::array<double, 2> checksum{0.0, 0.0};  // step::cotangent_check: must agree across ranks
  double checksum_scale = 0.0;
  bool failed = false;
  std::string message{};  // when failed
};

namespace hdr {
inline constexpr std::size_t max_dims = 8;  // dims beyond are covered by the element count
inline constexpr std::size_t failed = 0, kind = 1, dtype = 2, ndim = 3, numel = 4, dims = 5, sum0 = dims + max_dims,
                             sum1 = sum0 + 1, scale = sum1 + 1, fields = scale + 1;
}  // namespace hdr

/// After a header with a failed rank: the lowest failing rank's message, broadcast to all.
inline std::string agree_on_failure(const axis_frame& a, const header& h) {
  int mine = h.failed ? a.rank : a.size, first = 0;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, a.comm), "MPI_Allreduce");
  long long len = a.rank == first ? static_cast<long long>(h.message.size()) : 0;
  check_mpi(MPI_Bcast(&len, 1, MPI_LONG_LONG, first, a.comm), "MPI_Bcast");
  std::string msg = a.rank == first ? h.message : std::string(static_cast<std::size_t>(len), ' ');
  if (len > 0) check_mpi(MPI_Bcast(msg.data(), static_cast<int>(len), MPI_CHAR, first, a.comm), "MPI_Bcast");
  return "pmap: rank " + std::to_string(first) + " of " + std::to_string(a.size) + " failed: " + msg;
}

/// Runs a header on the frame. Returns when every rank is at the same step with a value of the
/// same dtype and shape (and, for a cotangent check, the same checksum); otherwise marks the
/// frame failed and throws tower::error on every rank. A rank that brings `failed` returns
/// after the agreement (pmap then raises its own exception).
inline void agree(axis_frame& a, const char* op, const header& h) {
  std::array<double, 2 * hdr::fields> in{}, out{};
  auto put = [&](std::size_t i, double v) {
    in[i] = v;
    in[hdr::fields + i] = -v;
  };
  put(hdr::failed, h.failed ? 1 : 0);
  put(hdr::kind, static_cast<double>(h.kind));
  put(hdr::dtype, h.dtype);
  put(hdr::ndim, static_cast<double>(h.shape.size()));
  double n = 1;
  for (auto d : h.shape) n *= static_cast<double>(d);
  put(hdr::numel, n);
  for (std::size_t i = 0; i < hdr::max_dims; ++i)
    put(hdr::dims + i, i < h.shape.size() ? static_cast<double>(h.shape[i]) : -1.0);
  put(hdr::sum0, h.checksum[0]);
  put(hdr::sum1, h.checksum[1]);
  put(hdr::scale, h.checksum_scale);
  check_mpi(MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_DOUBLE, MPI_MAX, a.comm),
            "MPI_Allreduce");
  auto hi = [&](std::size_t i) { return out[i]; };
  auto lo = [&](std::size_t i) { return -out[hdr::fields + i]; };
  auto fail = [&](std::string msg) {
    a.agreed_failure = true;
    a.failure = std::move(msg);
    throw error(a.failure);
  };

  if (hi(hdr::failed) > 0) {
    std::string msg = agree_on_failure(a, h);
    a.agreed_failure = true;
    a.failure = std::move(msg);
    if (h.failed) return;
    throw error(a.failure);
  }
  const std::string where = std::string(op) + " (tw::pmap over " + std::to_string(a.size) + " ranks): ";
  if (hi(hdr::kind) != lo(hdr::kind))
    fail(where + "the ranks reached different steps: " + step_name(lo(hdr::kind)) + " on some, " +
         step_name(hi(hdr::kind)) + " on others (a collective under rank-dependent control flow?)");
  if (hi(hdr::dtype) != lo(hdr::dtype))
    fail(where + "the ranks' values have different element types (double on some, float on others)");
  bool same = hi(hdr::ndim) == lo(hdr::ndim) && hi(hdr::numel) == lo(hdr::numel);
  for (std::size_t i = 0; i < hdr::max_dims; ++i) same = same && hi(hdr::dims + i) == lo(hdr::dims + i);
  if (!same) {
    auto dims = [&](auto get) {
      shape_t s;
      for (std::size_t i = 0; i < std::min<std::size_t>(static_cast<std::size_t>(get(hdr::ndim)), hdr::max_dims); ++i)
        s.push_back(static_cast<std::int64_t>(get(hdr::dims + i)));
      return shape_str(s);
    };
    fail(where + "the ranks' values have different shapes (this rank's is " + shape_str(h.shape) + "; smallest dims " +
         dims(lo) + ", largest " + dims(hi) + ")");
  }
  if (h.kind == step::cotangent_check) {
    // Equal cotangents give equal checksums, bit for bit, when the collectives' results are
    // equal on every rank; the tolerance only absorbs an MPI whose reductions round differently.
    const double tol = (h.dtype == 2 ? 1e-4 : 1e-10) * hi(hdr::scale);
    if (hi(hdr::sum0) - lo(hdr::sum0) > tol || hi(hdr::sum1) - lo(hdr::sum1) > tol)
      fail(where +
           "the cotangent of the collective's output differs across ranks. A collective's output is the same on every "
           "rank, "
           "so tower takes its cotangent to be too (JAX's rule: psum transposes to a broadcast); here it was used with "
           "rank-dependent values. Pass the output through tw::pvary before it meets them, so that their contributions "
           "are "
           "summed over the ranks");
  }
}

}  // namespace tower::detail::mpi
