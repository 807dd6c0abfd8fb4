// tw::vmap(f, tw::parallel): the same bits as the serial vmap for 1, 2 and 4 threads and any
// batch size, on both paths; compositions with grad, jacrev and nested vmaps; exceptions.
#include <catch2/catch.hpp>

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/check.hpp"
#include "tower/parallel.hpp"

namespace tw = tower;
using namespace tower::testing;
using tw::tensor;
using tw::dyn::value;

namespace {

// Four threads even on a machine with fewer cores, so that parallel(4) runs four.
const tbb::global_control four_threads(tbb::global_control::max_allowed_parallelism, 4);

bool same_bits(const tensor<double>& a, const tensor<double>& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.numel()) * sizeof(double)) == 0;
}
bool same_bits(const value& a, const value& b) { return same_bits(a.to_tensor(), b.to_tensor()); }
template <class... T>
bool same_bits(const std::tuple<T...>& a, const std::tuple<T...>& b) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return (same_bits(std::get<I>(a), std::get<I>(b)) && ...);
  }(std::index_sequence_for<T...>{});
}

/// Runs serial() and parallel(): both throw the same message, or both return the same bits.
template <class S, class P>
void require_same_outcome(S&& serial, P&& parallel) {
  std::string serial_error;
  try {
    const auto want = serial();
    REQUIRE(same_bits(parallel(), want));
    return;
  } catch (const tw::error& e) {
    serial_error = e.what();
  }
  INFO("the serial vmap threw: " << serial_error);
  REQUIRE_THROWS_WITH(parallel(), serial_error);
}

// The per-example thread settings the tests run: 1, 2 and 4 threads with small grains, so that
// small batches split; and the automatic grain.
const std::vector<tw::parallel_t> settings = {tw::parallel(1, 64), tw::parallel(2, 64), tw::parallel(4, 64),
                                              tw::parallel(4, 100), tw::parallel};
const std::vector<std::int64_t> batch_sizes = {0, 1, 7, 64, 65, 200, 1000, 2500};

auto energy = [](auto r) {
  auto s = 1.0 / tw::sum(r * r);
  auto s3 = s * s * s;
  return 4.0 * (s3 * s3 - s3);
};
auto logistic = [](auto w, auto x, auto y) { return tw::log(1.0 + tw::exp(-(y * tw::dot(w, x)))); };
auto hessian_f = [](auto x) { return tw::log(1.0 + tw::sum(x * x)) + tw::sum(tw::sin(x)); };
// Two outputs, the first with the batch along dim 1.
auto two_outputs = [](auto x, auto w) { return std::make_tuple(tw::tanh(x) * w, tw::sum(tw::exp(x) * w)); };

tensor<double> rows(std::int64_t b, std::int64_t n, unsigned seed) {
  tensor<double> t = sample({b, n}, 0.6, 1.4, seed);
  return t;
}

const tensor<double>& inner_constant() {
  static const tensor<double> C = sample({400, 3}, -1, 1, 15);
  return C;
}
// f of an outer vmap that runs an inner vmap over a constant (parallel or not).
template <bool Parallel>
struct inner_over_constant {
  auto operator()(auto x) const {
    auto g = [](auto r) { return tw::exp(r) * r; };
    if constexpr (Parallel) return x * tw::sum(tw::vmap(g, tw::parallel(4, 64))(inner_constant()));
    else return x * tw::sum(tw::vmap(g)(inner_constant()));
  }
};

}  // namespace

