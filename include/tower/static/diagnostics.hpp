#pragma once
// Static checking of transform composition: compile-time diagnostics whose first error line is a
// message written for the user, not a template backtrace (see docs/diagnostics.md).
//
//   tw::grad([](auto x) { return std::vector{x}; })(1.0);
//   // g++:   error: 'tower::compile_error<tower::diagnostic{"grad: f must return a scalar,
//   //         it returns std::vector<tower::grad_value<double, 1> >"}> error' has incomplete type
//   // clang: error: static_assert failed due to requirement 'always_false<std::vector<...>>'
//   //         "grad: f must return a scalar"
//
// How: a check is a constexpr function returning std::true_type or std::false_type. On failure
// it names the incomplete class template compile_error<diagnostic{"..."}>, whose argument is the
// message assembled at compile time — with the type names (from __PRETTY_FUNCTION__), the op's
// `name`, argument indices and counts in it. g++ prints that argument as a string in the first
// error line. (clang 14 prints class-type template arguments as numbers, so under clang a check
// fails a static_assert with the message's fixed part instead; its requirement names the types.)
// The transform tests a check's result type with `if constexpr` and, on failure, returns
// diagnostics::failed without instantiating anything else: one error, not a cascade.
//
// Checks call each other and the trait helpers below; they know the transforms' options but no
// interpreter internals. The transforms pass in what only they know (the argument types f sees).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tower/core/cotangent_seed.hpp"
#include "tower/core/op_traits.hpp"
#include "tower/static/pytree.hpp"
#include "tower/static/values.hpp"
#include "tower/core/transform_options.hpp"

namespace tower {

/// A compile-time message: the argument of compile_error. Fixed capacity, NUL-padded, so g++
/// prints it as one string literal.
struct diagnostic {
  static constexpr std::size_t capacity = 480;
  char text[capacity]{};

