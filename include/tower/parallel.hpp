#pragma once
// tw::vmap(f, tw::parallel): vmap over all cores with oneTBB, bit for bit the serial vmap.
//
//   #include <tower/parallel.hpp>   // link oneTBB: -ltbb (Bazel //:tower_parallel, CMake TBB::tbb)
//   auto forces = tw::vmap(tw::grad(energy), tw::parallel);   // tw::parallel(4): on 4 threads
//
// The batch is split into grains of consecutive examples (at least 1024, at most 64 grains; the
// split depends on the batch size only, never on the thread count). Each grain is the serial
// vmap of f on its slice, with every physical form it would take there, run as a oneTBB task.
// A slice along dim 0 is a view of the argument's storage (tensor.hpp's leading_rows). Example 0
// alone shows the output's shape; the output is allocated once, and each grain's form writes its
// rows in place when it can (lent_rows.hpp), else its output is copied there. Examples never
// interact inside vmap, so the numbers equal the serial vmap's bit for bit.
//
// Each grain runs with an empty interpreter stack and the caller's grad mode. That is exact when
// the arguments are plain (numbers, tensors, plain runtime values) and nothing of a live
// transform can reach f: no transform is live on the calling thread, or f holds no values (an
// empty class, as transforms/static/level.hpp assumes). Otherwise (arguments wrapped by an enclosing grad,
// vmap or jvp, a capturing f inside a transform, random ops, a batch of at most one grain) the
// serial vmap runs on the calling thread: slower, never different.
//
// An exception in a grain reaches the caller (the first failing grain's; tower's own errors in
// the words of the whole batch, as the serial vmap raises them); every thread's interpreter stack
// and grad mode are restored whatever happens.
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <typeinfo>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(TOWER_PARALLEL_STD_THREADS)
#include <thread>
#endif

#include "tower/runtime/grad_levels.hpp"
#include "tower/tensor/lent_rows.hpp"
#include "tower/tower.hpp"

namespace tower::detail::par {

/// An automatic grain holds at least this many examples: a task costs about a microsecond to
/// schedule, which a thousand examples of even the cheapest f repay.
inline constexpr std::int64_t min_automatic_grain = 1024;
/// ... and the batch splits into at most this many grains (several per thread up to 16 threads,
/// so that a slow thread does not hold the others up; each grain stays small enough for L2).
inline constexpr std::int64_t max_automatic_grains = 64;
/// The smallest grain tw::parallel(n, grain) takes: every tensor of a grain then has more
/// numbers than one packet, so transcendentals take libmvec as over the whole batch.
inline constexpr std::int64_t min_grain = 64;

inline std::int64_t grain_size(std::int64_t bs, std::int64_t asked) {
  if (asked > 0) return std::max(asked, min_grain);
  return std::max(min_automatic_grain, (bs + max_automatic_grains - 1) / max_automatic_grains);
}

/// Whether every leaf type of the pytree type X satisfies Pred.
template <class X, template <class> class Pred>
constexpr bool all_leaves() {
  return []<class... L>(std::type_identity<std::tuple<L...>>) {
    return (Pred<std::remove_cvref_t<L>>::value && ...);
  }(std::type_identity<typename leaf_types<std::remove_cvref_t<X>>::type>{});
}
template <class L>
struct is_plain_arg_leaf : std::bool_constant<is_tensor_v<L> || std::is_arithmetic_v<L> || is_dyn_v<L>> {};
template <class L>
struct is_plain_out_leaf : std::bool_constant<is_tensor_v<L> || is_dyn_v<L>> {};

/// Whether the types allow splitting: plain arguments, in_dims that match them (else the serial
/// vmap reports the problem), outputs of tensors or runtime values.
template <class V, class R, class... A>
constexpr bool splittable() {
  using In = std::remove_cvref_t<decltype(std::declval<const V&>().in)>;
  constexpr std::size_t dims = std::tuple_size_v<std::remove_cvref_t<decltype(std::declval<const In&>().dims)>>;
  if constexpr (dims != 0 && dims != sizeof...(A)) return false;
  else if constexpr (!(is_pytree_v<R> && (is_pytree_v<A> && ...))) return false;
  else return (all_leaves<A, is_plain_arg_leaf>() && ...) && all_leaves<R, is_plain_out_leaf>();
}

/// The run-time conditions: runtime values plain, no random ops (a thread's generator is its
/// own), and nothing of a live transform reachable from f (see the top of this file).
template <class V, class... A>
bool may_split(const V& v, const A&... a) {
  if (v.opts.randomness != randomness_kind::error) return false;
  if (interpreter_stack_depth() != 0 && may_capture_values<V>()) return false;
  bool plain = true;
  (tree_for_each(
       [&](const auto& leaf) {
         if constexpr (is_dyn_v<std::remove_cvref_t<decltype(leaf)>>) plain = plain && leaf.is_plain();
       },
       a),
   ...);
  return plain;
}

/// The batch size, or -1 when the arguments disagree (the serial vmap then reports it).
template <class V, class... A>
std::int64_t batch_size(const V& v, const A&... a) {
  std::int64_t bs = -1;
  batch_origin first;
  try {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto one = [&]<std::size_t J, class X>(std::integral_constant<std::size_t, J>, const X& x) {
        const auto d = in_dim_at<std::remove_cvref_t<decltype(v.in)>, J>(v.in);
        if constexpr (is_fixed_rows_v<decltype(d)>) merge_batch_size(J, 0, shape(x), bs, first);
        else
          for_each_in_dim(
              d, x, [&](std::int64_t dim, const auto& leaf) { merge_batch_size(J, dim, shape(leaf), bs, first); });
      };
      (one(std::integral_constant<std::size_t, I>{}, a), ...);
    }(std::index_sequence_for<A...>{});
  } catch (const error&) {
    return -1;
  }
  return bs;
}