TEST_CASE("parallel: the static path gives the serial vmap's bits for every thread count and batch size") {
  const tensor<double> w = sample({4}, -1, 1, 1);
  for (const std::int64_t b : batch_sizes) {
    INFO("B = " << b);
    const tensor<double> R = rows(b, 3, 2), X4 = sample({b, 4}, -1, 1, 3), Y = sample({b}, -1, 1, 4),
                         X8 = sample({b, 8}, -1, 1, 5);
    const tensor<double> XT = sample({3, b}, -1, 1, 6);  // batch along the last dim
    for (const auto& p : settings) {
      INFO("threads " << p.threads << ", grain " << p.grain);
      // Lennard-Jones forces: vmap's fixed-rows loop per grain.
      require_same_outcome([&] { return tw::vmap(tw::grad(energy))(R); },
                           [&] { return tw::vmap(tw::grad(energy), p)(R); });
      // Batching rules, an unbatched weight, transcendentals (libmvec) and a dot (Eigen).
      require_same_outcome([&] { return tw::vmap(tw::grad(logistic), tw::in_dims(tw::none, 0, 0))(w, X4, Y); },
                           [&] { return tw::vmap(tw::grad(logistic), tw::in_dims(tw::none, 0, 0), p)(w, X4, Y); });
      // Per-example Hessians on R^8.
      require_same_outcome([&] { return tw::vmap(tw::hessian(hessian_f))(X8); },
                           [&] { return tw::vmap(tw::hessian(hessian_f), p)(X8); });
      // Two outputs, batch in the last dim of the input and dim 1 of the first output.
      require_same_outcome(
          [&] { return tw::vmap(two_outputs, tw::in_dims(-1, tw::none), tw::out_dims(1, 0))(XT, 0.5); },
          [&] { return tw::vmap(two_outputs, tw::in_dims(-1, tw::none), tw::out_dims(1, 0), p)(XT, 0.5); });
      // Other physical forms, forced.
      require_same_outcome([&] { return tw::vmap(tw::grad(energy), tw::strategy::batched)(R); },
                           [&] { return tw::vmap(tw::grad(energy), tw::strategy::batched, p)(R); });
      require_same_outcome([&] { return tw::vmap(tw::grad(energy), tw::strategy::packets)(R); },
                           [&] { return tw::vmap(tw::grad(energy), tw::strategy::packets, p)(R); });
      require_same_outcome([&] { return tw::vmap(tw::grad(energy), tw::in_dims(tw::fixed_rows<3>))(R); },
                           [&] { return tw::vmap(tw::grad(energy), tw::in_dims(tw::fixed_rows<3>), p)(R); });
    }
  }
}

TEST_CASE("parallel: batch sizes that differ raise the serial vmap's error, whichever argument is small") {
  auto f = [](auto x, auto y) { return tw::sum(x * y); };
  std::function<value(value, value)> g = [](value x, value y) { return tw::sum(x * y); };
  for (const auto& [a, b] : std::vector<std::pair<std::int64_t, std::int64_t>>{{10, 5000}, {5000, 10}, {3, 4}}) {
    INFO("batch sizes " << a << " and " << b);
    const tensor<double> X = rows(a, 3, 7), Y = rows(b, 3, 8);
    for (const auto& p : settings) {
      require_same_outcome([&] { return tw::vmap(f)(X, Y); }, [&] { return tw::vmap(f, p)(X, Y); });
      require_same_outcome([&] { return tw::vmap(g)(value(X), value(Y)); },
                           [&] { return tw::vmap(g, p)(value(X), value(Y)); });
    }
    REQUIRE_THROWS_AS(tw::vmap(f, tw::parallel(2, 64))(X, Y), tw::error);
  }
}