  constexpr diagnostic() = default;
  template <std::size_t N>
  constexpr diagnostic(const char (&s)[N]) {  // NOLINT: implicit, so "grad" can be a template argument
    for (std::size_t i = 0; i + 1 < N && i + 1 < capacity; ++i) text[i] = s[i];
  }
  constexpr std::string_view view() const {
    std::size_t n = 0;
    while (n < capacity && text[n] != '\0') ++n;
    return {text, n};
  }
};

/// Never defined: naming it with a message is how a failed check reports.
template <diagnostic Message>
struct compile_error;

namespace diagnostics {

/// What a transform returns when one of its checks failed (the error is already reported).
/// Converts to anything, so the user's surrounding code adds no second error.
struct failed {
  template <class T>
  operator T() const;  // never defined: only ever named in a program that does not compile
};

template <class X>
inline constexpr bool is_failed_v = std::is_same_v<std::remove_cvref_t<X>, failed>;

template <class...>
inline constexpr bool always_false = false;

/// Reports `M` as the first error line (g++): instantiated as soon as a check names it.
template <diagnostic M>
auto raise() {
  [[maybe_unused]] compile_error<M> error;
}

#if defined(__clang__)
#define TOWER_DIAGNOSE(LITERAL, MESSAGE, ...) static_assert(::tower::diagnostics::always_false<__VA_ARGS__>, LITERAL)
#else
#define TOWER_DIAGNOSE(LITERAL, MESSAGE, ...) ::tower::diagnostics::raise<MESSAGE>()
#endif

/// ACTION("name: ", ARGS...) with the name of the transform TRANSFORM (a diagnostic) as a literal.
#define TOWER_FOR_TRANSFORM_(TRANSFORM, ACTION, ...)    \
  if constexpr (TRANSFORM.view() == "grad_and_value") { \
    ACTION("grad_and_value: ", __VA_ARGS__);            \
  } else if constexpr (TRANSFORM.view() == "jacrev") {  \
    ACTION("jacrev: ", __VA_ARGS__);                    \
  } else if constexpr (TRANSFORM.view() == "jacfwd") {  \
    ACTION("jacfwd: ", __VA_ARGS__);                    \
  } else if constexpr (TRANSFORM.view() == "vjp") {     \
    ACTION("vjp: ", __VA_ARGS__);                       \
  } else if constexpr (TRANSFORM.view() == "jvp") {     \
    ACTION("jvp: ", __VA_ARGS__);                       \
  } else if constexpr (TRANSFORM.view() == "vmap") {    \
    ACTION("vmap: ", __VA_ARGS__);                      \
  } else if constexpr (TRANSFORM.view() == "hessian") { \
    ACTION("hessian: ", __VA_ARGS__);                   \
  } else {                                              \
    ACTION("grad: ", __VA_ARGS__);                      \
  }

/// TOWER_DIAGNOSE for a check shared by several transforms: clang's fixed message starts with
/// the transform's name too ("jacrev: " SUFFIX).
#define TOWER_PREFIXED_(PREFIX, SUFFIX, MESSAGE, ...) TOWER_DIAGNOSE(PREFIX SUFFIX, MESSAGE, __VA_ARGS__)
#define TOWER_DIAGNOSE_FOR(TRANSFORM, SUFFIX, MESSAGE, ...) \
  TOWER_FOR_TRANSFORM_(TRANSFORM, TOWER_PREFIXED_, SUFFIX, MESSAGE, __VA_ARGS__)

// Numbers in clang's message. clang 14 takes only a string literal as a static_assert message,
// so for numbers from 0 to 8 the literal that spells them is picked at compile time and clang's
// first line names the counts and indices as g++'s does; larger numbers get the fixed text.
//   TOWER_DIAGNOSE_N(V, PRE, POST, FIXED, MESSAGE, types...):        PRE "<V>" POST
//   TOWER_DIAGNOSE_NN(V, W, PRE, MID, POST, FIXED, MESSAGE, types...): PRE "<V>" MID "<W>" POST
//   TOWER_DIAGNOSE_FOR_N / _NN: the same, after the transform's name (as TOWER_DIAGNOSE_FOR).
#if defined(__clang__)
// clang-format off
#define TOWER_DIGITS_(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__) \
  X(5, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__) X(8, __VA_ARGS__)
#define TOWER_DIGITS2_(X, ...) X(0, __VA_ARGS__) X(1, __VA_ARGS__) X(2, __VA_ARGS__) X(3, __VA_ARGS__) X(4, __VA_ARGS__) \
  X(5, __VA_ARGS__) X(6, __VA_ARGS__) X(7, __VA_ARGS__) X(8, __VA_ARGS__)
// clang-format on
#define TOWER_NUMBERED_(N, V, PRE, POST, ...)                                                          \
  if constexpr ((V) == N) static_assert(::tower::diagnostics::always_false<__VA_ARGS__>, PRE #N POST); \
  else
#define TOWER_NUMBERED2_(M, N, V, W, PRE, MID, POST, ...)                               \
  if constexpr ((V) == N && (W) == M)                                                   \
    static_assert(::tower::diagnostics::always_false<__VA_ARGS__>, PRE #N MID #M POST); \
  else
#define TOWER_NUMBERED2_ROW_(N, ...) TOWER_DIGITS2_(TOWER_NUMBERED2_, N, __VA_ARGS__)
#define TOWER_DIAGNOSE_N(V, PRE, POST, FIXED, MESSAGE, ...)                \
  {                                                                        \
    TOWER_DIGITS_(TOWER_NUMBERED_, V, PRE, POST, __VA_ARGS__)              \
    static_assert(::tower::diagnostics::always_false<__VA_ARGS__>, FIXED); \
  }
#define TOWER_DIAGNOSE_NN(V, W, PRE, MID, POST, FIXED, MESSAGE, ...)       \
  {                                                                        \
    TOWER_DIGITS_(TOWER_NUMBERED2_ROW_, V, W, PRE, MID, POST, __VA_ARGS__) \
    static_assert(::tower::diagnostics::always_false<__VA_ARGS__>, FIXED); \
  }
#define TOWER_PREFIXED_N_(PREFIX, V, PRE, POST, FIXED, MESSAGE, ...) \
  TOWER_DIAGNOSE_N(V, PREFIX PRE, POST, PREFIX FIXED, MESSAGE, __VA_ARGS__)
#define TOWER_PREFIXED_NN_(PREFIX, V, W, PRE, MID, POST, FIXED, MESSAGE, ...) \
  TOWER_DIAGNOSE_NN(V, W, PREFIX PRE, MID, POST, PREFIX FIXED, MESSAGE, __VA_ARGS__)
#define TOWER_DIAGNOSE_FOR_N(TRANSFORM, V, PRE, POST, FIXED, MESSAGE, ...) \
  TOWER_FOR_TRANSFORM_(TRANSFORM, TOWER_PREFIXED_N_, V, PRE, POST, FIXED, MESSAGE, __VA_ARGS__)
#define TOWER_DIAGNOSE_FOR_NN(TRANSFORM, V, W, PRE, MID, POST, FIXED, MESSAGE, ...) \
  TOWER_FOR_TRANSFORM_(TRANSFORM, TOWER_PREFIXED_NN_, V, W, PRE, MID, POST, FIXED, MESSAGE, __VA_ARGS__)
#else
#define TOWER_DIAGNOSE_N(V, PRE, POST, FIXED, MESSAGE, ...) ::tower::diagnostics::raise<MESSAGE>()
#define TOWER_DIAGNOSE_NN(V, W, PRE, MID, POST, FIXED, MESSAGE, ...) ::tower::diagnostics::raise<MESSAGE>()
#define TOWER_DIAGNOSE_FOR_N(TRANSFORM, V, PRE, POST, FIXED, MESSAGE, ...) ::tower::diagnostics::raise<MESSAGE>()
#define TOWER_DIAGNOSE_FOR_NN(TRANSFORM, V, W, PRE, MID, POST, FIXED, MESSAGE, ...) \
  ::tower::diagnostics::raise<MESSAGE>()
#endif

// ---- building messages at compile time ------------------------------------------------------

/// The spelling of T, as the compiler prints it.
template <class T>
constexpr std::string_view type_name() {
  // g++:   "... type_name() [with T = std::vector<double>; std::string_view = ...]"
  // clang: "... type_name() [T = std::vector<double>]"
  const std::string_view p = __PRETTY_FUNCTION__;
  const std::size_t b = p.find("T = ") + 4;
  const std::size_t g = p.find("; std::string_view", b);
  const std::size_t e = g != std::string_view::npos ? g : p.rfind(']');
  return p.substr(b, e - b);
}

/// type_name<T>() without the default allocators g++ spells out (std::vector<double>).
template <class T>
constexpr diagnostic type_text() {
  constexpr std::string_view alloc = ", std::allocator<";
  const std::string_view t = type_name<T>();
  diagnostic d{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.size() && n + 1 < diagnostic::capacity;) {
    if (t.substr(i, alloc.size()) == alloc) {
      int depth = 0;  // skip to the allocator's closing '>', and the space g++ puts before the next '>'
      std::size_t j = i + alloc.size() - 1;
      for (; j < t.size(); ++j) {
        if (t[j] == '<') ++depth;
        if (t[j] == '>' && --depth == 0) break;
      }
      i = j + 1;
      if (t.substr(i, 2) == " >" && n > 0 && d.text[n - 1] != '>') ++i;
      continue;
    }
    d.text[n++] = t[i++];
  }
  return d;
}

struct text_builder {
  diagnostic d{};
  std::size_t n = 0;

  constexpr void put(char c) {
    if (n + 1 < diagnostic::capacity) d.text[n++] = c;
  }
  constexpr void add(std::string_view s) {
    if (n + s.size() + 1 >= diagnostic::capacity && s.size() > 3) {  // truncate, marking it
      for (char c : s.substr(0, diagnostic::capacity - 4 > n ? diagnostic::capacity - 4 - n : 0)) put(c);
      for (int i = 0; i < 3; ++i) put('.');
      return;
    }
    for (char c : s) put(c);
  }
  constexpr void add(std::int64_t v) {
    if (v < 0) put('-');
    const std::uint64_t u = v < 0 ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
    char buf[24]{};
    int k = 0;
    std::uint64_t w = u;
    do {
      buf[k++] = static_cast<char>('0' + w % 10);
      w /= 10;
    } while (w);
    while (k) put(buf[--k]);
  }
};

/// Concatenates string views, string literals, diagnostics and integers into one diagnostic.
template <class... P>
constexpr diagnostic make_text(const P&... parts) {
  text_builder b;
  auto one = [&](const auto& p) {
    using X = std::remove_cvref_t<decltype(p)>;
    if constexpr (std::is_same_v<X, diagnostic>) b.add(p.view());
    else if constexpr (std::is_integral_v<X>) b.add(static_cast<std::int64_t>(p));
    else b.add(std::string_view(p));
  };
  (one(parts), ...);
  return b.d;
}

/// An op's name: its `static constexpr const char* name` and its type, else its type's spelling.
template <class Op>
constexpr diagnostic op_name() {
  if constexpr (requires { std::string_view(Op::name); })
    return make_text(std::string_view(Op::name), " (", type_text<Op>(), ")");
  else return type_text<Op>();
}

/// "(double, tower::tensor<double>)": a list of type names.
template <class... T>
constexpr diagnostic type_list() {
  text_builder b;
  b.add("(");
  std::size_t i = 0;
  ((b.add(i++ ? ", " : ""), b.add(type_text<T>().view())), ...);
  b.add(")");
  return b.d;
}

// ---- value categories -----------------------------------------------------------------------

/// A value grad can differentiate or return: floating-point scalars and tensors, at any level.
template <class X>
inline constexpr bool is_differentiable_value_v = is_dyn_v<X> || kernels::is_plain_v<base_type_t<X>>;

/// A value vmap can batch: a tensor, at any level (a bare scalar has no dim to batch).
template <class X>
inline constexpr bool is_batchable_value_v = is_dyn_v<X> || is_tensor_v<base_type_t<X>>;

/// A pytree (pytree.hpp) all of whose leaves satisfy the predicate.
template <class X, template <class> class Pred>
constexpr bool all_leaves() {
  if constexpr (is_leaf_v<X>) {
    return Pred<X>::value;
  } else if constexpr (is_pytree_v<X>) {
    return []<class... L>(std::type_identity<std::tuple<L...>>) {
      return (Pred<std::remove_cvref_t<L>>::value && ...);
    }(std::type_identity<typename detail::leaf_types<std::remove_cvref_t<X>>::type>{});
  } else {
    return false;
  }
}
template <class X>
struct differentiable_leaf : std::bool_constant<is_differentiable_value_v<X>> {};
template <class X>
struct batchable_leaf : std::bool_constant<is_batchable_value_v<X>> {};

/// grad's arguments and vmap's results may be pytrees of values.
template <class X>
inline constexpr bool is_differentiable_tree_v = all_leaves<std::remove_cvref_t<X>, differentiable_leaf>();
/// vmap's batched arguments may be pytrees of tensors.
template <class X>
inline constexpr bool is_batchable_tree_v = all_leaves<std::remove_cvref_t<X>, batchable_leaf>();

template <class X>
inline constexpr bool is_tuple_like_v = requires { std::tuple_size<std::remove_cvref_t<X>>::value; };

template <class X>
constexpr std::size_t result_count() {
  if constexpr (is_tuple_like_v<X>) return std::tuple_size_v<std::remove_cvref_t<X>>;
  else return 1;
}

// ---- f is callable with what the transform passes it --------------------------------------

/// The result of calling F with the argument types in the std::tuple Traced (exact reference types).
template <class F, class Traced>
struct traced_result;
template <class F, class... W>
struct traced_result<F, std::tuple<W...>> {
  using type = std::invoke_result_t<const F&, W...>;
};
template <class F, class Traced>
using traced_result_t = typename traced_result<F, Traced>::type;

template <class F, class Traced>
inline constexpr bool is_traced_invocable_v = false;
template <class F, class... W>
inline constexpr bool is_traced_invocable_v<F, std::tuple<W...>> = std::is_invocable_v<const F&, W...>;

/// Whether F, called with the traced values, returns a value holding dual_unsupported: it mixed a
/// tape-free transform's numbers (vmap's probes instantiate f on them) with values they cannot
/// carry. The transform then returns dual_unsupported too, so the tape-free transform around it
/// declines, instead of reporting a result f only returns in a probe.
template <class F, class Traced>
constexpr bool traced_result_unsupported() {
  if constexpr (!is_traced_invocable_v<F, Traced>) return false;
  else return detail::duals::contains_unsupported<std::remove_cvref_t<traced_result_t<F, Traced>>>();
}

template <class... W>
constexpr diagnostic traced_list(std::type_identity<std::tuple<W...>>) {
  return type_list<std::remove_cvref_t<W>...>();
}

/// `Transform`: f must accept the arguments the transform passes it (the traced types `Traced`,
/// made from the caller's argument types A...). Checked before any instantiation of the
/// transform's body, so a non-callable f gives one line instead of an overload set.
template <diagnostic Transform, class F, class Traced, class... A>
constexpr auto check_callable() {
  if constexpr (is_traced_invocable_v<F, Traced>) {
    return std::true_type{};
  } else if constexpr (std::is_invocable_v<const F&, const A&...>) {
    TOWER_DIAGNOSE_FOR(
        Transform,
        "f accepts the plain arguments but not the traced values the transform passes; declare its parameters auto",
        make_text(Transform, ": f accepts ", type_list<A...>(), " but not the traced values ",
                  traced_list(std::type_identity<Traced>{}), " the transform passes it; declare its parameters auto"),
        F, Traced);
    return std::false_type{};
  } else if constexpr ((is_static_wrapper_v<A> || ...) && (std::is_invocable_v<const F&, const base_type_t<A>&...> ||
                                                           std::is_invocable_v<const F&, scalar_type_t<A>...>)) {
    // The arguments are an enclosing transform's values (vmap(grad(f))); f takes the plain ones.
    TOWER_DIAGNOSE_FOR(
        Transform, "f takes plain values, not the traced values the transforms pass it; declare its parameters auto",
        make_text(Transform, ": f takes plain values, not the traced values ",
                  traced_list(std::type_identity<Traced>{}), " the transforms pass it (from ", type_list<A...>(),
                  "); declare its parameters auto"),
        F, Traced);
    return std::false_type{};
  } else {
    TOWER_DIAGNOSE_FOR(Transform, "f is not callable with the arguments given",
                       make_text(Transform, ": f is not callable with arguments ", type_list<A...>()), F, A...);
    return std::false_type{};
  }
}

// ---- grad -----------------------------------------------------------------------------------

template <diagnostic Transform, int K, class Args, int... I>
constexpr auto check_differentiable() {
  if constexpr (K == static_cast<int>(sizeof...(I))) {
    return std::true_type{};
  } else {
    constexpr int i = std::get<K>(std::array<int, sizeof...(I)>{I...});
    using X = std::remove_cvref_t<std::tuple_element_t<static_cast<std::size_t>(i), Args>>;
    if constexpr (is_differentiable_tree_v<X>) {
      return check_differentiable<Transform, K + 1, Args, I...>();
    } else if constexpr (std::is_integral_v<X>) {
      TOWER_DIAGNOSE_FOR_N(Transform, i, "cannot differentiate with respect to argument ",
                           ", an integer or bool; pass a double, float or tensor",
                           "cannot differentiate with respect to an integer or bool argument",
                           make_text(Transform, ": cannot differentiate with respect to argument ", i, " of type ",
                                     type_text<X>(), " (an integer or bool); pass a double, float or tensor"),
                           X);
      return std::false_type{};
    } else if constexpr (is_untemplated_struct_v<X>) {
      TOWER_DIAGNOSE_FOR_N(
          Transform, i, "argument ",
          " is a Hana struct that is not a template over its leaf type; declare it as template <class T> struct S "
          "whose leaves have type T",
          "a Hana struct argument must be a template over its leaf type: template <class T> struct S whose leaves have "
          "type T",
          make_text(
              Transform, ": argument ", i, " has type ", type_text<X>(),
              ", a Hana struct that is not a template over its leaf type; declare it as template <class T> struct ",
              type_text<X>(), " whose leaves have type T, so that transforms can rebuild it with their values"),
          X);
      return std::false_type{};
    } else {
      TOWER_DIAGNOSE_FOR_N(Transform, i, "cannot differentiate with respect to argument ",
                           ", which is not a double, float or tensor (or a pytree of them)",
                           "cannot differentiate with respect to an argument that is not a double, float or tensor",
                           make_text(Transform, ": cannot differentiate with respect to argument ", i, " of type ",
                                     type_text<X>(), "; pass a double, float or tensor"),
                           X);
      return std::false_type{};
    }
  }
}

template <std::size_t N>
constexpr std::size_t first_out_of_range(const std::array<int, N>& ids, std::size_t count, int n) {
  std::size_t b = 0;
  while (b < count && ids[b] >= 0 && ids[b] < n) ++b;
  return b;
}

/// The first index in ids[0, count) equal to an earlier one (count when none is).
template <std::size_t N>
constexpr std::size_t first_repeated(const std::array<int, N>& ids, std::size_t count) {
  for (std::size_t b = 0; b < count; ++b)
    for (std::size_t a = 0; a < b; ++a)
      if (ids[a] == ids[b]) return b;
  return count;
}

template <diagnostic Transform, class... A, int... I>
constexpr auto check_grad_args_impl(argnums_t<I...>) {
  constexpr int n = static_cast<int>(sizeof...(A));
  constexpr std::array<int, sizeof...(I) + 1> ids{I..., 0};
  constexpr std::size_t bad = first_out_of_range(ids, sizeof...(I), n);
  constexpr std::size_t repeated = first_repeated(ids, sizeof...(I));
  if constexpr (sizeof...(I) == 0) {
    TOWER_DIAGNOSE_FOR(Transform, "argnums must name at least one argument",
                       make_text(Transform, ": argnums must name at least one argument"), A...);
    return std::false_type{};
  } else if constexpr (bad < sizeof...(I)) {
    TOWER_DIAGNOSE_FOR_NN(
        Transform, ids[bad], n, "argnums index ", " is out of range for a function of ", " arguments",
        "an argnums index is out of range for a function of this many arguments",
        make_text(Transform, ": argnums index ", ids[bad], " is out of range for a function of ", n, " arguments"),
        argnums_t<I...>, A...);
    return std::false_type{};
  } else if constexpr (repeated < sizeof...(I)) {
    TOWER_DIAGNOSE_FOR_N(
        Transform, ids[repeated], "argnums names argument ", " twice; list each argument once",
        "argnums names an argument twice; list each argument once",
        make_text(Transform, ": argnums names argument ", ids[repeated], " twice; list each argument once"),
        argnums_t<I...>, A...);
    return std::false_type{};
  } else {
    return check_differentiable<Transform, 0, std::tuple<A...>, I...>();
  }
}

/// grad's argnums name arguments that exist and that grad can differentiate.
template <diagnostic Transform, class Argnums, class... A>
constexpr auto check_grad_args() {
  return check_grad_args_impl<Transform, A...>(Argnums{});
}

/// grad's f returns a scalar (or, with has_aux, a (scalar, aux) pair). A tensor's rank is only
/// known at run time: a tensor of rank > 0 raises tower::error with the same words.
template <diagnostic Transform, bool HasAux, class R>
constexpr auto check_grad_result() {
  using D = std::remove_cvref_t<R>;
  if constexpr (is_failed_v<D>) {
    return std::false_type{};  // an op inside f failed a check and reported it
  } else if constexpr (HasAux) {
    if constexpr (!is_tuple_like_v<D>) {
      TOWER_DIAGNOSE(
          "grad: with has_aux, f must return a (value, aux) pair",
          make_text(Transform, ": with has_aux, f must return a (value, aux) pair, it returns ", type_text<D>()), D);
      return std::false_type{};
    } else if constexpr (std::tuple_size_v<D> != 2) {
      TOWER_DIAGNOSE_N(std::tuple_size_v<D>, "grad: with has_aux, f must return a (value, aux) pair, it returns ",
                       " values", "grad: with has_aux, f must return a (value, aux) pair",
                       make_text(Transform, ": with has_aux, f must return a (value, aux) pair, it returns ",
                                 static_cast<std::int64_t>(std::tuple_size_v<D>), " values: ", type_text<D>()),
                       D);
      return std::false_type{};
    } else {
      return check_grad_result<Transform, false, std::tuple_element_t<0, D>>();
    }
  } else if constexpr (is_differentiable_value_v<D> || detail::is_cotangent_seed_v<D>) {
    return std::true_type{};  // a cotangent_seed comes from vjp, which checked f's outputs
  } else if constexpr (is_tuple_like_v<D>) {
    TOWER_DIAGNOSE("grad: f must return a scalar, it returns a tuple; to return (value, aux) pass tw::has_aux",
                   make_text(Transform, ": f must return a scalar, it returns ", type_text<D>(),
                             "; to return (value, aux) pass tw::has_aux"),
                   D);
    return std::false_type{};
  } else if constexpr (std::is_integral_v<D>) {
    TOWER_DIAGNOSE("grad: f must return a scalar, it returns an integer",
                   make_text(Transform, ": f must return a scalar, it returns ", type_text<D>(),
                             ", an integer; return a double, float or one-element tensor"),
                   D);
    return std::false_type{};
  } else {
    TOWER_DIAGNOSE("grad: f must return a scalar (double, float or a one-element tensor)",
                   make_text(Transform, ": f must return a scalar, it returns ", type_text<D>()), D);
    return std::false_type{};
  }
}

// ---- vjp and jvp ----------------------------------------------------------------------------

/// vjp's and jvp's f returns tensors or floating-point numbers, or a pytree of them with at
/// least one leaf (with has_aux, as the first of an (output, aux) pair).
template <diagnostic Transform, bool HasAux, class R>
constexpr auto check_differentiable_output() {
  using D = std::remove_cvref_t<R>;
  if constexpr (is_failed_v<D>) {
    return std::false_type{};  // an op inside f failed a check and reported it
  } else if constexpr (HasAux) {
    if constexpr (!is_tuple_like_v<D> || result_count<D>() != 2) {
      TOWER_DIAGNOSE_FOR(
          Transform, "with has_aux, f must return an (output, aux) pair",
          make_text(Transform, ": with has_aux, f must return an (output, aux) pair, it returns ", type_text<D>()), D);
      return std::false_type{};
    } else {
      return check_differentiable_output<Transform, false, std::tuple_element_t<0, D>>();
    }
  } else if constexpr (!is_differentiable_tree_v<D>) {
    TOWER_DIAGNOSE_FOR(
        Transform, "f must return tensors or floating-point numbers (or a pytree of them)",
        make_text(Transform, ": f must return tensors or floating-point numbers (or a pytree of them), it returns ",
                  type_text<D>()),
        D);
    return std::false_type{};
  } else if constexpr (std::tuple_size_v<typename detail::leaf_types<D>::type> == 0) {
    TOWER_DIAGNOSE_FOR(Transform, "f returns no output to differentiate (an empty pytree)",
                       make_text(Transform, ": f returns no output to differentiate (", type_text<D>(), ")"), D);
    return std::false_type{};
  } else {
    return std::true_type{};
  }
}

/// vjp_fn's cotangent has the structure of f's output (one leaf per output leaf).
template <class C, class Y>
constexpr auto check_cotangent() {
  if constexpr (detail::same_structure<C, Y>()) {
    return std::true_type{};
  } else {
    TOWER_DIAGNOSE("vjp: the cotangent must have the structure of f's output",
                   make_text("vjp: the cotangent has type ", type_text<C>(), " but the output of f has type ",
                             type_text<Y>(), "; give one cotangent per output, in the same structure"),
                   C, Y);
    return std::false_type{};
  }
}

// ---- vmap -----------------------------------------------------------------------------------

template <class InDims>
inline constexpr std::size_t dims_count_v = std::tuple_size_v<decltype(InDims::dims)>;

template <class InDims, std::size_t K, class... A>
constexpr auto check_batchable() {
  if constexpr (K == sizeof...(A)) {
    return std::true_type{};
  } else {
    using X = std::remove_cvref_t<std::tuple_element_t<K, std::tuple<A...>>>;
    constexpr bool batched_arg = [] {
      if constexpr (dims_count_v<InDims> == 0) return true;
      else return !std::is_same_v<std::tuple_element_t<K, decltype(InDims::dims)>, none_t>;
    }();
    if constexpr (!batched_arg || is_batchable_tree_v<X>) {
      return check_batchable<InDims, K + 1, A...>();
    } else if constexpr (std::is_arithmetic_v<X> || is_scalar_type_v<X>) {
      TOWER_DIAGNOSE_N(K, "vmap: argument ", " is a scalar and cannot be batched; give it tw::none in in_dims",
                       "vmap: a scalar argument cannot be batched; give it tw::none in in_dims",
                       make_text("vmap: argument ", K, " is a scalar (", type_text<X>(),
                                 ") and cannot be batched; give it tw::none in in_dims"),
                       X);
      return std::false_type{};
    } else if constexpr (is_untemplated_struct_v<X>) {
      TOWER_DIAGNOSE_N(
          K, "vmap: argument ",
          " is a Hana struct that is not a template over its leaf type; declare it as template <class T> struct S "
          "whose leaves have type T",
          "vmap: a Hana struct argument must be a template over its leaf type: template <class T> struct S whose "
          "leaves have type T",
          make_text(
              "vmap: argument ", K, " has type ", type_text<X>(),
              ", a Hana struct that is not a template over its leaf type; declare it as template <class T> struct ",
              type_text<X>(), " whose leaves have type T, so that transforms can rebuild it with their values"),
          X);
      return std::false_type{};
    } else {
      TOWER_DIAGNOSE(
          "vmap: a batched argument must be a tensor; give other arguments tw::none in in_dims",
          make_text("vmap: argument ", K, " has type ", type_text<X>(),
                    ", which vmap cannot batch (a batched argument must be a tensor); give it tw::none in in_dims"),
          X);
      return std::false_type{};
    }
  }
}

/// vmap's in_dims has one entry per argument, and every batched argument is a tensor.
template <class InDims, class... A>
constexpr auto check_vmap_args() {
  constexpr std::size_t n = dims_count_v<InDims>;
  if constexpr (n != 0 && n != sizeof...(A)) {
    TOWER_DIAGNOSE_NN(n, sizeof...(A), "vmap: in_dims has ", " entries but f takes ", " arguments",
                      "vmap: in_dims must have one entry per argument of f",
                      make_text("vmap: in_dims has ", n, " entries but f takes ", sizeof...(A), " arguments"), InDims,
                      A...);
    return std::false_type{};
  } else {
    return check_batchable<InDims, 0, A...>();
  }
}

template <class D, std::size_t... I>
constexpr bool all_results_ok(std::index_sequence<I...>) {
  using Rs = std::conditional_t<is_tuple_like_v<D>, D, std::tuple<D>>;
  return (is_differentiable_tree_v<std::remove_cvref_t<std::tuple_element_t<I, Rs>>> && ...);
}

/// vmap's f returns tensors or scalars (or a tuple of them), with one out_dims entry per result
/// (or a single entry for all).
template <class OutDims, class R>
constexpr auto check_vmap_result() {
  using D = std::remove_cvref_t<R>;
  constexpr std::size_t n = dims_count_v<OutDims>, k = result_count<D>();
  if constexpr (is_failed_v<D>) {
    return std::false_type{};  // an op inside f failed a check and reported it
  } else if constexpr (n > 1 && n != k) {
    [[maybe_unused]] constexpr diagnostic message =
        make_text("vmap: out_dims has ", n, " entries but f returns ", k, k == 1 ? " result" : " results");
    if constexpr (k == 1) {
      TOWER_DIAGNOSE_NN(n, k, "vmap: out_dims has ", " entries but f returns ", " result",
                        "vmap: out_dims must have one entry per result of f", message, OutDims, D);
    } else {
      TOWER_DIAGNOSE_NN(n, k, "vmap: out_dims has ", " entries but f returns ", " results",
                        "vmap: out_dims must have one entry per result of f", message, OutDims, D);
    }
    return std::false_type{};
  } else if constexpr (!all_results_ok<D>(std::make_index_sequence<k>{})) {
    TOWER_DIAGNOSE(
        "vmap: f must return tensors or scalars (or a std::tuple of them)",
        make_text("vmap: f must return tensors or floating-point scalars (or a std::tuple of them), it returns ",
                  type_text<D>()),
        D);
    return std::false_type{};
  } else {
    return std::true_type{};
  }
}

// ---- ops ------------------------------------------------------------------------------------

/// An op's tensor arguments share one element type (scalars adapt, as in NumPy).
template <class Op, class... A>
constexpr auto check_element_types() {
  constexpr bool has_float = ((std::is_same_v<base_type_t<A>, tensor<float>>) || ...);
  constexpr bool has_double = ((std::is_same_v<base_type_t<A>, tensor<double>>) || ...);
  if constexpr (has_float && has_double) {
    TOWER_DIAGNOSE(
        "op: mixes tensor<float> and tensor<double>; convert one so both have the same element type",
        make_text("op ", op_name<Op>(), " mixes tower::tensor<float> and tower::tensor<double>", " (arguments ",
                  type_list<std::remove_cvref_t<A>...>(), "); convert one so both have the same element type"),
        Op, A...);
    return std::false_type{};
  } else {
    return std::true_type{};
  }
}

template <class Op, class... B>
constexpr auto check_batch_rule() {
  if constexpr (has_batch_rule_v<Op, std::int64_t, B...>) {
    return std::true_type{};
  } else {
    TOWER_DIAGNOSE("op: has no batching rule for transform vmap (the op is named in the requirement)",
                   make_text("op ", op_name<Op>(), " has no batching rule for transform vmap"), Op);
    return std::false_type{};
  }
}

template <class Op, class Out, class... X>
constexpr auto check_vjp_rule() {
  if constexpr (has_vjp_rule_v<Op, Out, X...>) {
    return std::true_type{};
  } else {
    TOWER_DIAGNOSE("op: has no VJP rule for transform grad (the op is named in the requirement)",
                   make_text("op ", op_name<Op>(), " has no VJP rule for transform grad"), Op);
    return std::false_type{};
  }
}

/// Forward mode (jvp, and jacfwd and hessian through it) runs the op's JVP rule; `HasRule` is
/// whether the op has one for the values at hand.
template <class Op, bool HasRule>
constexpr auto check_jvp_rule() {
  if constexpr (HasRule) {
    return std::true_type{};
  } else {
    TOWER_DIAGNOSE(
        "op: has no JVP rule, which forward mode (jvp, jacfwd, hessian) needs; give it a jvp member (the op is named "
        "in the requirement)",
        make_text("op ", op_name<Op>(),
                  " has no JVP rule, which forward mode (jvp, jacfwd, hessian) needs; give it a jvp member"),
        Op);
    return std::false_type{};
  }
}

template <class Op, class... A>
constexpr auto check_base_kernel() {
  if constexpr (has_base_kernel_v<Op, A...>) {
    return std::true_type{};
  } else {
    TOWER_DIAGNOSE("op: has no base kernel for these argument types (the op is named in the requirement)",
                   make_text("op ", op_name<Op>(), " has no base kernel for arguments ", type_list<A...>()), Op, A...);
    return std::false_type{};
  }
}

}  // namespace diagnostics
}  // namespace tower
