#pragma once
// Output storage lent to a thread, so that a result is computed where the caller keeps it
// instead of being copied there. Two kinds of loan:
//   - output rows: tw::parallel (parallel.hpp) lends each grain its rows of the whole batch's
//     output; the forms of vmap that allocate their output before writing all of it (the
//     fixed-rows loop, the runtime path's fused program) take them instead of new storage. Only
//     those final outputs take such a loan, so the rows hold nothing else.
//   - kernel rows: vmap's packets (fused_vmap.hpp) lend each packet its rows of the output, and
//     the next kernel result of as many elements (kernels::zip's broadcast products) takes them,
//     whether or not f returns it. The lender copies f's result over the rows when it is another
//     value, and first gives its output storage of its own (copy-on-write) if the value that took
//     them is still alive, so that no value sees its numbers change.
#include <atomic>
#include <cstdint>
#include <utility>

#include "tower/tensor.hpp"

namespace tower::detail {

/// How many loans are open on all threads: while none is, a form looks no further.
inline std::atomic<int> open_loans{0};

enum class loan_kind { output, kernel };

template <class T, loan_kind K = loan_kind::output>
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

/// The rows of kind K lent to this thread if they hold n elements, else nullptr.
template <class T, loan_kind K = loan_kind::output>
tensor<T>* lent_output(std::int64_t n) {
  if (open_loans.load(std::memory_order_relaxed) == 0) [[likely]]
    return nullptr;
  tensor<T>* lent = lent_output_slot<T, K>();
  return lent != nullptr && lent->numel() == n ? lent : nullptr;
}

/// A tensor of shape s (n elements) that the caller writes in full through p: the rows of kind K
/// lent to this thread when they hold n elements, else new storage.
template <class T, loan_kind K = loan_kind::output>
tensor<T> new_output(shape_t s, std::int64_t n, T*& p) {
  if (lent_output<T, K>(n)) [[unlikely]]
    return take_loan(lent_output_slot<T, K>(), std::move(s), p);
  tensor<T> r(std::move(s), buffer<T>(static_cast<std::size_t>(n)));
  p = const_cast<T*>(std::as_const(r).data());  // (r's storage is its own)
  return r;
}

/// Lends `rows` to this thread's next new_output of kind K of as many elements, until the end of
/// the scope.
template <class T, loan_kind K = loan_kind::output>
class lend_output {
 public:
  explicit lend_output(tensor<T>& rows) : saved_(std::exchange(lent_output_slot<T, K>(), &rows)) { open_loans.fetch_add(1); }
  ~lend_output() {
    lent_output_slot<T, K>() = saved_;
    open_loans.fetch_sub(1);
  }
  lend_output(const lend_output&) = delete;
  lend_output& operator=(const lend_output&) = delete;

 private:
  tensor<T>* saved_;
};

}  // namespace tower::detail
