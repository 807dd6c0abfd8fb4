#pragma once
// dyn::value: the value of the runtime path, for code the compiler cannot see through
// (type-erased functions, transform depth chosen at run time).
//
//   std::function<tw::dyn::value(tw::dyn::value)> f = [](tw::dyn::value x) { return tw::sin(x) * x; };
//   double d = tw::grad(f)(2.0).item();
//
// A value is a plain tensor<double> (scalars are rank 0) or one wrapper layer — vmap's batched
// value or grad's tracked value at a runtime level — around another value, as in functorch.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "tower/error.hpp"
#include "tower/interpreter_stack.hpp"
#include "tower/static_values.hpp"
#include "tower/tensor.hpp"
#include "tower/transform_type.hpp"

namespace tower::dyn {

struct grad_node;

class value {
 public:
  struct rep;

  value();
  explicit value(double v);
  explicit value(tensor<double> t);
  explicit value(std::shared_ptr<const rep> r) : rep_(std::move(r)) {}
  /// A static-path value (batched, grad_value, dual) handed to runtime code: its levels carry
  /// over, and a grad level's tracking is bridged back to the static tape (bridge.hpp).
  template <class W>
    requires is_static_wrapper_v<W>
  value(const W& w);  // NOLINT: implicit on purpose, so erased functions accept static values

  /// Logical shape (what the transformed function sees).
  shape_t shape() const;
  /// 0 for a plain value, else the level of the outermost wrapper.
  int level() const;
  bool is_plain() const { return level() == 0; }

  /// The plain tensor; tower::error if the value is still wrapped by a live transform.
  tensor<double> to_tensor() const;
  /// The single element of a one-element value.
  double item() const { return to_tensor().item(); }

  const rep& get() const { return *rep_; }

 private:
  std::shared_ptr<const rep> rep_;
};

struct value::rep {
  int level = 0;                           // 0: plain
  transform_type key = transform_type::vmap;
  tensor<double> plain;                    // level 0
  value inner{nullptr};                    // wrapper: vmap's physical value or grad's primal
  std::uint64_t serial = 0;                // the transform call that made the wrapper
  std::shared_ptr<grad_node> node;         // grad: null for a constant
  value tangent{nullptr};                  // jvp: the tangent of `inner`
};

/// A node of the runtime autograd graph (functorch's grad levels use PyTorch autograd).
struct grad_node {
  std::vector<std::shared_ptr<grad_node>> parents;            // one per input, null if untracked
  std::function<std::vector<value>(const value& g)> vjp;      // empty for leaves
};

inline value::value() : value(0.0) {}
inline value::value(double v) : value(tensor<double>(v)) {}
inline value::value(tensor<double> t) {
  auto r = std::make_shared<rep>();
  r->plain = std::move(t);
  rep_ = std::move(r);
}

inline int value::level() const { return rep_ ? rep_->level : 0; }

inline shape_t value::shape() const {
  const rep& r = get();
  if (r.level == 0) return r.plain.shape();
  shape_t s = r.inner.shape();
  if (r.key == transform_type::vmap) s.erase(s.begin());
  return s;
}

inline tensor<double> value::to_tensor() const {
  const value* v = this;
  while (v->level() > 0) {
    if (find_live_interpreter(v->get().serial))
      throw error("dyn::value: to_tensor on a value wrapped by a live " + to_string(v->get().key) + " (level " +
                  std::to_string(v->level()) + ")");
    if (v->get().key == transform_type::vmap)
      throw error("dyn::value: a value batched by a vmap was used after that vmap returned");
    v = &v->get().inner;  // a dead grad wrapper is a constant
  }
  return v->get().plain;
}

/// Wraps `inner` at a level.
inline value wrap(transform_type key, int level, std::uint64_t serial, value inner, std::shared_ptr<grad_node> node = {}) {
  auto r = std::make_shared<value::rep>();
  r->level = level;
  r->key = key;
  r->inner = std::move(inner);
  r->serial = serial;
  r->node = std::move(node);
  return value(std::shared_ptr<const value::rep>(std::move(r)));
}

/// Wraps a primal and its tangent at a jvp level.
inline value wrap_dual(int level, std::uint64_t serial, value primal, value tangent) {
  auto r = std::make_shared<value::rep>();
  r->level = level;
  r->key = transform_type::jvp;
  r->inner = std::move(primal);
  r->serial = serial;
  r->tangent = std::move(tangent);
  return value(std::shared_ptr<const value::rep>(std::move(r)));
}

}  // namespace tower::dyn
