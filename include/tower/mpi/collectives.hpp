#pragma once
// Collectives over tw::pmap's rank axis, as ops with every rule (include/tower/mpi.hpp):
//
//   psum(x)        the sum of x over the ranks, on every rank
//   pmean(x)       psum(x) / axis_size()
//   all_gather(x)  every rank's x, stacked: [axis_size(), x's shape...]
//   axis_index()   this rank's index on the axis (an int: a constant to every transform)
//   pvary(x)       x, marked as a rank-dependent use of a value that is the same on every rank
//
// Rules (JAX's, for values whose replication is known):
//   - batching: a vmap inside pmap has its own axis, which the ranks' values share; the batch is
//     one more dim of each rank's value (all_gather keeps it first).
//   - JVP: the collective of the tangents (psum(t), all_gather(t)); pvary(t) = t.
//   - VJP: a collective's output is the same on every rank, and so is its cotangent: psum's
//     transposes to a broadcast (each rank passes the cotangent on), all_gather's to rank r
//     taking its row. pvary's VJP is psum: the rank-dependent uses of a replicated value add up.
//     So grad of a data-parallel loss (the pmean of per-rank losses) gives each rank its share
//     of the gradient of a replicated parameter, and tw::pvary(w) (or a psum of the gradient)
//     sums the shares: the global gradient on every rank.
//   - The cotangent of a collective's output is checked to be equal across ranks (a checksum in
//     the step's header); when it is not, every rank raises tower::error naming tw::pvary.
// On grad's and vmap's tape-free numbers (scalar_dual, fixed, jets) the collectives give way
// (dual_unsupported): those forms use an op's VJP as a local partial, which a collective's is not.
#include "tower/mpi/axis.hpp"  // first: <mpi.h> without its C++ bindings

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/tower.hpp"

namespace tower {

namespace detail::mpi {

template <class X>
inline constexpr bool tape_free_v = is_scalar_dual_v<X> || is_fixed_v<X> || is_elementwise_jet_v<X> || is_jet2_v<X>;

template <class X>
header value_header(step kind, const X& x) {
  using T = kernels::element_t<X>;
  header h{kind};
  h.dtype = dtype_code<T>;
  if constexpr (is_tensor_v<X>) h.shape = x.shape();
  return h;
}

/// The numbers of a tensor or of one number, as (pointer, count); a count MPI can take.
template <class X>
auto numbers(const char* op, X& x) {
  const auto r = [&] {
    if constexpr (is_tensor_v<std::remove_const_t<X>>) return std::pair{x.data(), x.numel()};
    else return std::pair{&x, std::int64_t{1}};
  }();
  if (r.second > std::numeric_limits<int>::max())
    throw error(std::string(op) + ": a value of " + std::to_string(r.second) +
                " numbers is more than one MPI call takes");
  return std::pair{r.first, static_cast<int>(r.second)};
}

/// x summed over the ranks (MPI_Allreduce), the same on every rank.
template <class X>
X allreduce_sum(const char* op, const X& x) {
  axis_frame& a = current_axis(op);
  X r = x;
  const auto [p, n] = numbers(op, r);
  agree(a, op, value_header(step::psum, x));
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, p, n, datatype<kernels::element_t<X>>(), MPI_SUM, a.comm), "MPI_Allreduce");
  return r;
}

/// Every rank's x, stacked along a new dim 0.
template <class X>
auto allgather(const char* op, const X& x) {
  using T = kernels::element_t<X>;
  axis_frame& a = current_axis(op);
  const tensor<T> t = kernels::as_tensor<T>(x);
  const auto [p, n] = numbers(op, t);
  agree(a, op, value_header(step::all_gather, x));
  shape_t s = t.shape();
  s.insert(s.begin(), a.size);
  tensor<T> r(s, buffer<T>(static_cast<std::size_t>(numel_of(s))));
  check_mpi(MPI_Allgather(p, n, datatype<T>(), r.data(), n, datatype<T>(), a.comm), "MPI_Allgather");
  return r;
}

/// Agrees that x (a collective's cotangent) is the same on every rank; returns it.
template <class X>
X check_replicated(const char* op, const X& x) {
  axis_frame& a = current_axis(op);
  header h = value_header(step::cotangent_check, x);
  const auto [p, n] = numbers(op, x);
  // Two weightings, so that rows that swap between ranks are noticed too.
  for (int i = 0; i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    h.checksum[0] += v;
    h.checksum[1] += v * static_cast<double>(1 + i % 7);
    h.checksum_scale += std::abs(v) * static_cast<double>(1 + i % 7);
  }
  agree(a, op, h);
  return x;
}

}  // namespace detail::mpi

