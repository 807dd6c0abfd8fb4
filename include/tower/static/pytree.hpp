#pragma once
// Pytrees: arguments and results made of std::tuple, std::pair, std::array, std::vector and
// Boost.Hana structs, with numbers, tensors and transform wrappers as leaves. Transforms map
// over the leaves and give results back in the same structure (JAX's tree_map).
//
//   template <class T> struct mlp {                       // a model's parameters
//     BOOST_HANA_DEFINE_STRUCT(mlp, (T, W1), (T, b1), (T, W2), (T, b2));
//   };
//   mlp<tw::tensor<double>> g = tw::grad(loss)(params, x, y);
//
// A struct is a template over its leaf type, so that tower can rebuild it with wrapped leaves
// (mlp<grad_value<tensor<double>, 1>> inside grad): C++ cannot put a wrapped value in a member
// declared as tensor<double>.
#include <array>
#include <boost/hana/accessors.hpp>
#include <boost/hana/at.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/length.hpp>
#include <boost/hana/second.hpp>
#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tower/core/error.hpp"
#include "tower/static/scalar_dual.hpp"
#include "tower/static/values.hpp"

namespace tower {

/// A pytree leaf: a number, a tensor, a transform wrapper or a runtime value.
template <class X>
inline constexpr bool is_leaf_v = std::is_arithmetic_v<std::remove_cvref_t<X>> || is_tensor_v<X> ||
                                  is_static_wrapper_v<X> || is_dyn_v<X> || is_scalar_dual_v<X>;

namespace detail {
template <class X>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class X>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class X>
struct is_tuple_like : std::false_type {};
template <class... T>
struct is_tuple_like<std::tuple<T...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};

template <class S, class U>
struct rebind_struct;
template <template <class> class S, class T, class U>
struct rebind_struct<S<T>, U> {
  using type = S<U>;
};
template <class S>
struct struct_leaf;
template <template <class> class S, class T>
struct struct_leaf<S<T>> {
  using type = T;
};
}  // namespace detail

template <class X>
inline constexpr bool is_hana_struct_v = !is_leaf_v<X> && boost::hana::Struct<std::remove_cvref_t<X>>::value;

/// A Hana struct that is not a template S<T> over its leaf type: tower cannot rebuild it with
/// other leaves (traced values, gradients), so it is no pytree.
template <class X>
inline constexpr bool is_untemplated_struct_v =
    is_hana_struct_v<X> && !requires { typename detail::struct_leaf<std::remove_cvref_t<X>>::type; };

namespace detail {
/// The number of members of a Hana struct, and member I of one.
template <class S>
inline constexpr std::size_t struct_size_v =
    decltype(boost::hana::length(boost::hana::accessors<std::remove_cvref_t<S>>()))::value;
template <std::size_t I, class S>
decltype(auto) member(S&& s) {
  return boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<std::remove_cvref_t<S>>()))(
      std::forward<S>(s));
}
}  // namespace detail

/// A type tower can map over: a leaf or a container of pytrees.
template <class X>
inline constexpr bool is_pytree_v = is_leaf_v<X> || detail::is_tuple_like<std::remove_cvref_t<X>>::value ||
                                    detail::is_std_array<std::remove_cvref_t<X>>::value ||
                                    detail::is_std_vector<std::remove_cvref_t<X>>::value || is_hana_struct_v<X>;