TEST_CASE("parallel: the runtime path gives the serial vmap's bits for every thread count and batch size") {
  std::function<value(value)> e = [](value r) { return energy(r); };
  std::function<value(value)> h = [](value x) { return hessian_f(x); };
  std::function<std::tuple<value, value>(value, value)> two = [](value x, value w) { return two_outputs(x, w); };
  for (const std::int64_t b : batch_sizes) {
    INFO("B = " << b);
    const tensor<double> R = rows(b, 3, 2), X8 = sample({b, 8}, -1, 1, 5), XT = sample({3, b}, -1, 1, 6);
    for (const auto& p : settings) {
      INFO("threads " << p.threads << ", grain " << p.grain);
      // The traced (fused) program per grain.
      require_same_outcome([&] { return tw::vmap(tw::grad(e))(R); }, [&] { return tw::vmap(tw::grad(e), p)(R); });
      require_same_outcome([&] { return tw::vmap(tw::grad(e))(value(R)); },
                           [&] { return tw::vmap(tw::grad(e), p)(value(R)); });
      // Batching rules (hessian's ops), chunked grains, tuple outputs.
      require_same_outcome([&] { return tw::vmap(tw::hessian(h))(X8); },
                           [&] { return tw::vmap(tw::hessian(h), p)(X8); });
      require_same_outcome([&] { return tw::vmap(tw::grad(e), tw::chunk_size(50))(R); },
                           [&] { return tw::vmap(tw::grad(e), tw::chunk_size(50), p)(R); });
      require_same_outcome(
          [&] { return tw::vmap(two, tw::in_dims(-1, tw::none), tw::out_dims(1, 0))(XT, value(0.5)); },
          [&] { return tw::vmap(two, tw::in_dims(-1, tw::none), tw::out_dims(1, 0), p)(XT, value(0.5)); });
    }
  }
}

TEST_CASE("parallel: the batch splits into equal grains, run on the pool's threads") {
  const tensor<double> X = sample({2000, 5}, -1, 1, 8);
  std::mutex m;
  std::vector<std::int64_t> sizes;
  std::set<std::thread::id> threads;
  auto f = [&](auto x) {
    {
      std::lock_guard<std::mutex> lock(m);
      sizes.push_back(x.batch_size);  // f sees a grain's examples at once (batching rules)
      threads.insert(std::this_thread::get_id());
    }
    return tw::sin(x) * 2.0;
  };
  REQUIRE(same_bits(tw::vmap(f, tw::parallel(4, 64))(X), tw::sin(X) * 2.0));
  // Example 0 alone first (it shows the output's shape), then 2000 / 64: 32 grains of 62 or 63
  // examples.
  REQUIRE(sizes.size() == 33);
  REQUIRE(sizes.front() == 1);
  for (std::size_t k = 1; k < sizes.size(); ++k) REQUIRE((sizes[k] == 62 || sizes[k] == 63));
  WARN("grains ran on " << threads.size() << " threads");
  // The automatic grain: at least 1024 examples, so 2000 examples make two grains and 1000 one.
  sizes.clear();
  (void)tw::vmap(f, tw::parallel(4))(X);
  REQUIRE(sizes.size() == 3);
  REQUIRE(sizes[0] == 1);
  REQUIRE(sizes[1] == 1000);
  REQUIRE(sizes[2] == 1000);
  sizes.clear();
  (void)tw::vmap(f, tw::parallel(4))(tw::kernels::narrow(X, 0, 0, 1000));
  REQUIRE(sizes == std::vector<std::int64_t>{1000});
}

TEST_CASE("parallel: grains read their examples in place, without copies") {
  // A slice along dim 0 shares its tensor's storage; writing to it copies first.
  const tensor<double> X = sample({2000, 5}, -1, 1, 22);
  tensor<double> v = tw::detail::leading_rows(X, 2, 3);
  REQUIRE(v.shape() == tw::shape_t{3, 5});
  REQUIRE(v.numel() == 15);
  REQUIRE(std::as_const(v).data() == X.data() + 10);
  REQUIRE(v(1, 4) == X(3, 4));
  REQUIRE(v.values() == std::vector<double>(X.data() + 10, X.data() + 25));
  const double before = X(2, 0);
  v(0, 0) = 42;
  REQUIRE(X(2, 0) == before);
  REQUIRE(v(0, 0) == 42);
  REQUIRE(v(2, 4) == X(4, 4));
  const tensor<double> all = tw::detail::leading_rows(X, 0, 2000);
  REQUIRE(all.data() == X.data());
  // Batching rules see each grain's rows inside X's storage.
  std::mutex m;
  std::vector<const double*> seen;
  auto f = [&](auto x) {
    {
      std::lock_guard<std::mutex> lock(m);
      seen.push_back(std::as_const(x.value).data());
    }
    return tw::cos(x) + x;
  };
  REQUIRE(same_bits(tw::vmap(f, tw::parallel(4, 64))(X), tw::vmap(f)(X)));
  REQUIRE(seen.size() == 1 + 32 + 1);  // the parallel call's example 0 and 32 grains, the serial call
  for (const double* p : seen) {
    REQUIRE(p >= X.data());
    REQUIRE(p < X.data() + X.numel());
    REQUIRE((p - X.data()) % 5 == 0);
  }
}

