#pragma once
// Output storage lent to a thread: tw::parallel (parallel.hpp) lends each grain its rows of the
// whole batch's output, and the forms of vmap that allocate their output before writing all of
// it (the fixed-rows loop, the runtime path's fused program) take those rows instead of a new
// buffer, so a grain writes its result where the caller receives it.
#include <atomic>
#include <cstdint>
#include <utility>

#include "tower/tensor.hpp"

namespace tower::detail {

/// How many loans are open on all threads: while none is, a form looks no further.
inline std::atomic<int> open_loans{0};

template <class T>
inline tensor<T>*& lent_output_slot() {
  thread_local tensor<T>* slot = nullptr;
  return slot;
}

/// A tensor of shape s (n elements) that the caller writes in full through p: the rows lent to
/// this thread when they hold n elements (each loan is taken once), else new storage.
template <class T>
[[gnu::cold, gnu::noinline]] tensor<T> take_loan(tensor<T>*& lent, shape_t s, T*& p) {
  tensor<T> r = lent->with_shape(std::move(s));
  lent = nullptr;
  // The loan's rows belong to this grain alone: written in place, without copy-on-write.
  p = const_cast<T*>(std::as_const(r).data());
  return r;
}

/// The rows lent to this thread if they hold n elements, else nullptr.
template <class T>
tensor<T>* lent_output(std::int64_t n) {
  if (open_loans.load(std::memory_order_relaxed) == 0) [[likely]]
    return nullptr;
  tensor<T>* lent = lent_output_slot<T>();
  return lent != nullptr && lent->numel() == n ? lent : nullptr;
}

template <class T>
tensor<T> new_output(shape_t s, std::int64_t n, T*& p) {
  if (lent_output<T>(n)) [[unlikely]]
    return take_loan(lent_output_slot<T>(), std::move(s), p);
  tensor<T> r(std::move(s), buffer<T>(static_cast<std::size_t>(n)));
  p = const_cast<T*>(std::as_const(r).data());  // (r's storage is its own)
  return r;
}

/// Lends `rows` to this thread's next new_output of as many elements, until the end of the scope.
template <class T>
class lend_output {
 public:
  explicit lend_output(tensor<T>& rows) : saved_(std::exchange(lent_output_slot<T>(), &rows)) { open_loans.fetch_add(1); }
  ~lend_output() {
    lent_output_slot<T>() = saved_;
    open_loans.fetch_sub(1);
  }
  lend_output(const lend_output&) = delete;
  lend_output& operator=(const lend_output&) = delete;

 private:
  tensor<T>* saved_;
};

}  // namespace tower::detail