/// The size along its in_dim of the first leaf an in_dims entry batches, unchecked (-1: none, or
/// a dim out of range): enough to see a batch of at most one grain, which then runs the serial
/// vmap (and its checks) at once. Cheaper than batch_size, which reads every leaf.
template <class V, class... A>
std::int64_t first_batch_size(const V& v, const A&... a) {
  std::int64_t bs = -1;
  auto size = [&](std::int64_t dim, const auto& leaf) {
    if (bs >= 0) return;
    const shape_t s = shape(leaf);
    const auto r = static_cast<std::int64_t>(s.size());
    if (dim < 0) dim += r;
    if (dim >= 0 && dim < r) bs = s[static_cast<std::size_t>(dim)];
  };
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&]<std::size_t J, class X>(std::integral_constant<std::size_t, J>, const X& x) {
      const auto d = in_dim_at<std::remove_cvref_t<decltype(v.in)>, J>(v.in);
      if constexpr (is_fixed_rows_v<decltype(d)>) size(0, x);
      else for_each_in_dim(d, x, size);
    };
    (one(std::integral_constant<std::size_t, I>{}, a), ...);
  }(std::index_sequence_for<A...>{});
  return bs;
}

/// Examples [start, start + len) of a batched tensor: along dim 0 a view of its storage (no
/// copy), along another dim a copy.
template <class T>
tensor<T> slice_tensor(const tensor<T>& t, std::int64_t dim, std::int64_t start, std::int64_t len) {
  if (tensor<T>::normalize_dim(dim, t.dim()) == 0) return leading_rows(t, start, len);
  return kernels::narrow(t, dim, start, len);
}

/// Examples [start, start + len) of a batched leaf.
template <class L>
L slice_leaf(const L& leaf, std::int64_t dim, std::int64_t start, std::int64_t len) {
  if constexpr (is_tensor_v<L>) return slice_tensor(leaf, dim, start, len);
  else if constexpr (is_dyn_v<L>) return dyn::value(slice_tensor(leaf.to_tensor(), dim, start, len));
  else return leaf;  // a number under an int entry: batch_size refused it already
}

/// Argument I of grain [start, start + len).
template <std::size_t I, class V, class X>
auto slice_arg(const V& v, const X& x, std::int64_t start, std::int64_t len) {
  const auto d = in_dim_at<std::remove_cvref_t<decltype(v.in)>, I>(v.in);
  if constexpr (is_fixed_rows_v<decltype(d)>) return slice_leaf(x, 0, start, len);
  else return map_in_dim(d, x, [&](std::int64_t dim, const auto& leaf) { return slice_leaf(leaf, dim, start, len); });
}