TEST_CASE("parallel: the fixed-rows loop and the runtime program write into the rows lent to them") {
  const tensor<double> R = rows(300, 3, 23);
  std::function<value(value)> e = [](value r) { return energy(r); };
  const tensor<double> want = tw::vmap(tw::grad(energy))(R);
  const tensor<double> want_runtime = tw::vmap(tw::grad(e))(R).to_tensor();
  const tensor<double> P = rows(500, 8, 24);
  const tensor<double> want_hessians = tw::vmap(tw::hessian(hessian_f))(P);
  for (const std::int64_t start : {0, 100, 200}) {
    // Rows [start, start + 300) of a larger output, as tw::parallel lends a grain its rows.
    tensor<double> whole = tw::zeros<double>({600, 3});
    tensor<double> lent = tw::detail::leading_rows(whole, start, 300);
    const double* at = std::as_const(whole).data() + start * 3;  // (const: no copy-on-write)
    {
      const tw::detail::lend_output<double> loan(lent);
      const tensor<double> r = tw::vmap(tw::grad(energy))(R);  // the fixed-rows loop
      REQUIRE(r.data() == at);
      REQUIRE(same_bits(r, want));
      REQUIRE(tw::detail::lent_output_slot<double>() == nullptr);  // taken once
      const tensor<double> again = tw::vmap(tw::grad(energy))(R);
      REQUIRE(again.data() != at);
    }
    REQUIRE(same_bits(tw::detail::leading_rows(whole, start, 300), want));
    {
      const tw::detail::lend_output<double> loan(lent);
      const tensor<double> r = tw::vmap(tw::grad(e))(R).to_tensor();  // the runtime path's fused program
      REQUIRE(r.data() == at);
      REQUIRE(same_bits(r, want_runtime));
    }
    {
      // A loan of another size is not taken, and ends with its scope.
      const tw::detail::lend_output<double> loan(lent);
      const tensor<double> h = tw::vmap(tw::hessian(hessian_f))(P);
      REQUIRE(same_bits(h, want_hessians));
      REQUIRE(tw::detail::lent_output_slot<double>() == &lent);
    }
    REQUIRE(tw::detail::lent_output_slot<double>() == nullptr);
  }
  // Hessians write their rows too: [B, 8, 8].
  tensor<double> whole = tw::zeros<double>({1000, 8, 8});
  tensor<double> lent = tw::detail::leading_rows(whole, 500, 500);
  {
    const tw::detail::lend_output<double> loan(lent);
    const tensor<double> h = tw::vmap(tw::hessian(hessian_f))(P);
    REQUIRE(h.data() == std::as_const(whole).data() + 500 * 64);
    REQUIRE(same_bits(h, want_hessians));
  }
}

TEST_CASE("parallel: vmap(grad(f), parallel) equals a loop over examples") {
  const tensor<double> R = rows(3000, 3, 9);
  const tensor<double> G = tw::vmap(tw::grad(energy), tw::parallel(4))(R);
  std::function<value(value)> e = [](value r) { return energy(r); };
  const tensor<double> Gr = tw::vmap(tw::grad(e), tw::parallel(4))(R).to_tensor();
  REQUIRE(G.shape() == tw::shape_t{3000, 3});
  for (std::int64_t b = 0; b < 3000; b += 37) {
    const tensor<double> r = tw::reshape(tw::kernels::narrow(R, 0, b, 1), {3});
    const tensor<double> g = tw::grad(energy)(r);
    for (std::int64_t k = 0; k < 3; ++k) {
      require_close(G(b, k), g(k), 1e-12);
      require_close(Gr(b, k), g(k), 1e-12);
    }
  }
}

