#pragma once
// The bridge between the paths: static transforms around runtime (type-erased) code.
//
//   std::function<tw::dyn::value(tw::dyn::value)> erased = ...;
//   auto d = tw::grad([&](auto x) { return erased(x) * x; })(2.0);   // a dyn::value
//
// A static value handed to runtime code becomes a dyn::value with the same levels: a batched
// value keeps its vmap level (the static vmap's stack entry serves the runtime interpreter), a
// dual keeps its tangent, and a grad value becomes a leaf of the runtime graph whose adjoint is
// pushed back into the static tape when the static grad runs its backward pass. Once a
// computation is runtime it stays runtime: results are dyn::value.
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "tower/runtime/dyn_value.hpp"
#include "tower/core/interpreter_stack.hpp"
#include "tower/runtime/dispatch.hpp"
#include "tower/static/dispatch.hpp"
#include "tower/static/values.hpp"
#include "tower/transforms/runtime/transforms.hpp"

namespace tower {

namespace detail {

/// A runtime leaf standing for a static node, and how to push its adjoint back.
struct bridge {
  std::shared_ptr<dyn::grad_node> leaf;
  std::function<void(const dyn::value&)> push;
};

inline std::unordered_map<std::uint64_t, std::vector<bridge>>& bridges() {
  thread_local std::unordered_map<std::uint64_t, std::vector<bridge>> b;
  return b;
}

/// RAII: a static grad call's bridges live exactly as long as the call.
class bridge_scope {
 public:
  explicit bridge_scope(std::uint64_t serial) : serial_(serial) {}
  ~bridge_scope() { bridges().erase(serial_); }
  bridge_scope(const bridge_scope&) = delete;
  bridge_scope& operator=(const bridge_scope&) = delete;

 private:
  std::uint64_t serial_;
};

inline void bridge_push(const dyn::detail::leaf_adjoints& adjoint, std::uint64_t serial) {
  auto it = bridges().find(serial);
  if (it == bridges().end()) return;
  for (const auto& b : it->second)
    if (const dyn::value* a = dyn::detail::find_adjoint(adjoint, b.leaf.get())) b.push(*a);
}

/// A static tape node standing for a value the runtime graph computed: its backward runs the
/// runtime sweep from that value, seeded with its adjoint, and pushes into the bridges.
template <class V>
struct bridge_back_node final : var_node<V> {
  dyn::value tracked;
  std::uint64_t serial;
  bridge_back_node(dyn::value v, std::uint64_t s) : tracked(std::move(v)), serial(s) {}
  void backward() override {
    if (!this->adjoint) return;
    const dyn::value seed = runtime::detail::to_value(*this->adjoint);
    bridge_push(dyn::detail::backward(tracked, &seed), serial);
  }
};

/// A dyn::value as the static type V (levels the value lacks are lifted; a tracked runtime
/// grad value cannot become static and raises tower::error).
template <class V>
V from_dyn(const dyn::value& v) {
  constexpr int lv = level_of<V>();
  if constexpr (lv == 0) {
    return convert_adjoint<V>(v.to_tensor());
  } else {
    if (v.level() > lv) {
      if (v.get().key == transform_type::grad && v.get().node && find_live_interpreter(v.get().serial))
        throw error("bridge: the value depends on a grad level (" + std::to_string(v.level()) +
                    ") its static type cannot carry");
      if (v.get().key == transform_type::vmap)
        throw error("bridge: a value batched at level " + std::to_string(v.level()) +
                    " cannot become a static value without it");
      return from_dyn<V>(v.get().inner);
    }
    using P = typename inner_type<V>::type;
    if (v.level() < lv) return convert_adjoint<V>(from_dyn<P>(v));
    const auto& r = v.get();
    if constexpr (V::key == transform_type::vmap) {
      const interpreter_entry* e = find_live_interpreter(r.serial);
      return V{from_dyn<P>(r.inner), e ? e->batch_size : 0, r.serial};
    } else if constexpr (V::key == transform_type::jvp) {
      return V{from_dyn<P>(r.inner), from_dyn<typename V::tangent_type>(r.tangent), r.serial};
    } else {
      V out{from_dyn<P>(r.inner), nullptr, r.serial};
      const interpreter_entry* e = find_live_interpreter(r.serial);
      if (r.node && e && e->state && grad_enabled_at(e->level)) {
        // Tracked by the runtime graph at a static grad's level: a node on that grad's tape
        // carries the dependence back (nested static grads around runtime code).
        auto* tape = static_cast<grad_tape*>(e->state);
        out.node = tape->make<bridge_back_node<typename V::adjoint_type>>(v, r.serial);
      }
      return out;
    }
  }
}

/// The static grad's backward when its function returned a dyn::value: the runtime sweep, then
/// each bridge pushes its leaf's adjoint into the static tape.
template <class V>
void bridge_backward(const V& out, std::uint64_t serial) {
  bridge_push(dyn::detail::backward(out), serial);
}

}  // namespace detail

namespace runtime::detail {
template <class W>
value static_to_value(const W& w) {
  if constexpr (W::key == transform_type::vmap) {
    if constexpr (is_tensor_v<typename W::physical_type>)
      if (w.batch_last) return static_to_value(tower::detail::batch_first(w));  // runtime values keep the batch first
    return dyn::wrap(transform_type::vmap, W::level, w.serial, to_value(w.value));
  } else if constexpr (W::key == transform_type::jvp) {
    return dyn::wrap_dual(W::level, w.serial, to_value(w.primal), to_value(w.tangent));
  } else {
    std::shared_ptr<dyn::grad_node> leaf;
    if (w.node && find_live_interpreter(w.serial)) {
      leaf = std::make_shared<dyn::grad_node>();
      auto* node = w.node;
      using V = typename W::adjoint_type;
      tower::detail::bridges()[w.serial].push_back(
          {leaf, [node](const dyn::value& a) { node->accumulate(tower::detail::from_dyn<V>(a)); }});
    }
    return dyn::wrap(transform_type::grad, W::level, w.serial, to_value(w.primal), std::move(leaf));
  }
}
}  // namespace runtime::detail

template <class W>
  requires is_static_wrapper_v<W>
dyn::value::value(const W& w) : value(runtime::detail::static_to_value(w)) {}

}  // namespace tower