/// Applies f to every leaf; the result has the same structure.
/// \code
/// auto t = tw::tree_map([](auto v) { return v * 2.0; }, std::tuple{1.0, std::vector<double>{2.0, 3.0}});
/// if (std::get<1>(t)[1] != 6.0) throw std::runtime_error("tree_map");
/// \endcode
template <class F, class X>
auto tree_map(F&& f, const X& x) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<D>) {
    return f(x);
  } else if constexpr (detail::is_tuple_like<D>::value) {
    // Braced initialisation: the leaves are visited in order (tree_for_each relies on it).
    if constexpr (requires { x.first; })
      return std::pair<decltype(tree_map(f, x.first)), decltype(tree_map(f, x.second))>{tree_map(f, x.first),
                                                                                        tree_map(f, x.second)};
    else
      return std::apply([&](const auto&... e) { return std::tuple<decltype(tree_map(f, e))...>{tree_map(f, e)...}; },
                        x);
  } else if constexpr (detail::is_std_array<D>::value) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<decltype(tree_map(f, x[0])), sizeof...(I)>{tree_map(f, x[I])...};
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  } else if constexpr (detail::is_std_vector<D>::value) {
    std::vector<decltype(tree_map(f, x[0]))> r;
    r.reserve(x.size());
    for (const auto& e : x) r.push_back(tree_map(f, e));
    return r;
  } else {
    static_assert(is_hana_struct_v<D>,
                  "tower: this type is not a pytree (tuple, pair, array, vector, Hana struct or a leaf)");
    static_assert(!is_untemplated_struct_v<D>,
                  "tower: a Hana struct used as a pytree must be a template over its leaf type (template <class T> "
                  "struct S whose leaves have type T), so that transforms can rebuild it with their values");
    using T = typename detail::struct_leaf<D>::type;
    using R = typename detail::rebind_struct<D, decltype(tree_map(f, std::declval<const T&>()))>::type;
    R r{};
    constexpr std::size_t n = decltype(boost::hana::length(boost::hana::accessors<D>()))::value;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<R>()))(r) =
            tree_map(f, boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<D>()))(x))),
       ...);
    }(std::make_index_sequence<n>{});
    return r;
  }
}

namespace detail {
/// Whether pytree types X and Y have the same structure: the same containers (a pair matches a
/// 2-tuple), array sizes and struct templates, and a leaf wherever the other has one.
template <class X0, class Y0>
constexpr bool same_structure() {
  using X = std::remove_cvref_t<X0>;
  using Y = std::remove_cvref_t<Y0>;
  if constexpr (is_leaf_v<X> || is_leaf_v<Y>) {
    return is_leaf_v<X> && is_leaf_v<Y>;
  } else if constexpr (is_tuple_like<X>::value || is_tuple_like<Y>::value) {
    if constexpr (!is_tuple_like<X>::value || !is_tuple_like<Y>::value) return false;
    else if constexpr (std::tuple_size_v<X> != std::tuple_size_v<Y>) return false;
    else
      return []<std::size_t... I>(std::index_sequence<I...>) {
        return (same_structure<std::tuple_element_t<I, X>, std::tuple_element_t<I, Y>>() && ...);
      }(std::make_index_sequence<std::tuple_size_v<X>>{});
  } else if constexpr (is_std_array<X>::value || is_std_array<Y>::value) {
    if constexpr (!is_std_array<X>::value || !is_std_array<Y>::value) return false;
    else
      return std::tuple_size_v<X> == std::tuple_size_v<Y> &&
             same_structure<typename X::value_type, typename Y::value_type>();
  } else if constexpr (is_std_vector<X>::value || is_std_vector<Y>::value) {
    if constexpr (!is_std_vector<X>::value || !is_std_vector<Y>::value) return false;
    else return same_structure<typename X::value_type, typename Y::value_type>();
  } else if constexpr (is_hana_struct_v<X> && is_hana_struct_v<Y>) {
    if constexpr (!requires {
                    typename struct_leaf<X>::type;
                    typename struct_leaf<Y>::type;
                  })
      return false;
    else
      return std::is_same_v<typename rebind_struct<X, typename struct_leaf<Y>::type>::type, Y> &&
             same_structure<typename struct_leaf<X>::type, typename struct_leaf<Y>::type>();
  } else {
    return false;
  }
}

/// tree_zip, naming `who` when vector lengths differ.
template <class F, class X, class Y>
auto tree_zip_named(const char* who, F&& f, const X& x, const Y& y) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<D>) {
    return f(x, y);
  } else if constexpr (detail::is_tuple_like<D>::value) {
    static_assert(std::tuple_size_v<D> == std::tuple_size_v<std::remove_cvref_t<Y>>,
                  "tower: pytrees differ in structure");
    if constexpr (requires { x.first; }) {
      return std::pair<decltype(tree_zip_named(who, f, x.first, std::get<0>(y))),
                       decltype(tree_zip_named(who, f, x.second, std::get<1>(y)))>{
          tree_zip_named(who, f, x.first, std::get<0>(y)), tree_zip_named(who, f, x.second, std::get<1>(y))};
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::tuple<decltype(tree_zip_named(who, f, std::get<I>(x), std::get<I>(y)))...>{
            tree_zip_named(who, f, std::get<I>(x), std::get<I>(y))...};
      }(std::make_index_sequence<std::tuple_size_v<D>>{});
    }
  } else if constexpr (detail::is_std_array<D>::value) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::array<decltype(tree_zip_named(who, f, x[0], y[0])), sizeof...(I)>{
          tree_zip_named(who, f, x[I], y[I])...};
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  } else if constexpr (detail::is_std_vector<D>::value) {
    if (x.size() != y.size())
      throw error(std::string(who) + ": vectors of different lengths (" + std::to_string(x.size()) + " and " +
                  std::to_string(y.size()) + ")");
    std::vector<decltype(tree_zip_named(who, f, x[0], y[0]))> r;
    r.reserve(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) r.push_back(tree_zip_named(who, f, x[i], y[i]));
    return r;
  } else {
    static_assert(is_hana_struct_v<D>,
                  "tower: this type is not a pytree (tuple, pair, array, vector, Hana struct or a leaf)");
    static_assert(!is_untemplated_struct_v<D>,
                  "tower: a Hana struct used as a pytree must be a template over its leaf type (template <class T> "
                  "struct S whose leaves have type T), so that transforms can rebuild it with their values");
    using T = typename detail::struct_leaf<D>::type;
    using U = typename detail::struct_leaf<std::remove_cvref_t<Y>>::type;
    using R = typename detail::rebind_struct<D, decltype(tree_zip_named(who, f, std::declval<const T&>(),
                                                                        std::declval<const U&>()))>::type;
    R r{};
    constexpr std::size_t n = decltype(boost::hana::length(boost::hana::accessors<D>()))::value;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<R>()))(r) = tree_zip_named(
            who, f, boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<D>()))(x),
            boost::hana::second(boost::hana::at_c<I>(boost::hana::accessors<std::remove_cvref_t<Y>>()))(y))),
       ...);
    }(std::make_index_sequence<n>{});
    return r;
  }
}
}  // namespace detail