TEST_CASE("parallel: inside grad and jacrev it runs serially and gives the serial bits") {
  const tensor<double> X = sample({300, 4}, -1, 1, 11);
  auto f = [](auto x) { return tw::sin(x) * tw::sum(x * x); };
  const auto p = tw::parallel(4, 64);
  // grad(x -> sum(vmap(f, parallel)(x))): vmap sees grad's values.
  auto loss = [&](auto x) { return tw::sum(tw::vmap(f, p)(x)); };
  auto loss_serial = [&](auto x) { return tw::sum(tw::vmap(f)(x)); };
  REQUIRE(same_bits(tw::grad(loss)(X), tw::grad(loss_serial)(X)));
  // jacrev(vmap(f, parallel)) on a small batch (the Jacobian is [B, 4, B, 4]).
  const tensor<double> Xs = sample({70, 4}, -1, 1, 12);
  REQUIRE(same_bits(tw::jacrev(tw::vmap(f, p))(Xs), tw::jacrev(tw::vmap(f))(Xs)));
  // The runtime path: a runtime grad of a function calling a parallel runtime vmap.
  std::function<value(value)> fr = [&](value x) { return f(x); };
  std::function<value(value)> lr = [&](value x) { return tw::sum(tw::vmap(fr, p)(x)); };
  std::function<value(value)> lr_serial = [&](value x) { return tw::sum(tw::vmap(fr)(x)); };
  REQUIRE(same_bits(tw::grad(lr)(X), tw::grad(lr_serial)(X)));
  // A capturing f inside grad, with plain arguments: f reaches grad's x, so it stays on this
  // thread. d/dx sum_b (Y_b * x) = sum(Y).
  const tensor<double> Y = sample({500}, -1, 1, 13);
  std::function<value(value)> outer = [&](value x) {
    std::function<value(value)> times_x = [x](value y) { return y * x; };
    return tw::sum(tw::vmap(times_x, p)(Y));
  };
  double sum_y = 0;
  for (std::int64_t b = 0; b < 500; ++b) sum_y += Y(b);
  require_close(tw::grad(outer)(value(0.7)).item(), sum_y, 1e-12);
}

namespace {
// The threads where f ran on a grad's values over a grain (a per-example VJP of the backward
// pass: the serial backward calls f with vmap's values of grad's instead). A captureless f
// records to globals.
std::mutex recorded_mutex;
std::set<std::thread::id> recorded_threads;
std::vector<std::int64_t> recorded_batches;  // the static path's: a grain's examples each
struct per_example_f {
  auto operator()(auto x) const {
    bool grads = false;
    std::int64_t batch = -1;
    if constexpr (requires { decltype(x)::key; }) {
      grads = decltype(x)::key == tw::transform_type::grad;
      if constexpr (requires { x.primal.batch_size; }) batch = x.primal.batch_size;
    } else if constexpr (tw::is_dyn_v<decltype(x)>) {
      grads = x.level() > 0 && x.get().key == tw::transform_type::grad;
    }
    if (grads) {
      std::lock_guard<std::mutex> lock(recorded_mutex);
      recorded_threads.insert(std::this_thread::get_id());
      if (batch >= 0) recorded_batches.push_back(batch);
    }
    return tw::sin(x) * tw::sum(x * x) + tw::exp(-x);
  }
};
}  // namespace

