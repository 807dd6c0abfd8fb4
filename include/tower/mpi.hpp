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
// grad, vjp and jacrev around pmap work as well when f holds no values (pmap_transform::op).
//
// Failures do not deadlock: pmap catches what f throws, and the ranks agree on it at the next
// collective (mpi/axis.hpp). The rank that threw raises its own exception; every other rank
// raises tower::error "pmap: rank r of n failed: <its message>". MPI must be initialised (MPI_Init);
// the collectives run on the thread that called pmap.
#include "tower/mpi/axis.hpp"  // first: <mpi.h> without its C++ bindings

#include <algorithm>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "tower/runtime/grad_levels.hpp"
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
  if (!ok || done)
    throw error("pmap: MPI is not initialised (call MPI_Init before calling a tw::pmap, MPI_Finalize after the last)");
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

/// (ct, x...) -> f's VJP at x for ct, on this rank (run inside a pmap: its collectives' VJPs
/// communicate). It declares f as what it wraps (it holds no other value).
template <class F>
struct rank_vjp {
  F f;
  using wrapped_function = F;
  template <class C, class... X>
  auto operator()(const C& ct, const X&... x) const {
    return tower::vjp(f, x...).second(ct);
  }
};

}  // namespace detail::mpi

template <class F>
struct pmap_transform {
  F f;
  MPI_Comm comm;

  using wrapped_function = F;

  template <class... A>
  auto operator()(A&&... a) const {
    if constexpr (records_op<std::remove_cvref_t<A>...>()) {
      if (records_now(a...)) return call_op(op{f, comm}, a...);
    }
    return run(std::forward<A>(a)...);
  }

  /// Under grad (or vjp, jacrev's reverse pass) around pmap: one op on that grad's tape, whose
  /// base is pmap of f and whose VJP is pmap of f's VJP on each rank, so the backward pass runs
  /// inside a pmap as well (the collectives' VJPs communicate) and every rank gets the gradient
  /// of its own shard, as grad inside pmap gives it.
  struct op {
    static constexpr const char* name = "pmap";
    F f;
    MPI_Comm comm;
    template <class... X>
    auto base(const X&... x) const {
      return pmap_transform{f, comm}.run(x...);
    }
    template <class G, class O, class... X>
    auto vjp(const G& g, const O&, const X&... x) const {
      return pmap_transform<detail::mpi::rank_vjp<F>>{{f}, comm}.run(g, x...);
    }
  };

 private:
  /// Whether a call on A... may record op: f holds no values (a live transform's value could
  /// reach it otherwise), every argument is a tensor wrapped by grad levels only or plain (a
  /// runtime value: checked when called), and f gives one tensor.
  template <class... A>
  static constexpr bool records_op() {
    if constexpr (detail::may_capture_values<F>()) return false;
    else if constexpr ((is_dyn_v<A> && ...)) return true;
    else if constexpr (!(detail::is_grad_wrapped_v<A> || ...) ||
                       !((is_tensor_v<A> || detail::is_grad_wrapped_v<A>) && ...))
      return false;
    else if constexpr (!is_tensor_v<decltype(std::declval<const F&>()(
                           std::declval<const typename base_type<A>::type&>()...))>)
      return false;
    else
      return std::is_same_v<decltype(call_op(std::declval<const op&>(), std::declval<const A&>()...)),
                            decltype(std::declval<const F&>()(std::declval<const A&>()...))>;
  }
  template <class... A>
  static bool records_now(const A&... a) {
    if constexpr ((is_dyn_v<A> && ...)) {
      // Every argument plain or wrapped by grad levels only, and one at least wrapped.
      const int levels[] = {detail::grad_levels_now(a)...};
      return std::ranges::none_of(levels, [](int n) { return n < 0; }) &&
             std::ranges::any_of(levels, [](int n) { return n > 0; });
    } else {
      return true;  // by type
    }
  }

 public:
  /// f on the ranks, not recorded (operator() when no grad records the call).
  template <class... A>
  auto run(A&&... a) const {
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
/// \code
/// #include <tower/mpi.hpp>   // compiled, not run (it needs mpirun)
/// int main(int argc, char** argv) {
///   MPI_Init(&argc, &argv);
///   auto f = tw::pmap([](auto x) { return tw::grad([](auto v) { return tw::psum(tw::sum(v * v)); })(x); }, MPI_COMM_WORLD);
///   tw::tensor<double> g = f(tw::tensor<double>{1.0, 2.0});   // 2 x on every rank
///   MPI_Finalize();
///   return g(1) == 4.0 ? 0 : 1;
/// }
/// \endcode
template <class F>
pmap_transform<std::decay_t<F>> pmap(F&& f, MPI_Comm comm) {
  return {std::forward<F>(f), comm};
}

}  // namespace tower