/// Applies f to corresponding leaves of two pytrees of the same structure.
/// \code
/// auto s = tw::tree_zip([](auto a, auto b) { return a + b; }, std::pair{1.0, 2.0}, std::pair{10.0, 20.0});
/// if (s.first != 11.0 || s.second != 22.0) throw std::runtime_error("tree_zip");
/// \endcode
template <class F, class X, class Y>
auto tree_zip(F&& f, const X& x, const Y& y) {
  return detail::tree_zip_named("pytree", std::forward<F>(f), x, y);
}

/// tree_map with each leaf's place: f(leaf, get), where get(y) returns (a copy of) the leaf at
/// the same place in a pytree y of the same structure.
/// \code
/// const std::pair<double, double> x{1.0, 2.0}, y{10.0, 20.0};
/// auto s = tw::tree_map_path([&](double leaf, auto get) { return leaf + get(y); }, x);
/// if (std::get<0>(s) != 11.0 || std::get<1>(s) != 22.0) throw std::runtime_error("tree_map_path");
/// \endcode
template <class F, class X, class Get = std::identity>
auto tree_map_path(F&& f, const X& x, Get get = {}) {
  using D = std::remove_cvref_t<X>;
  if constexpr (is_leaf_v<D>) {
    return f(x, [get](const auto& y) { return std::remove_cvref_t<decltype(get(y))>(get(y)); });
  } else if constexpr (detail::is_tuple_like<D>::value || detail::is_std_array<D>::value) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      auto at = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
        return tree_map_path(f, std::get<K>(x), [get](const auto& y) -> decltype(auto) { return std::get<K>(get(y)); });
      };
      if constexpr (detail::is_std_array<D>::value)
        return std::array<decltype(at(std::integral_constant<std::size_t, 0>{})), sizeof...(I)>{
            at(std::integral_constant<std::size_t, I>{})...};
      else
        return std::tuple<decltype(at(std::integral_constant<std::size_t, I>{}))...>{
            at(std::integral_constant<std::size_t, I>{})...};
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  } else if constexpr (detail::is_std_vector<D>::value) {
    auto at = [&](std::size_t k) {
      return tree_map_path(f, x[k], [get, k](const auto& y) -> decltype(auto) { return get(y)[k]; });
    };
    std::vector<decltype(at(0))> r;
    r.reserve(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) r.push_back(at(k));
    return r;
  } else {
    static_assert(is_hana_struct_v<D>,
                  "tower: this type is not a pytree (tuple, pair, array, vector, Hana struct or a leaf)");
    static_assert(!is_untemplated_struct_v<D>,
                  "tower: a Hana struct used as a pytree must be a template over its leaf type (template <class T> "
                  "struct S whose leaves have type T), so that transforms can rebuild it with their values");
    auto at = [&]<std::size_t K>(std::integral_constant<std::size_t, K>) {
      return tree_map_path(f, detail::member<K>(x),
                           [get](const auto& y) -> decltype(auto) { return detail::member<K>(get(y)); });
    };
    using R = typename detail::rebind_struct<D, decltype(at(std::integral_constant<std::size_t, 0>{}))>::type;
    R r{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((detail::member<I>(r) = at(std::integral_constant<std::size_t, I>{})), ...);
    }(std::make_index_sequence<detail::struct_size_v<D>>{});
    return r;
  }
}