TEST_CASE("parallel: the backward pass through a parallel vmap runs per grain, with the serial bits") {
  const auto p = tw::parallel(4, 64);
  const per_example_f f;
  auto loss = [p](auto x) { return tw::sum(tw::vmap(per_example_f{}, p)(x) * 0.5); };
  auto loss_serial = [](auto x) { return tw::sum(tw::vmap(per_example_f{})(x) * 0.5); };
  for (const std::int64_t b : batch_sizes) {
    INFO("B = " << b);
    const tensor<double> X = sample({b, 4}, -1, 1, 30);
    require_same_outcome([&] { return tw::grad(loss_serial)(X); }, [&] { return tw::grad(loss)(X); });
  }
  // The per-example VJPs ran on the pool's threads (f is called with grad's values there).
  const tensor<double> X = sample({3000, 4}, -1, 1, 31);
  recorded_threads.clear();
  recorded_batches.clear();
  const tensor<double> g = tw::grad(loss)(X);
  // Example 0 alone, then 3000 / 64: 47 grains of 63 or 64 examples (the serial backward would
  // see all 3000 at once).
  REQUIRE(recorded_batches.size() == 48);
  REQUIRE(recorded_batches.front() == 1);
  for (std::size_t k = 1; k < recorded_batches.size(); ++k)
    REQUIRE((recorded_batches[k] == 63 || recorded_batches[k] == 64));
  WARN("the backward pass ran on " << recorded_threads.size() << " threads");
  REQUIRE(same_bits(g, tw::grad(loss_serial)(X)));
  // A loop over examples: d/dx of 0.5 * sum(f(x)).
  for (std::int64_t e = 0; e < 3000; e += 101) {
    const tensor<double> x = tw::reshape(tw::kernels::narrow(X, 0, e, 1), {4});
    const tensor<double> ge = tw::grad([](auto v) { return tw::sum(per_example_f{}(v) * 0.5); })(x);
    for (std::int64_t k = 0; k < 4; ++k) require_close(g(e, k), ge(k), 1e-12);
  }
  // The runtime path: runtime values (and a runtime grad) with a captureless f.
  std::function<value(value)> lr = [p](value x) { return tw::sum(tw::vmap(per_example_f{}, p)(x) * 0.5); };
  std::function<value(value)> lr_serial = [](value x) { return tw::sum(tw::vmap(per_example_f{})(x) * 0.5); };
  for (const std::int64_t b : batch_sizes) {
    INFO("runtime, B = " << b);
    const tensor<double> Xb = sample({b, 4}, -1, 1, 35);
    require_same_outcome([&] { return tw::grad(lr_serial)(value(Xb)); }, [&] { return tw::grad(lr)(value(Xb)); });
  }
  recorded_threads.clear();
  REQUIRE(same_bits(tw::grad(lr)(value(X)), tw::grad(lr_serial)(value(X))));
  REQUIRE(!recorded_threads.empty());
  // vjp and jacrev through it; grad of grad (second order) stays exact.
  const tensor<double> Xs = sample({70, 4}, -1, 1, 32);
  REQUIRE(same_bits(tw::jacrev(tw::vmap(f, p))(Xs), tw::jacrev(tw::vmap(f))(Xs)));
  const tensor<double> ct = sample({3000, 4}, -1, 1, 33);
  REQUIRE(
      same_bits(std::get<0>(tw::vjp(tw::vmap(f, p), X).second(ct)), std::get<0>(tw::vjp(tw::vmap(f), X).second(ct))));
  const tensor<double> V = sample({300, 4}, -1, 1, 34);
  auto hvp = [&](auto l) {
    return tw::grad([&](auto x) { return tw::sum(tw::grad(l)(x) * V); })(tw::kernels::narrow(X, 0, 0, 300));
  };
  const tensor<double> h = hvp(loss), hs = hvp(loss_serial);
  for (std::int64_t k = 0; k < h.numel(); ++k) require_close(h.data()[k], hs.data()[k], 1e-12);
}

