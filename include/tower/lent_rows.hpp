#pragma once
// Output storage lent to a thread: tw::parallel (parallel.hpp) lends each grain its rows of the
// whole batch's output, and the forms of vmap that allocate their output before writing all of
// it (the fixed-rows loop, the runtime path's fused program) take those rows instead of a new
// buffer, so a grain writes its result where the caller receives it.
#include <cstdint>
#include <utility>

#include "tower/tensor.hpp"

namespace tower::detail {

template <class T>
inline tensor<T>*& lent_output_slot() {
  thread_local tensor<T>* slot = nullptr;
  return slot;
}

/// A tensor of shape s that the caller writes in full through p: the rows lent to this thread
/// when they hold as many elements (each loan is taken once), else new storage.
template <class T>
tensor<T> new_output(shape_t s, T*& p) {
  tensor<T>*& lent = lent_output_slot<T>();
  if (lent != nullptr && lent->numel() == numel_of(s)) [[unlikely]] {
    tensor<T> r = lent->with_shape(std::move(s));
    lent = nullptr;
    // The loan's rows belong to this grain alone: written in place, without copy-on-write.
    p = const_cast<T*>(std::as_const(r).data());
    return r;
  }
  const auto n = static_cast<std::size_t>(numel_of(s));
  tensor<T> r(std::move(s), buffer<T>(n));
  p = r.data();
  return r;
}

/// Lends `rows` to this thread's next new_output of as many elements, until the end of the scope.
template <class T>
class lend_output {
 public:
  explicit lend_output(tensor<T>& rows) : saved_(std::exchange(lent_output_slot<T>(), &rows)) {}
  ~lend_output() { lent_output_slot<T>() = saved_; }
  lend_output(const lend_output&) = delete;
  lend_output& operator=(const lend_output&) = delete;

 private:
  tensor<T>* saved_;
};

}  // namespace tower::detail
