#pragma once
// vmap and grad on the runtime path: runtime levels, dyn::value wrappers, the live stack.
// Reached through tw::vmap / tw::grad when the function is type-erased (see runtime_function.hpp)
// or an argument is a dyn::value; the semantics match the static path exactly.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "dsl/layout.hpp"
#include "dsl/shape_ops.hpp"
#include "dsl/batch_fallback.hpp"
#include "tower/core/cotangent_seed.hpp"
#include "tower/runtime/dyn_value.hpp"
#include "tower/core/grad_mode.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/tensor/lent_rows.hpp"
#include "tower/static/pytree.hpp"
#include "tower/core/randomness.hpp"
#include "tower/runtime/dispatch.hpp"
#include "tower/tensor/batch_size.hpp"
#include "tower/transforms/runtime/fusion.hpp"

namespace tower::dyn {

namespace detail {

// unbatch and backward are templates (V is always value) so that a program that never runs the
// runtime path does not instantiate the runtime ops they call: the body of an inline function is
// compiled in every translation unit that includes it, a template's only where it is called.
template <class V>
V unbatch(const V& r, std::int64_t out_dim, std::int64_t bs, int level, std::uint64_t serial) {
  if (r.level() == level && r.get().serial == serial) {
    const V& p = r.get().inner;
    const auto d = tower::detail::out_dim_of(out_dim, p.shape());
    return d == 0 ? p : movedim(p, 0, d);
  }
  shape_t s = r.shape(), one = s, full = s;
  one.insert(one.begin(), 1);
  full.insert(full.begin(), bs);
  V b = broadcast_to(reshape(r, one), full);
  const auto d = tower::detail::out_dim_of(out_dim, full);
  return d == 0 ? b : movedim(b, 0, d);
}

/// The adjoints a backward sweep found for the leaves it reached, sorted by node.
using leaf_adjoints = std::vector<std::pair<const grad_node*, value>>;

/// The adjoint of leaf `n`, or null when the sweep did not reach it.
inline const value* find_adjoint(const leaf_adjoints& a, const grad_node* n) {
  auto it = std::lower_bound(a.begin(), a.end(), n,
                             [](const auto& e, const grad_node* k) { return std::less<>{}(e.first, k); });
  return it != a.end() && it->first == n ? &it->second : nullptr;
}

/// Working storage of a backward sweep, kept per thread so that a sweep allocates nothing once
/// warm. A sweep started while another runs on the thread gets its own.
struct sweep_scratch {
  std::vector<grad_node*> order;
  std::vector<std::pair<grad_node*, std::size_t>> stack;
  std::vector<value> grads;
  bool busy = false;
};

/// Reverse-mode sweep from a tracked output: the adjoint of every leaf it reaches (the nodes
/// without a VJP: grad's inputs and the bridge's leaves).
///
/// Adjoints of the nodes in between live on the nodes for the length of the sweep (no map,
/// no per-node allocation); a sweep id tells this sweep's marks from any earlier one's, and
/// the nodes are cleared when the sweep ends, exceptions included.
template <class V>
leaf_adjoints backward(const V& out, const V* seed = nullptr) {
  static std::atomic<std::uint64_t> sweeps{0};
  const std::uint64_t sweep = ++sweeps;
  thread_local sweep_scratch shared;
  sweep_scratch own;
  sweep_scratch& w = shared.busy ? own : shared;
  struct release_on_exit {
    sweep_scratch& w;
    ~release_on_exit() {
      for (grad_node* n : w.order) {
        n->adjoint = value(std::shared_ptr<const value::rep>());
        n->has_adjoint_in = 0;
        n->seen = 0;
      }
      w.order.clear();
      w.stack.clear();
      for (auto& g : w.grads) g = value(std::shared_ptr<const value::rep>());
      w.busy = false;
    }
  };
  w.busy = true;
  release_on_exit release{w};
  // Reverse topological order by depth-first search from the output.
  grad_node* root = out.get().node.get();
  w.stack.push_back({root, 0});
  root->seen = sweep;
  while (!w.stack.empty()) {
    auto& [n, i] = w.stack.back();
    if (i < n->parent_count()) {
      grad_node* p = n->parent(i++);
      if (p && p->seen != sweep) {
        p->seen = sweep;
        w.stack.push_back({p, 0});
      }
    } else {
      if (w.grads.size() < n->parent_count()) w.grads.resize(n->parent_count());
      w.order.push_back(n);
      w.stack.pop_back();
    }
  }
  root->adjoint = seed ? *seed : ones_like(out.get().inner);
  root->has_adjoint_in = sweep;
  leaf_adjoints leaves;
  for (auto it = w.order.rbegin(); it != w.order.rend(); ++it) {
    grad_node* n = *it;
    if (n->has_adjoint_in != sweep) continue;
    if (!n->has_vjp()) {
      leaves.emplace_back(n, n->adjoint);
      continue;
    }
    n->vjp(n->adjoint, w.grads.data());
    for (std::size_t i = 0; i < n->parent_count(); ++i) {
      grad_node* p = n->parent(i);
      if (!p) continue;
      if (p->has_adjoint_in != sweep) {
        p->adjoint = std::move(w.grads[i]);
        p->has_adjoint_in = sweep;
      } else {
        p->adjoint = static_cast<const V&>(p->adjoint) + w.grads[i];  // (dependent: see unbatch)
      }
    }
  }
  std::sort(leaves.begin(), leaves.end(), [](const auto& x, const auto& y) { return std::less<>{}(x.first, y.first); });
  return leaves;
}

}  // namespace detail

/// vmap on the runtime path. `in_dims[i]` empty means not batched.
template <class Call, std::size_t N>
auto run_vmap_once(const Call& call, const std::array<std::optional<std::int64_t>, N>& in_dims, const shape_t& out_dims,
                   const std::array<value, N>& args, randomness_kind randomness) {
  const int level = top_live_level() + 1;
  interpreter_scope scope(transform_type::vmap, level);
  scope.entry().randomness = randomness;
  const std::uint64_t serial = scope.entry().serial;
  const std::int64_t bs = detail::batch_size_of(in_dims, args);
  scope.entry().batch_size = bs;
  std::array<value, N> wrapped;
  for (std::size_t i = 0; i < N; ++i)
    wrapped[i] =
        in_dims[i] ? wrap(transform_type::vmap, level, serial, detail::batch_first(args[i], *in_dims[i])) : args[i];
  auto r = call(wrapped);
  auto out_dim = [&](std::size_t k) { return detail::out_dim_at(out_dims, k); };
  auto unbatch_tree = [&](const auto& t, std::size_t k) {
    return tree_map([&](const value& v) { return detail::unbatch(v, out_dim(k), bs, level, serial); }, t);
  };
  if constexpr (std::is_same_v<decltype(r), value> || !tower::detail::is_tuple_like<decltype(r)>::value) {
    return unbatch_tree(r, 0);
  } else {
    // One out_dims entry per element of a tuple result (each element a pytree).
    return [&]<std::size_t... K>(std::index_sequence<K...>) {
      return std::make_tuple(unbatch_tree(std::get<K>(r), K)...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(r)>>{});
  }
}

/// vmap on the runtime path; with chunk_size, a chunk of the batch at a time; with fuse, the
/// traced program when f's ops allow it (transforms/runtime/fusion.hpp). randomness=different runs one
/// example at a time; with randomness=same every chunk draws what the whole batch would
/// (tower/core/randomness.hpp).
template <class Call, std::size_t N>
auto run_vmap(const Call& call, const std::array<std::optional<std::int64_t>, N>& in_dims, const shape_t& out_dims,
              const std::array<value, N>& args, randomness_kind randomness = randomness_kind::error,
              std::int64_t chunk_size = 0, bool fuse = false) {
  using R = decltype(run_vmap_once(call, in_dims, out_dims, args, randomness));
  if (fuse)
    if (auto r = run_vmap_fused<R>(call, in_dims, out_dims, args, randomness)) return std::move(*r);
  chunk_size = tower::detail::chunk_for(randomness, chunk_size);
  if (chunk_size > 0) {
    if (const std::int64_t bs = detail::batch_size_of(in_dims, args); bs > chunk_size) {
      std::vector<R> parts;
      // A plain result with its batch in dim 0: each chunk after the first is computed in its rows
      // of the output (lent_rows.hpp's packet_rows), as the static path's packets are.
      std::optional<tower::detail::packet_rows<double>> rows;
      const tower::detail::same_draws draws(randomness);
      for (std::int64_t start = 0; start < bs; start += chunk_size) {
        draws.next();
        const std::int64_t len = std::min(chunk_size, bs - start);
        std::array<value, N> slice = args;
        for (std::size_t i = 0; i < N; ++i)
          if (in_dims[i]) slice[i] = narrow(args[i], *in_dims[i], start, len);
        if constexpr (std::is_same_v<R, value>) {
          if (rows) {
            rows->compute(start, len,
                          [&] { return run_vmap_once(call, in_dims, out_dims, slice, randomness).to_tensor(); });
            continue;
          }
          if (start == 0) {
            R first = run_vmap_once(call, in_dims, out_dims, slice, randomness);
            if (first.is_plain() && first.rank() > 0 && detail::out_dim_at(out_dims, 0) == 0) {
              rows.emplace(bs);
              rows->put(0, first.to_tensor());
            } else {
              parts.push_back(std::move(first));
            }
            continue;
          }
        }
        parts.push_back(run_vmap_once(call, in_dims, out_dims, slice, randomness));
      }
      if constexpr (std::is_same_v<R, value>)
        if (rows) return R(rows->whole());
      // Each leaf of the result: its parts joined along its out dim (each element of a tuple
      // result takes that element's entry).
      auto join = [&](auto get, std::size_t k) {
        std::vector<std::vector<value>> flat;  // per part, its leaves in order
        for (const auto& p : parts) {
          flat.emplace_back();
          tree_for_each([&](const value& v) { flat.back().push_back(v); }, get(p));
        }
        const std::int64_t d = detail::out_dim_at(out_dims, k);
        std::size_t leaf = 0;
        return tree_map(
            [&](const auto& first) {  // (generic: cat is instantiated where this runs)
              std::vector<std::remove_cvref_t<decltype(first)>> xs;
              for (const auto& f : flat) xs.push_back(f[leaf]);
              ++leaf;
              const auto r = static_cast<std::int64_t>(first.shape().size());
              return cat(xs, d < 0 ? d + r : d);
            },
            get(parts.front()));
      };
      if constexpr (std::is_same_v<R, value> || !tower::detail::is_tuple_like<R>::value) {
        return join([](const R& p) -> const R& { return p; }, 0);
      } else {
        return [&]<std::size_t... K>(std::index_sequence<K...>) {
          return R{join([](const R& p) -> const auto& { return std::get<K>(p); }, K)...};
        }(std::make_index_sequence<std::tuple_size_v<R>>{});
      }
    }
  }
  return run_vmap_once(call, in_dims, out_dims, args, randomness);
}

/// The parts of a runtime grad call: gradients (in argnums order), value, aux.
template <class Aux>
struct grad_result {
  std::vector<value> grads;
  value val;
  Aux aux;
};

/// The primal of a value at `level` (a dead or foreign wrapper stays as it is).
inline value unwrap_level(const value& v, int level, std::uint64_t serial) {
  return v.level() == level && v.get().serial == serial ? v.get().inner : v;
}

/// grad on the runtime path (reverse mode over a graph of grad_node, as PyTorch autograd).
template <bool HasAux, class Call, std::size_t N>
auto run_grad(const Call& call, const std::vector<int>& argnums, const std::array<value, N>& args) {
  const bool prev = is_grad_enabled();
  const int level = top_live_level() + 1;
  interpreter_scope scope(transform_type::grad, level);
  scope.entry().prev_grad_mode = prev;
  const std::uint64_t serial = scope.entry().serial;
  tower::detail::no_grad_below_guard below(scope.entry());
  enable_grad on;

  std::array<value, N> wrapped = args;
  std::vector<std::shared_ptr<grad_node>> leaves;
  for (int k : argnums) {
    if (k < 0 || static_cast<std::size_t>(k) >= N)
      throw error("grad: argnums index " + std::to_string(k) + " is out of range for a function of " +
                  std::to_string(N) + " arguments");
    leaves.push_back(std::allocate_shared<grad_node>(tower::detail::pool_allocator<grad_node>()));
    wrapped[static_cast<std::size_t>(k)] =
        wrap(transform_type::grad, level, serial, args[static_cast<std::size_t>(k)], leaves.back());
  }
  auto result = call(wrapped);
  constexpr bool seeded = tower::detail::is_cotangent_seed_v<decltype(result)>;  // vjp (cotangent_seed.hpp)
  const value& out = [&]() -> const value& {
    if constexpr (HasAux) return std::get<0>(result);
    else if constexpr (seeded) return result.out;
    else return result;
  }();
  const value* seed = nullptr;
  if constexpr (seeded) {
    tower::detail::require_cotangent_shape(result.ct.shape(), out.shape());
    seed = &result.ct;
  } else if (const shape_t s = out.shape(); !s.empty()) {
    throw error("grad: f must return a scalar, it returned a value of shape " + tower::detail::shape_str(s));
  }

  detail::leaf_adjoints adjoint;
  if (out.level() == level && out.get().serial == serial && out.get().node) adjoint = detail::backward(out, seed);
  using Aux = std::conditional_t<HasAux,
                                 std::remove_cvref_t<std::tuple_element_t<
                                     1, std::conditional_t<HasAux, decltype(result), std::tuple<value, value>>>>,
                                 value>;
  grad_result<Aux> r;
  for (std::size_t j = 0; j < argnums.size(); ++j) {
    const value* a = detail::find_adjoint(adjoint, leaves[j].get());
    r.grads.push_back(a ? *a : zeros_like(args[static_cast<std::size_t>(argnums[j])]));
  }
  r.val = unwrap_level(out, level, serial);
  if constexpr (HasAux)
    r.aux = tree_map([&](const value& v) { return unwrap_level(v, level, serial); }, std::get<1>(result));
  return r;
}

}  // namespace tower::dyn

namespace tower::dyn {

/// jvp on the runtime path: (output, output tangent).
template <class Call, std::size_t N>
auto run_jvp(const Call& call, const std::array<value, N>& primals, const std::array<value, N>& tangents) {
  const bool prev = is_fwd_grad_enabled();
  const int level = top_live_level() + 1;
  interpreter_scope scope(transform_type::jvp, level);
  scope.entry().prev_fwd_grad_mode = prev;
  const std::uint64_t serial = scope.entry().serial;
  tower::detail::fwd_grad_scope fwd(scope.entry());
  std::array<value, N> wrapped;
  for (std::size_t i = 0; i < N; ++i) {
    if (primals[i].shape() != tangents[i].shape())
      throw error("jvp: tangent " + std::to_string(i) + " has shape " + tower::detail::shape_str(tangents[i].shape()) +
                  " but its primal has shape " + tower::detail::shape_str(primals[i].shape()));
    wrapped[i] = wrap_dual(level, serial, primals[i], tangents[i]);
  }
  auto r = call(wrapped);
  auto split = [&](const auto& v) {  // (generic: zeros_like is instantiated where this runs)
    if (v.level() == level && v.get().serial == serial) return std::make_pair(v.get().inner, v.get().tangent);
    return std::make_pair(v, zeros_like(v));
  };
  if constexpr (std::is_same_v<decltype(r), value>) {
    return split(r);
  } else {
    return std::make_pair(tree_map([&](const value& v) { return split(v).first; }, r),
                          tree_map([&](const value& v) { return split(v).second; }, r));
  }
}

}  // namespace tower::dyn
