#pragma once
// Grad mode: whether grad interpreters record ops, as torch's grad mode does for functorch.
//
//   { tw::no_grad guard;  /* ops here are not recorded by any grad level */ }
//
// grad(f) runs f with grad mode on and keeps the mode that was in force outside on its stack
// entry (interpreter_entry::prev_grad_mode). When that mode was off, grad lowers under no-grad:
// levels below it do not record its ops (functorch's GradInterpreter.lower). An op does not
// always pass through grad's level to be lowered (a static dispatch goes straight to the highest
// level its arguments carry; the runtime one skips a top level none of them is at), so the entry
// sets a thread-local threshold instead, `no_grad_below`, read by every grad level below: one
// compare per op on both paths.
#include "tower/core/interpreter_stack.hpp"

namespace tower {

namespace detail {
struct grad_mode_state {
  bool enabled = true;
  int no_grad_below = 0;    // grad levels below this do not record
  bool fwd_enabled = true;  // forward-mode (jvp) counterpart
  int no_fwd_grad_below = 0;
};
inline grad_mode_state& grad_mode() {
  thread_local grad_mode_state s;
  return s;
}
}  // namespace detail

/// Whether grad records ops on this thread (false inside tw::no_grad).
inline bool is_grad_enabled() { return detail::grad_mode().enabled; }

/// Whether a grad interpreter at `level` records the op it processes now.
inline bool grad_enabled_at(int level) {
  const auto& s = detail::grad_mode();
  return s.enabled && level >= s.no_grad_below;
}

/// Whether jvp computes tangents on this thread (false inside tw::no_fwd_grad).
inline bool is_fwd_grad_enabled() { return detail::grad_mode().fwd_enabled; }

/// Whether a jvp interpreter at `level` computes tangents for the op it processes now.
inline bool fwd_grad_enabled_at(int level) {
  const auto& s = detail::grad_mode();
  return s.fwd_enabled && level >= s.no_fwd_grad_below;
}

/// RAII: disables forward-mode tangents for the scope (functorch's fwAD enable_fwd_grad(False)).
class no_fwd_grad {
 public:
  no_fwd_grad() : saved_(detail::grad_mode().fwd_enabled) { detail::grad_mode().fwd_enabled = false; }
  ~no_fwd_grad() { detail::grad_mode().fwd_enabled = saved_; }
  no_fwd_grad(const no_fwd_grad&) = delete;
  no_fwd_grad& operator=(const no_fwd_grad&) = delete;

 private:
  bool saved_;
};

/// RAII: sets grad mode for a scope and restores it on exit, exceptions included.
class grad_mode_guard {
 public:
  explicit grad_mode_guard(bool enabled) : saved_(detail::grad_mode().enabled) {
    detail::grad_mode().enabled = enabled;
  }
  ~grad_mode_guard() { detail::grad_mode().enabled = saved_; }
  grad_mode_guard(const grad_mode_guard&) = delete;
  grad_mode_guard& operator=(const grad_mode_guard&) = delete;

 private:
  bool saved_;
};

/// Disables recording for the scope (torch.no_grad()).
/// \code
/// auto f = [](auto x) {
///   auto c = [&] { tw::no_grad guard; return x * x; }();   // a constant for grad
///   return c + x;
/// };
/// if (tw::grad(f)(3.0) != 1.0) throw std::runtime_error("no_grad");
/// \endcode
class no_grad : public grad_mode_guard {
 public:
  no_grad() : grad_mode_guard(false) {}
};

/// Enables recording for the scope (torch.enable_grad()).
/// \code
/// auto f = [](auto x) {
///   tw::no_grad off;
///   auto c = [&] { tw::enable_grad on; return x * x; }();   // recorded again
///   return c;
/// };
/// if (tw::grad(f)(3.0) != 6.0) throw std::runtime_error("enable_grad");
/// \endcode
class enable_grad : public grad_mode_guard {
 public:
  enable_grad() : grad_mode_guard(true) {}
};

namespace detail {
/// RAII, grad's lowering (see the top of this file): while grad's entry e lives, grad levels
/// below it do not record if e.prev_grad_mode is off.
class no_grad_below_guard {
 public:
  explicit no_grad_below_guard(const interpreter_entry& e) : saved_(grad_mode().no_grad_below) {
    if (!e.prev_grad_mode && e.level > saved_) grad_mode().no_grad_below = e.level;
  }
  ~no_grad_below_guard() { grad_mode().no_grad_below = saved_; }
  no_grad_below_guard(const no_grad_below_guard&) = delete;
  no_grad_below_guard& operator=(const no_grad_below_guard&) = delete;

 private:
  int saved_;
};

/// RAII for jvp's entry e: forward mode on inside, and jvp levels below skip tangents if
/// e.prev_fwd_grad_mode is off (jvp's lowering, as grad's above).
class fwd_grad_scope {
 public:
  explicit fwd_grad_scope(const interpreter_entry& e)
      : saved_enabled_(grad_mode().fwd_enabled), saved_below_(grad_mode().no_fwd_grad_below) {
    if (!e.prev_fwd_grad_mode && e.level > saved_below_) grad_mode().no_fwd_grad_below = e.level;
    grad_mode().fwd_enabled = true;
  }
  ~fwd_grad_scope() {
    grad_mode().fwd_enabled = saved_enabled_;
    grad_mode().no_fwd_grad_below = saved_below_;
  }
  fwd_grad_scope(const fwd_grad_scope&) = delete;
  fwd_grad_scope& operator=(const fwd_grad_scope&) = delete;

 private:
  bool saved_enabled_;
  int saved_below_;
};
}  // namespace detail

}  // namespace tower