/// Calls f on every leaf, in order.
/// \code
/// double total = 0;
/// tw::tree_for_each([&](auto v) { total = total * 10 + v; }, std::tuple{1.0, std::array<double, 2>{2.0, 3.0}});
/// if (total != 123) throw std::runtime_error("tree_for_each");
/// \endcode
template <class F, class X>
void tree_for_each(F&& f, const X& x) {
  (void)tree_map(
      [&](const auto& leaf) {
        f(leaf);
        return 0;
      },
      x);
}

namespace detail {
/// The leaf types of a pytree type, as a std::tuple type (one entry per distinct position kind).
template <class X>
struct leaf_types {
  using type = std::tuple<X>;
};
template <class... T>
struct leaf_types<std::tuple<T...>> {
  using type = decltype(std::tuple_cat(std::declval<typename leaf_types<std::remove_cvref_t<T>>::type>()...));
};
template <class A, class B>
struct leaf_types<std::pair<A, B>> : leaf_types<std::tuple<A, B>> {};
template <class T, std::size_t N>
struct leaf_types<std::array<T, N>> : leaf_types<T> {};
template <class T, class A>
struct leaf_types<std::vector<T, A>> : leaf_types<T> {};
template <template <class> class S, class T>
  requires(is_hana_struct_v<S<T>>)
struct leaf_types<S<T>> : leaf_types<T> {};

template <class X, class Tuple>
struct lift_over;
template <class X, class... L>
struct lift_over<X, std::tuple<L...>> {
  using type = lift_levels_t<X, L...>;
};
}  // namespace detail

/// X lifted to every level carried by any leaf of the pytrees A...
template <class X, class... A>
using lift_levels_over_t = typename detail::lift_over<
    std::remove_cvref_t<X>,
    decltype(std::tuple_cat(std::declval<typename detail::leaf_types<std::remove_cvref_t<A>>::type>()...))>::type;

/// Whether a static value's type carries level l anywhere: in a wrapper, a grad value's adjoint
/// type or a dual's tangent type.
template <class X>
constexpr bool carries_level(int l) {
  using D = std::remove_cvref_t<X>;
  if constexpr (!is_static_wrapper_v<D>) return false;
  else if constexpr (D::key == transform_type::vmap)
    return D::level == l || carries_level<typename D::physical_type>(l);
  else if constexpr (D::key == transform_type::grad)
    return D::level == l || carries_level<typename D::primal_type>(l) || carries_level<typename D::adjoint_type>(l);
  else return D::level == l || carries_level<typename D::primal_type>(l) || carries_level<typename D::tangent_type>(l);
}

/// Whether any leaf of the pytree X carries level l.
template <class X>
constexpr bool tree_carries_level(int l) {
  return []<class... L>(std::type_identity<std::tuple<L...>>, int lv) { return (carries_level<L>(lv) || ...); }(
             std::type_identity<typename detail::leaf_types<std::remove_cvref_t<X>>::type>{}, l);
}

/// Whether the pytree R carries a level in [lo, hi) that none of the pytrees A... carries: a
/// level of a value a function captured (its arguments do not show it).
template <class R, class... A>
constexpr bool carries_levels_beyond(int lo, int hi) {
  for (int l = lo; l < hi; ++l)
    if (tree_carries_level<R>(l) && !(tree_carries_level<A>(l) || ...)) return true;
  return false;
}

/// The highest level any leaf of the pytrees A... carries.
template <class... A>
constexpr int pytree_level() {
  int l = 0;
  auto one = [&]<class... L>(std::type_identity<std::tuple<L...>>) {
    ((l = l < level_of<L>() ? level_of<L>() : l), ...);
  };
  (one(std::type_identity<typename detail::leaf_types<std::remove_cvref_t<A>>::type>{}), ...);
  return l;
}

}  // namespace tower