struct psum_op {
  static constexpr const char* name = "psum";
  template <class X>
  auto base(const X& x) const {
    return detail::mpi::allreduce_sum(name, x);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const;
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

/// Identity that checks its value is the same on every rank: a collective's cotangent.
struct replicated_check_op {
  static constexpr const char* name = "psum";
  const char* collective = "psum";
  template <class X>
  auto base(const X& x) const {
    return detail::mpi::check_replicated(collective, x);
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(*this, x.value);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    return std::make_tuple(g);
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return t;
  }
};

template <class G, class O, class X>
auto psum_op::vjp(const G& g, const O&, const X&) const {
  return std::make_tuple(call_op(replicated_check_op{name}, g));
}

struct all_gather_op {
  static constexpr const char* name = "all_gather";
  template <class X>
  auto base(const X& x) const {
    return detail::mpi::allgather(name, x);
  }
  /// [B, ...] on every rank gathers to [ranks, B, ...]; the batch goes back to dim 0.
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return call_op(movedim_op{0, 1}, call_op(*this, x.value));
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    const int rank = detail::mpi::current_axis(name).rank;
    auto row = call_op(narrow_op{0, rank, 1}, call_op(replicated_check_op{name}, g));
    if constexpr (is_scalar_type_v<X>) return std::make_tuple(call_op(item_op{}, row));
    else return std::make_tuple(call_op(reshape_op{shape(x)}, row));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return call_op(*this, t);
  }
};

struct pvary_op {
  static constexpr const char* name = "pvary";
  template <class X>
  auto base(const X& x) const {
    return x;
  }
  template <class BS, class X>
  auto batch(BS, const X& x) const {
    return x.value;
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X&) const {
    return std::make_tuple(call_op(psum_op{}, g));
  }
  template <class O, class X, class T>
  auto jvp(const O&, const X&, const T& t) const {
    return t;
  }
};

namespace detail::mpi {
template <class Op, class X>
auto collective(const X& x) {
  if constexpr (tape_free_v<X>) return dual_unsupported{};
  else return call_op(Op{}, x);
}
}  // namespace detail::mpi

/// The sum of x over the ranks of the innermost tw::pmap, on every rank.
/// \code
/// #include <tower/mpi.hpp>   // compiled, not run (it needs mpirun)
/// // inside tw::pmap(f, MPI_COMM_WORLD) on n ranks, rank r passing x = r:
/// auto f = [](auto x) {
///   auto n = static_cast<double>(tw::axis_size());
///   auto s = tw::psum(x) + tw::pmean(x) + tw::sum(tw::all_gather(x)) + tw::pvary(x) * 0.0;   // n (n - 1) / 2 twice, and the mean (n - 1) / 2
///   if (tw::item(s) != n * (n - 1) + (n - 1) / 2 || tw::axis_index() >= tw::axis_size()) throw std::runtime_error("collectives");
///   return s;
/// };
/// auto g = tw::pmap(f, MPI_COMM_WORLD);
/// \endcode
template <operand X>
auto psum(const X& x) {
  return detail::mpi::collective<psum_op>(x);
}

/// Every rank's x along a new dim 0 of size axis_size().
template <operand X>
auto all_gather(const X& x) {
  return detail::mpi::collective<all_gather_op>(x);
}

/// x (same value); its gradient is summed over the ranks. Mark a value that is the same on
/// every rank (a replicated parameter, a psum's result) where rank-dependent values use it.
template <operand X>
auto pvary(const X& x) {
  return detail::mpi::collective<pvary_op>(x);
}

/// This rank's index on the innermost tw::pmap's axis.
inline int axis_index() { return detail::mpi::current_axis("axis_index").rank; }

/// The number of ranks on the innermost tw::pmap's axis.
inline int axis_size() { return detail::mpi::current_axis("axis_size").size; }

/// The mean of x over the ranks: psum(x) / axis_size().
template <operand X>
auto pmean(const X& x) {
  const double n = static_cast<double>(axis_size());
  return psum(x) / n;
}

}  // namespace tower