template <class L>
auto plain_of(const L& leaf) {
  if constexpr (is_dyn_v<L>) return leaf.to_tensor();
  else return leaf;
}

/// An output leaf of the whole batch, shaped as `first` (one example's) with bs examples along
/// out_dim; uninitialised, the grains fill it.
template <class L>
auto allocate_output(const L& first, std::int64_t out_dim, std::int64_t bs) {
  const auto t = plain_of(first);
  using T = typename std::remove_cvref_t<decltype(t)>::value_type;
  shape_t s = t.shape();
  const auto d = static_cast<std::size_t>(out_dim_of(out_dim, s));
  s[d] = bs;
  const auto n = static_cast<std::size_t>(numel_of(s));
  return tensor<T>(std::move(s), buffer<T>(n));
}

/// Copies a grain's output leaf (len examples) into the whole batch's at `start`. The shapes
/// differ in the batch dim only, which locates it.
template <class L, class T>
void write_output(const L& part_leaf, const tensor<T>& whole, std::int64_t start, std::int64_t len) {
  const auto part = plain_of(part_leaf);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(part)>, tensor<T>>);
  const shape_t& ps = part.shape();
  const shape_t& ws = whole.shape();
  std::size_t d = ws.size();
  bool ok = ps.size() == ws.size();
  for (std::size_t k = 0; ok && k < ws.size(); ++k)
    if (ps[k] != ws[k]) {
      ok = d == ws.size() && ps[k] == len;
      d = k;
    }
  if (!ok || d == ws.size())
    throw error("vmap(..., tw::parallel): a grain of " + std::to_string(len) + " examples returned shape " +
                shape_str(ps) + " where the whole batch's output has shape " + shape_str(ws));
  std::int64_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) outer *= ws[k];
  for (std::size_t k = d + 1; k < ws.size(); ++k) inner *= ws[k];
  const std::int64_t total = ws[d];
  // The whole batch's tensor is this call's own (unshared) and every grain writes its own rows.
  T* out = const_cast<T*>(whole.data());
  const T* in = part.data();
  if (outer == 1 && in == out + start * inner) return;  // written in place (lend_output)
  for (std::int64_t o = 0; o < outer; ++o)
    std::memcpy(out + (o * total + start) * inner, in + o * len * inner,
                static_cast<std::size_t>(len * inner) * sizeof(T));
}

/// fn(leaf, out_dim) over the output leaves of r (out_dims pair with the top-level elements of a
/// tuple output, as vmap's unbatching does); the results in r's structure.
template <class OutDims, class R, class Fn>
auto map_outputs(const R& r, const OutDims& out, Fn&& fn) {
  static_assert(is_flat_out_dims_v<OutDims>,
                "vmap: tw::parallel needs out_dims of ints (no tw::none or nested entries)");
  return map_out_dim(out_prefix(out), r, [&](std::int64_t d, const auto& leaf) { return fn(leaf, d); });
}

/// For one grain: the interpreter stack hidden and the caller's grad mode, both restored on
/// exit (exceptions included). A thread waiting in a nested parallel vmap runs other grains
/// meanwhile, on top of its own live transforms; hiding them makes every grain start clean.
class grain_scope {
 public:
  explicit grain_scope(const grad_mode_state& caller) : hide_(INT_MIN), saved_(grad_mode()) { grad_mode() = caller; }
  ~grain_scope() { grad_mode() = saved_; }
  grain_scope(const grain_scope&) = delete;
  grain_scope& operator=(const grain_scope&) = delete;

 private:
  hide_live_levels hide_;
  grad_mode_state saved_;
};

