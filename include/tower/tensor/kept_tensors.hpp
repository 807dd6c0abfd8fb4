#pragma once
// kept_per_thread: constant tensors that transforms ask for again and again (jacrev's identity
// basis, jvp's zero tangent of a weight), built once per shape and shared.
//
//   tensor<double> e = detail::kept_per_thread<double>(s, [&] { return build(s); });
//
// Each call site (each `make` type) keeps the last 4 tensors it built, up to 512 KiB each, per
// thread. Sharing is safe because tensors copy on write: whoever writes to one gets a copy.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tower/tensor/tensor.hpp"

namespace tower::detail {

template <class T, class Make>
tensor<T> kept_per_thread(const shape_t& s, Make&& make) {
  constexpr std::size_t kept = 4;
  constexpr std::int64_t largest_kept = std::int64_t{1} << 16;  // elements
  thread_local std::vector<tensor<T>> recent;
  for (const tensor<T>& t : recent)
    if (t.shape() == s) return t;
  tensor<T> t = make();
  if (t.numel() <= largest_kept) {
    if (recent.size() == kept) recent.erase(recent.begin());
    recent.push_back(t);
  }
  return t;
}

}  // namespace tower::detail