TEST_CASE("parallel: nested parallel vmaps give the serial bits") {
  const tensor<double> X = sample({300, 5, 3}, -1, 1, 14);
  auto g = [](auto r) { return tw::sin(r) * tw::sum(r * r); };
  const auto p = tw::parallel(4, 64);
  // The inner vmap sees the outer's batched values: it runs serially inside each outer grain.
  auto nested = tw::vmap([p, g](auto x) { return tw::vmap(g, p)(x); }, p)(X);
  REQUIRE(same_bits(nested, tw::vmap([g](auto x) { return tw::vmap(g)(x); })(X)));
  // An inner vmap over plain values (f holds none): both levels run parallel on one pool.
  const tensor<double> Z = sample({500, 2}, -1, 1, 16);
  REQUIRE(same_bits(tw::vmap(inner_over_constant<true>{}, p)(Z), tw::vmap(inner_over_constant<false>{})(Z)));
}

TEST_CASE("parallel: under no_grad, grad still differentiates on every thread") {
  const tensor<double> R = rows(2000, 3, 17);
  const tensor<double> want = tw::vmap(tw::grad(energy))(R);
  tw::no_grad off;
  REQUIRE(same_bits(tw::vmap(tw::grad(energy), tw::parallel(4, 64))(R), want));
  REQUIRE_FALSE(tw::is_grad_enabled());
}

namespace {
struct bad_example : std::runtime_error {
  using std::runtime_error::runtime_error;
};
constexpr double poison = 0.5;  // the example f refuses
}  // namespace

TEST_CASE("parallel: an exception in one grain reaches the caller, and every thread's state is intact") {
  tensor<double> X = sample({1000}, 1, 2, 18);
  X.data()[777] = poison;
  // strategy::fused calls f on one example at a time, here a rank-0 tensor.
  auto throws_user = [](auto x) {
    if constexpr (tw::is_tensor_v<decltype(x)>)
      if (x.data()[0] == poison) throw bad_example("example refused");
    return x * x;
  };
  auto throws_tower = [](auto x) {
    if constexpr (tw::is_tensor_v<decltype(x)>)
      if (x.data()[0] == poison) throw tw::error("f: example refused");
    return x * x;
  };
  for (int round = 0; round < 3; ++round) {
    {
      tw::no_grad off;  // the grains run with this grad mode, and the workers get theirs back
      REQUIRE_THROWS_AS(tw::vmap(throws_user, tw::strategy::fused, tw::parallel(4, 64))(X), bad_example);
      REQUIRE_THROWS_WITH(tw::vmap(throws_tower, tw::strategy::fused, tw::parallel(4, 64))(X),
                          "tower: f: example refused");
      REQUIRE_THROWS_WITH(tw::vmap(throws_tower, tw::strategy::fused, tw::parallel)(X), "tower: f: example refused");
    }
    // The serial vmap throws too (the test's premise).
    REQUIRE_THROWS_AS(tw::vmap(throws_user, tw::strategy::fused)(X), bad_example);
    // Mismatched batch sizes: the serial vmap's error.
    const tensor<double> A = sample({300, 2}, -1, 1, 19), B = sample({301, 2}, -1, 1, 20);
    require_same_outcome([&] { return tw::vmap([](auto a, auto b) { return a * b; })(A, B); },
                         [&] { return tw::vmap([](auto a, auto b) { return a * b; }, tw::parallel(4, 64))(A, B); });
    // A kernel's error names the example by its index in the whole batch, as the serial vmap's
    // does, not in its grain, on both paths.
    tensor<double> S = tw::zeros<double>({1000, 2, 2});
    for (std::int64_t b = 0; b < 1000; ++b) S.data()[4 * b] = S.data()[4 * b + 3] = 2;
    S.data()[4 * 777] = -1;
    auto chol = [](auto a) { return tw::sum(tw::cholesky(a)); };
    std::function<value(value)> chol_r = [](value a) { return tw::sum(tw::cholesky(a)); };
    require_same_outcome([&] { return tw::vmap(tw::grad(chol))(S); },
                         [&] { return tw::vmap(tw::grad(chol), tw::parallel(4, 64))(S); });
    require_same_outcome([&] { return tw::vmap(tw::grad(chol_r))(S).to_tensor(); },
                         [&] { return tw::vmap(tw::grad(chol_r), tw::parallel(4, 64))(S).to_tensor(); });
    REQUIRE_THROWS_WITH(tw::vmap(tw::grad(chol), tw::parallel(4, 64))(S),
                        Catch::Contains("matrix 777 of shape [1000, 2, 2] is not positive definite"));
  }
  REQUIRE(tw::interpreter_stack_depth() == 0);
  REQUIRE(tw::is_grad_enabled());
#if !defined(TOWER_PARALLEL_STD_THREADS)  // (ThreadSanitizer runs: fresh threads per call)
  // Every pool thread: an empty stack and grad mode on.
  std::atomic<int> bad{0};
  tbb::parallel_for(0, 256, [&](int) {
    if (tw::interpreter_stack_depth() != 0 || !tw::is_grad_enabled() ||
        tw::detail::lent_output_slot<double>() != nullptr)
      ++bad;
  });
  REQUIRE(bad.load() == 0);
#endif
  // And transforms on several threads give the serial bits, on both paths.
  const tensor<double> R = rows(3000, 3, 21);
  REQUIRE(same_bits(tw::vmap(tw::grad(energy), tw::parallel(4, 64))(R), tw::vmap(tw::grad(energy))(R)));
  std::function<value(value)> e = [](value r) { return energy(r); };
  REQUIRE(same_bits(tw::vmap(tw::grad(e), tw::parallel(4, 64))(R), tw::vmap(tw::grad(e))(R)));
  tensor<double> ok = X;
  ok.data()[777] = 1.5;
  REQUIRE(same_bits(tw::vmap(throws_user, tw::strategy::fused, tw::parallel(4, 64))(ok),
                    tw::vmap(throws_user, tw::strategy::fused)(ok)));
}