#if defined(TOWER_PARALLEL_STD_THREADS)
/// For ThreadSanitizer runs (-DTOWER_PARALLEL_STD_THREADS): the grains on the caller and
/// threads - 1 std::threads. The packaged libtbb is not instrumented, so ThreadSanitizer cannot
/// see oneTBB's synchronisation and reports its own task objects; std::thread's it sees, so
/// what it reports then is tower's.
template <class Body>
void std_threads_for(int threads, std::int64_t grains, const Body& body) {
  std::atomic<std::int64_t> next{0};
  auto work = [&] {
    for (std::int64_t g; (g = next.fetch_add(1)) < grains;) body(g);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
}
#endif

/// The output's only leaf when f returns one tensor (or runtime value) batched along dim 0: the
/// grains' forms can then write their rows of it in place (lend_output). Else nullptr.
template <class W, class OutDims>
auto* single_leading_output(W& whole, const OutDims& out) {
  if constexpr (is_tensor_v<W>) return detail::out_dim_at<OutDims, 0>(out) == 0 ? &whole : nullptr;
  else return static_cast<tensor<double>*>(nullptr);
}

/// The arena of n threads for tw::parallel(n), made on first use and kept: a new arena per call
/// costs its workers' joining it, tens of microseconds (a few percent of a 1 ms batch).
inline tbb::task_arena& arena_of(int n) {
  static std::mutex m;
  static std::map<int, std::unique_ptr<tbb::task_arena>> arenas;
  const std::lock_guard<std::mutex> lock(m);
  auto& a = arenas[n];
  if (!a) a = std::make_unique<tbb::task_arena>(n);
  return *a;
}

template <class R, class V, class... A>
R run_grains(const V& v, const parallel_t& p, std::int64_t bs, std::int64_t grain, const A&... a) {
  const std::int64_t grains = (bs + grain - 1) / grain;
  auto start = [&](std::int64_t g) { return bs * g / grains; };  // equal grains, within one example
  const grad_mode_state caller = grad_mode();
  auto run_slice = [&](std::int64_t s, std::int64_t len) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return v(slice_arg<I>(v, a, s, len)...);
    }(std::index_sequence_for<A...>{});
  };

  // Example 0 alone shows the outputs' shapes (its errors are grain 0's, the first a serial
  // vmap meets); the output is allocated once and each grain writes its rows of it.
  const R one = [&] {
    grain_scope scope(caller);
    return run_slice(0, 1);
  }();
  auto whole = map_outputs(one, v.out, [&](const auto& leaf, std::int64_t d) { return allocate_output(leaf, d, bs); });
  auto* leading = single_leading_output(whole, v.out);

  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(grains));
  std::atomic<std::int64_t> first_failed{grains};
  auto body = [&](std::int64_t g) {
    if (g > first_failed.load(std::memory_order_relaxed)) return;  // an earlier grain failed: its error is the one
    try {
      grain_scope scope(caller);
      const std::int64_t s = start(g), len = start(g + 1) - s;
      const auto write = [&](const R& part) {
        (void)tree_zip(
            [&](const auto& leaf, const auto& w) {
              write_output(leaf, w, s, len);
              return 0;
            },
            part, whole);
      };
      if (leading) {
        using T = typename std::remove_pointer_t<decltype(leading)>::value_type;
        tensor<T> rows = leading_rows(*leading, s, len);
        const lend_output<T> loan(rows);  // the grain's form writes these rows if it can
        write(run_slice(s, len));
      } else {
        write(run_slice(s, len));
      }
    } catch (...) {
      errors[static_cast<std::size_t>(g)] = std::current_exception();
      std::int64_t f = first_failed.load(std::memory_order_relaxed);
      while (g < f && !first_failed.compare_exchange_weak(f, g, std::memory_order_relaxed)) {}
    }
  };
#if defined(TOWER_PARALLEL_STD_THREADS)
  std_threads_for(p.threads > 0 ? p.threads : 4, grains, body);
#else
  // isolate: while this call waits, its thread runs only this call's grains.
  auto loop = [&] { tbb::this_task_arena::isolate([&] { tbb::parallel_for(std::int64_t{0}, grains, body); }); };
  if (p.threads > 0) {
    arena_of(p.threads).execute(loop);
  } else {
    loop();
  }
#endif
  for (const auto& e : errors)
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const error& failure) {
        // A kernel names an example by its index in what it was given: the grain's ("matrix 61
        // of shape [64, 2, 2]"). The serial form over the whole batch raises the same error in the
        // batch's words; an error is rare enough to run it for them. Only tower's own errors: a
        // user's kind of exception, which may follow side effects of f, is passed on as it is.
        if (typeid(failure) == typeid(error) || typeid(failure) == typeid(vmap_op_error)) {
          grain_scope scope(caller);
          (void)run_slice(0, bs);
        }
        throw;
      }
    }

  // Runtime outputs back to runtime values.
  return tree_zip(
      [](const auto& leaf, const auto& w) {
        if constexpr (is_dyn_v<std::remove_cvref_t<decltype(leaf)>>) return dyn::value(w);
        else return w;
      },
      one, whole);
}

}  // namespace tower::detail::par

