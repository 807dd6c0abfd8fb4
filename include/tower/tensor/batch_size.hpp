#pragma once
// The batch size vmap reads from its arguments, with the errors both paths raise.
#include <cstdint>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "tower/core/error.hpp"
#include "tower/tensor/tensor.hpp"

namespace tower::detail {

/// The dim of an output of shape s (its batch dim included) where out_dims' entry d puts the
/// batch (negative from the end); a tower::error that names vmap's out_dims when d is outside.
inline std::int64_t out_dim_of(std::int64_t d, const shape_t& s) {
  const auto r = static_cast<std::int64_t>(s.size());
  if (d < -r || d >= r)
    throw error("vmap: out_dims entry " + std::to_string(d) + " is out of range for an output of shape " +
                shape_str(s) + " (its batch dim included)");
  return d < 0 ? d + r : d;
}

/// "argument 1 has size 3 at dim 0": the words of the batch-size mismatch error.
inline std::string batch_size_source(std::size_t index, std::int64_t n, std::int64_t dim) {
  return "argument " + std::to_string(index) + " has size " + std::to_string(n) + " at dim " + std::to_string(dim);
}

/// Where the batch size came from (the first batched argument); the message is built only
/// when sizes differ.
struct batch_origin {
  std::size_t index = 0;
  std::int64_t dim = 0;
};

/// Checks argument `index` (logical shape `s`, batched at `dim`) and merges its batch size into `bs`.
inline void merge_batch_size(std::size_t index, std::int64_t dim, const shape_t& s, std::int64_t& bs,
                             batch_origin& first) {
  const auto r = static_cast<std::int64_t>(s.size());
  if (dim < -r || dim >= r)
    throw error("vmap: in_dims[" + std::to_string(index) + "] = " + std::to_string(dim) +
                " is out of range for argument " + std::to_string(index) + " of shape " + shape_str(s));
  const std::int64_t n = s[static_cast<std::size_t>(dim < 0 ? dim + r : dim)];
  if (bs < 0) {
    bs = n;
    first = {index, dim};
  } else if (n != bs) {
    throw error("vmap: batch sizes differ: " + batch_size_source(first.index, bs, first.dim) + ", " +
                batch_size_source(index, n, dim));
  }
}

/// The same, recording the first batched argument as its words (the static path's form).
inline void merge_batch_size(std::size_t index, std::int64_t dim, const shape_t& s, std::int64_t& bs,
                             std::string& first) {
  const std::int64_t before = bs;
  batch_origin o;
  if (!first.empty()) {  // a size from the string form: report it as it was recorded
    const auto r = static_cast<std::int64_t>(s.size());
    if (dim >= -r && dim < r) {
      const std::int64_t n = s[static_cast<std::size_t>(dim < 0 ? dim + r : dim)];
      if (n != bs) throw error("vmap: batch sizes differ: " + first + ", " + batch_size_source(index, n, dim));
    }
  }
  merge_batch_size(index, dim, s, bs, o);
  if (before < 0) first = batch_size_source(index, bs, dim);
}

/// An error raised while vmap ran an op, with the shapes the op's arguments have per example: the
/// kernel saw physical shapes (the batch one of their dims), the user wrote f for one example.
class vmap_op_error : public error {
 public:
  vmap_op_error(const std::string& kernel, const std::string& shapes)
      : error(kernel + " (inside vmap, where the op's arguments have shapes " + shapes + " per example)"),
        kernel_(kernel) {}
  const std::string& kernel_message() const { return kernel_; }

 private:
  std::string kernel_;
};

/// In a catch block around an op under vmap: rethrows the tower::error being handled as a
/// vmap_op_error with the op's per-example argument shapes. An error an inner vmap worded is
/// worded again here, so the outermost vmap's shapes (those of f's own values) are the ones shown.
[[noreturn]] inline void rethrow_per_example(const std::vector<shape_t>& shapes) {
  std::string kernel;
  try {
    throw;
  } catch (const vmap_op_error& e) {
    kernel = e.kernel_message();
  } catch (const error& e) {
    if (typeid(e) != typeid(error)) throw;  // a user's own kind of tower::error keeps its type
    kernel = std::string(e.what()).substr(std::string_view("tower: ").size());
  }
  std::string words;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    words += (i == 0 ? "" : i + 1 == shapes.size() ? " and " : ", ") + shape_str(shapes[i]);
  throw vmap_op_error(kernel, words);
}

inline void require_batched(std::int64_t bs) {
  if (bs < 0) throw error("vmap: at least one argument must be batched, but in_dims are all none");
}

}  // namespace tower::detail