namespace {
// Refuses the poison example in the backward pass only: on grad's values over a grain.
struct refuses_in_backward {
  auto operator()(auto x) const {
    if constexpr (requires { decltype(x)::key; }) {
      if constexpr (decltype(x)::key == tw::transform_type::grad) {
        const auto& rows = x.primal.value;  // the grain's examples, [n, 2]
        for (std::int64_t k = 0; k < rows.numel(); ++k)
          if (rows.data()[k] == poison) throw bad_example("example refused in the backward pass");
      }
    }
    return tw::sin(x) * x;
  }
};
}  // namespace

TEST_CASE("parallel: an exception in a grain of the backward pass reaches the caller") {
  tensor<double> X = sample({3000, 2}, 1, 2, 25);
  X.data()[2 * 2222] = poison;
  const auto p = tw::parallel(4, 64);
  auto loss = [p](auto x) { return tw::sum(tw::vmap(refuses_in_backward{}, p)(x)); };
  for (int round = 0; round < 3; ++round) {
    REQUIRE_THROWS_AS(tw::grad(loss)(X), bad_example);
    REQUIRE(tw::interpreter_stack_depth() == 0);
    REQUIRE(tw::is_grad_enabled());
  }
  X.data()[2 * 2222] = 1.5;
  auto loss_serial = [](auto x) { return tw::sum(tw::vmap(refuses_in_backward{})(x)); };
  REQUIRE(same_bits(tw::grad(loss)(X), tw::grad(loss_serial)(X)));
}

TEST_CASE("parallel: bad options are reported") {
  REQUIRE_THROWS_WITH(tw::parallel(0), "tower: vmap: tw::parallel(0): the thread count must be at least 1");
  REQUIRE_THROWS_WITH(tw::parallel(2, -1), "tower: vmap: tw::parallel: the grain size must be at least 0, got -1");
}
