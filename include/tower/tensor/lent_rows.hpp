#pragma once
// Output storage lent to a thread, so that a result is computed where the caller keeps it
// instead of being copied there. Two kinds of loan:
//   - output rows: tw::parallel (parallel.hpp) lends each grain its rows of the whole batch's
//     output; the forms of vmap that allocate their output before writing all of it (the
//     fixed-rows loop, the runtime path's fused program) take them instead of new storage. Only
//     those final outputs take such a loan, so the rows hold nothing else.
//   - kernel rows: vmap's packets (packet_rows below, on both paths) lend each packet its rows of
//     the output, and the next kernel result of as many elements (kernels::zip's broadcast
//     products) takes them, whether or not f returns it. The lender copies f's result over the
//     rows when it is another value, and first gives its output storage of its own
//     (copy-on-write) if the value that took them is still alive, so that no value sees its
//     numbers change.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "tower/tensor/tensor.hpp"

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
  explicit lend_output(tensor<T>& rows) : saved_(std::exchange(lent_output_slot<T, K>(), &rows)) {
    open_loans.fetch_add(1);
  }
  ~lend_output() {
    lent_output_slot<T, K>() = saved_;
    open_loans.fetch_sub(1);
  }
  lend_output(const lend_output&) = delete;
  lend_output& operator=(const lend_output&) = delete;

 private:
  tensor<T>* saved_;
};

/// A [B, ...] result assembled from packets of examples, each a [n, ...] tensor (vmap's packets
/// on both paths). The first packet's result shows the shape and is copied; from the second on,
/// the packet is computed while its rows of the output are lent (kernel kind), so the kernel that
/// makes its result writes there and nothing is copied.
template <class T>
class packet_rows {
 public:
  explicit packet_rows(std::int64_t bs) : bs_(bs) {}

  /// Rows [b0, b0 + n) from compute(), which returns them as a [n, ...] tensor.
  template <class Compute>
  void compute(std::int64_t b0, std::int64_t n, Compute&& compute) {
    if (!started()) return put(b0, compute());
    std::optional<tensor<T>> rows(leading_rows(whole_, b0, n)), r;
    {
      const lend_output<T, loan_kind::kernel> loan(*rows);
      r.emplace(compute());
    }
    rows.reset();  // (so that only values f made can share the output's storage now)
    put(b0, *r);
  }
  /// Rows [b0, b0 + r.size(0)) from r.
  void put(std::int64_t b0, const tensor<T>& r) {
    const std::int64_t n = r.size(0);
    const std::int64_t per = r.numel() / std::max<std::int64_t>(n, 1);
    if (!started()) {
      shape_t s = r.shape();
      s[0] = bs_;
      whole_ = tensor<T>(std::move(s), buffer<T>(static_cast<std::size_t>(bs_ * per)));
    }
    if (r.data() == std::as_const(whole_).data() + b0 * per) return;  // computed in its rows
    // Mutable access: if a value f computed took these rows and is still alive (f kept it), the
    // output first gets storage of its own (copy-on-write), and that value keeps its numbers.
    std::memmove(whole_.data() + b0 * per, r.data(), static_cast<std::size_t>(r.numel()) * sizeof(T));
  }
  bool started() const { return whole_.dim() > 0; }
  /// The [B, ...] result (after at least one packet).
  const tensor<T>& whole() const { return whole_; }

 private:
  std::int64_t bs_;
  tensor<T> whole_;
};

}  // namespace tower::detail