namespace tower::detail {

namespace par {
/// vmap(f, parallel) of one tensor batched along dim 0, with one tensor out along dim 0, whose
/// argument some grad records: one op on that grad's tape. Its base is the parallel vmap of f;
/// its VJP the parallel vmap of f's per-example VJP, so the backward pass runs per grain too.
/// (x, ct) -> f's VJP at x for ct. It declares f as what it wraps: it holds no other value, so
/// its parallel vmap splits while grad is live (transforms/static/level.hpp's may_capture_values).
template <class F>
struct example_vjp {
  F f;
  using wrapped_function = F;
  template <class X, class C>
  auto operator()(const X& x, const C& ct) const {
    return std::get<0>(tower::vjp(f, x).second(ct));
  }
};

template <class V>
struct vmap_op {
  static constexpr const char* name = "vmap(..., tw::parallel)";
  V v;
  parallel_t p;

  template <class X>
  auto base(const X& x) const {
    return parallel_engine<V>::run(v, p, x);
  }
  template <class G, class O, class X>
  auto vjp(const G& g, const O&, const X& x) const {
    return std::make_tuple(tower::vmap(example_vjp<decltype(v.f)>{v.f}, p)(x, g));
  }
};

/// The types for which a call of the parallel vmap V on A... may record one vmap_op (above):
/// one argument and output, batched along dim 0, with f holding no values (a value of a live
/// transform could reach it otherwise), and the argument wrapped by grad levels only (a
/// runtime value: checked when called, by records_op).
template <class V, class... A>
constexpr bool may_record_op() {
  using In = std::remove_cvref_t<decltype(std::declval<const V&>().in)>;
  using Out = std::remove_cvref_t<decltype(std::declval<const V&>().out)>;
  if constexpr (sizeof...(A) != 1 || !std::is_same_v<In, in_dims_t<>> || !std::is_same_v<Out, out_dims_t<>> ||
                may_capture_values<V>())
    return false;
  else if constexpr ((is_dyn_v<A> && ...)) return true;
  else if constexpr (!(is_grad_wrapped_v<A> && ...)) return false;
  else return is_tensor_v<decltype(std::declval<const V&>()(std::declval<const typename base_type<A>::type&>()...))>;
}

/// A runtime argument needs a grad level, and only grad levels (a plain one: the parallel vmap
/// itself); a static one was checked by type.
template <class X>
bool grad_wrapped_now(const X& x) {
  if constexpr (is_dyn_v<X>) return grad_levels_now(x) > 0;
  else return true;
}

template <class V, class... A>
bool records_op(const V& v, const A&... a) {
  return v.opts.randomness == randomness_kind::error && (grad_wrapped_now(a) && ...);
}
}  // namespace par

template <class V>
struct parallel_engine {
  static constexpr bool available = true;

  template <class... A>
  static auto run(const V& v, const parallel_t& p, const A&... a) {
    if constexpr (par::may_record_op<V, A...>()) {
      if (par::records_op(v, a...)) return call_op(par::vmap_op<V>{v, p}, a...);
    }
    return split(v, p, a...);
  }

 private:
  template <class... A>
  static auto split(const V& v, const parallel_t& p, const A&... a) {
    using R = decltype(v(a...));
    if constexpr (!par::splittable<V, R, A...>()) {
      return v(a...);
    } else {
      // The batch size first: below one grain (or on an error the serial vmap reports) nothing
      // else is looked at.
      if (const std::int64_t first = par::first_batch_size(v, a...);
          first >= 0 && first <= par::grain_size(first, p.grain))
        return v(a...);
      const std::int64_t bs = par::batch_size(v, a...);
      const std::int64_t grain = par::grain_size(bs, p.grain);
      if (bs <= grain || !par::may_split(v, a...)) return v(a...);
      return par::run_grains<R>(v, p, bs, grain, a...);
    }
  }
};

}  // namespace tower::detail
