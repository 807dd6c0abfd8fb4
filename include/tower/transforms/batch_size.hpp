#pragma once
// The batch size vmap reads from its arguments, with the errors both paths raise.
#include <cstdint>
#include <string>

#include "tower/error.hpp"
#include "tower/tensor.hpp"

namespace tower::detail {

/// Checks argument `index` (logical shape `s`, batched at `dim`) and merges its batch size into `bs`.
inline void merge_batch_size(std::size_t index, std::int64_t dim, const shape_t& s, std::int64_t& bs, std::string& first) {
  const auto r = static_cast<std::int64_t>(s.size());
  if (dim < -r || dim >= r)
    throw error("vmap: in_dims[" + std::to_string(index) + "] = " + std::to_string(dim) + " is out of range for argument " +
                std::to_string(index) + " of shape " + shape_str(s));
  const std::int64_t n = s[static_cast<std::size_t>(dim < 0 ? dim + r : dim)];
  const std::string here = "argument " + std::to_string(index) + " has size " + std::to_string(n) + " at dim " + std::to_string(dim);
  if (bs < 0) {
    bs = n;
    first = here;
  } else if (n != bs) {
    throw error("vmap: batch sizes differ: " + first + ", " + here);
  }
}

inline void require_batched(std::int64_t bs) {
  if (bs < 0) throw error("vmap: at least one argument must be batched, but in_dims are all none");
}

}  // namespace tower::detail
