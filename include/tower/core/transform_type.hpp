#pragma once
// transform_type: the key of an interpreter (functorch's TransformType).
#include <string>

#include "tower/core/error.hpp"

namespace tower {

enum class transform_type : int { vmap = 0, grad = 1, jvp = 2 };

inline constexpr int transform_type_count = 3;

inline std::string to_string(transform_type k) {
  switch (k) {
    case transform_type::vmap:
      return "vmap";
    case transform_type::grad:
      return "grad";
    case transform_type::jvp:
      return "jvp";
  }
  throw error("unknown transform key " + std::to_string(static_cast<int>(k)));
}

}  // namespace tower
