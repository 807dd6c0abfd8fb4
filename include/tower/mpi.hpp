#pragma once
// tw::pmap(f, comm): f over MPI ranks, each with its shard, and collectives that differentiate.
//
//   #include <tower/mpi.hpp>   // Open MPI (Bazel //:tower_mpi; mpicxx; CMake MPI::MPI_C)
//   auto step = tw::pmap([](auto w, auto X, auto Y) {
//     return tw::pmean(tw::grad(loss)(w, X, Y));          // the global mean gradient, every rank
//   }, MPI_COMM_WORLD);
//   tw::tensor<double> g = step(w, X_shard, Y_shard);
//
// As JAX's pmap with one device per rank: each rank passes its own shard and f runs on it, with
// the communicator as the mapped axis that psum, pmean, all_gather, axis_index and pvary
// (mpi/collectives.hpp) reduce over. f may use any transform, on either path: vmap(grad(...))
// inside gives per-example gradients of the shard, grad of a pmean'd loss the global gradient.
//
// Failures do not deadlock: pmap catches what f throws, and the ranks agree on it at the next
// collective (mpi/axis.hpp). The rank that threw raises its own exception; every other rank
// raises tower::error "pmap: rank r of n failed: <its message>". MPI must be initialised (MPI_Init);
// the collectives run on the thread that called pmap.
#include "tower/mpi/axis.hpp"  // first: <mpi.h> without its C++ bindings

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "tower/mpi/collectives.hpp"
#include "tower/tower.hpp"

namespace tower {

namespace detail::mpi {

/// Pushes a frame on this thread's axis stack for the duration of one pmap call.
class axis_scope {
 public:
  explicit axis_scope(axis_frame& a) : a_(a) { axis_stack().push_back(&a_); }
  ~axis_scope() { axis_stack().pop_back(); }
  axis_scope(const axis_scope&) = delete;
  axis_scope& operator=(const axis_scope&) = delete;

 private:
  axis_frame& a_;
};

inline axis_frame open_axis(MPI_Comm comm) {
  int ok = 0, done = 0;
  MPI_Initialized(&ok);
  MPI_Finalized(&done);
  if (!ok || done) throw error("pmap: MPI is not initialised (call MPI_Init before calling a tw::pmap, MPI_Finalize after the last)");
  if (comm == MPI_COMM_NULL) throw error("pmap: the communicator is MPI_COMM_NULL");
  axis_frame a{comm, 0, 1, false, {}};
  check_mpi(MPI_Comm_rank(comm, &a.rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &a.size), "MPI_Comm_size");
  return a;
}

inline std::string what_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

}  // namespace detail::mpi

template <class F>
struct pmap_transform {
  F f;
  MPI_Comm comm;

  template <class... A>
  auto operator()(A&&... a) const {
    namespace m = detail::mpi;
    m::axis_frame axis = m::open_axis(comm);
    m::axis_scope scope(axis);
    std::exception_ptr failure;
    try {
      if constexpr (std::is_void_v<decltype(f(std::forward<A>(a)...))>) {
        f(std::forward<A>(a)...);
        end(axis);
        return;
      } else {
        auto r = f(std::forward<A>(a)...);
        end(axis);
        return r;
      }
    } catch (...) {
      failure = std::current_exception();
    }
    if (!axis.agreed_failure) {
      // This rank failed first: tell the others at their next step (they wait in a header).
      m::header h{m::step::pmap_end};
      h.failed = true;
      h.message = m::what_of(failure);
      m::agree(axis, "pmap", h);
    }
    std::rethrow_exception(failure);
  }

 private:
  static void end(detail::mpi::axis_frame& axis) {
    namespace m = detail::mpi;
    // f caught an agreed failure and returned: the failure stands (the others raised it).
    if (axis.agreed_failure) throw error(axis.failure);
    m::agree(axis, "pmap", m::header{m::step::pmap_end});
  }
};

/// f over the ranks of comm (each rank calls it with its own shard); see the top of this file.
template <class F>
pmap_transform<std::decay_t<F>> pmap(F&& f, MPI_Comm comm) {
  return {std::forward<F>(f), comm};
}

}  // namespace tower
