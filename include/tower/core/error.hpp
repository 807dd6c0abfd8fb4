#pragma once
// tower::error — the one exception type of the runtime path.
//
// Every runtime misuse (shape mismatch, bad dim, unknown transform key, missing rule, a value
// used after its transform returned) raises tower::error with a message naming the op, the
// transform and the shapes involved.
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tower/core/shape_vector.hpp"

namespace tower {

/// The exception of every run-time misuse; what() starts with "tower: " and names the op or
/// transform and the shapes (docs/errors.md).
/// \code
/// try {
///   tw::tensor<double> bad({2, 2}, {1, 2, 3});
///   throw std::runtime_error("no error");
/// } catch (const tw::error& e) {
///   if (std::string(e.what()).rfind("tower: ", 0) != 0) throw std::runtime_error("error");
/// }
/// \endcode
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error("tower: " + what) {}
};

namespace detail {
inline std::string shape_str(const shape_t& s) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}
}  // namespace detail

}  // namespace tower
