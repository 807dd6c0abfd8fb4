#!/usr/bin/env python3
"""Writes tests/fuzz/static_programs_seed<S>_test.cpp: a fixed sample of random programs as C++ source.

Each program is a chain of ops (a generic lambda) under a random stack of up to 4 transforms
(vmap with random in_dims/out_dims, vmap with an unbatched argument, a vmap and a grad whose
functions capture the enclosing transform's value, grad, vjp, jvp, jacrev, jacfwd, hessian),
the same kinds as tests/fuzz/runtime_fuzz.cpp. The test runs each program on the static path
(tensor<double> input) and on the runtime path (the same generic code on a dyn::value) and
requires the same numbers. The files (one per seed, 1 to 3) are checked in; regenerate them with

    for s in 1 2 3; do
      python3 tests/fuzz/gen_static_programs.py --seed $s --programs 16 > tests/fuzz/static_programs_seed${s}_test.cpp
    done

(every program is a template instantiation of its own: 16 compile in about a minute and a half).
"""
import argparse
import random

UNARY = ["tw::neg({})", "tw::abs({})", "tw::sign({})", "tw::square({})", "tw::sin({})", "tw::cos({})", "tw::tanh({})",
         "tw::atan({})", "tw::sigmoid({})", "tw::softplus({})", "tw::relu({})", "tw::erf({})", "tw::exp({} * 0.5)",
         "tw::expm1({} * 0.5)", "tw::sinh({})", "tw::cosh({})", "tw::log(tw::softplus({}) + 0.2)",
         "tw::sqrt(tw::softplus({}) + 0.2)", "tw::rsqrt(tw::softplus({}) + 0.2)", "tw::reciprocal(tw::softplus({}) + 0.2)",
         "tw::log1p(tw::softplus({}))", "tw::asin(tw::tanh({}) * 0.9)", "tw::acos(tw::tanh({}) * 0.9)", "tw::tan(tw::tanh({}))"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (tw::softplus({b}) + 0.5)", "tw::pow(tw::softplus({a}) + 0.2, tw::tanh({b}) * 2.0)",
          "tw::maximum({a}, {b})", "tw::minimum({a}, {b})", "tw::atan2({a}, tw::softplus({b}) + 0.1)",
          "tw::where(tw::gt({a}, {b}), {a} * 2.0, tw::sin({b}))", "{a} * tw::ones_like({b}) + tw::full_like({a}, 0.5)"]


class chain:
    """Registers with shapes; each step a C++ statement."""

    def __init__(self, r, shape):
        self.r = r
        self.shapes = [shape]
        self.lines = []

    def add(self, expr, shape):
        i = len(self.shapes)
        self.lines.append(f"[[maybe_unused]] auto r{i} = {expr};")
        self.shapes.append(shape)

    def step(self):
        r = self.r
        a = len(self.shapes) - 1 if r.random() < 0.8 else r.randrange(len(self.shapes))
        s = self.shapes[a]
        A = f"r{a}"
        same = [i for i, t in enumerate(self.shapes) if t == s]
        k = r.randrange(9)
        if k <= 2:
            self.add(r.choice(UNARY).format(A), s)
        elif k <= 4:
            b = r.choice(same)
            self.add(r.choice(BINARY).format(a=A, b=f"r{b}"), s)
        elif k == 5 and s:  # reductions
            red = r.choice(["tw::sum", "tw::mean", "tw::amax", "tw::amin", "tw::logsumexp", "tw::prod"])
            if r.random() < 0.5:
                self.add(f"{red}({A})", [])
            else:
                self.add(f"{red}({A}, -1)", s[:-1])
        elif k == 6 and s:  # layout
            c = r.randrange(4)
            if c == 0:
                self.add(f"tw::softmax({A}, -1)", s)
            elif c == 1:
                self.add(f"tw::cat(std::tuple{{{A}, tw::sin({A})}}, -1)", s[:-1] + [2 * s[-1]])  # types may differ: a tuple
            elif c == 2 and s[-1] > 1:
                self.add(f"tw::narrow({A}, -1, 1, {s[-1] - 1})", s[:-1] + [s[-1] - 1])
            elif c == 3 and len(s) == 2:
                self.add(f"tw::transpose({A}, 0, 1)", [s[1], s[0]])
            else:
                self.add(f"tw::reshape({A}, {{-1}})", [prod(s)])
        elif k == 7 and s:  # matmul with a constant weight
            n = r.randint(1, 3)
            w = [round(r.uniform(-1, 1), 3) for _ in range(s[-1] * n)]
            self.add(f"tw::matmul({A}, tw::tensor<double>(shape_t{{{s[-1]}, {n}}}, std::vector<double>{{{', '.join(map(str, w))}}}))", s[:-1] + [n])
        elif k == 8 and len(s) == 1 and s[0] >= 1:
            self.add(f"tw::norm({A})", [])
        else:
            self.add(f"tw::sin({A}) * 0.5 + {A}", s)

    def finish(self):
        if prod(self.shapes[-1]) > 6:
            self.add(f"tw::sum(r{len(self.shapes) - 1}, 0)", self.shapes[-1][1:])


def prod(s):
    p = 1
    for d in s:
        p *= d
    return p


KINDS = ["vmap", "vmap", "vmap_unbatched_arg", "vmap_closure", "grad", "grad_closure", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


def layer_code(kind, inner, r, rank):
    """A lambda of x applying the transform to `inner`; returns (code, input rank change)."""
    o = r.choice([0, -1])
    if kind == "vmap":
        d = r.choice([0, -1] + ([1] if rank + 1 >= 2 else []))
        return f"[](auto x) {{ return tw::vmap({inner}, tw::in_dims({d}), tw::out_dims({o}))(x); }}", d
    if kind == "vmap_unbatched_arg":
        d = r.choice([0, -1])
        return (f"[](auto x) {{ auto w = tw::sum(x, {d}) * 0.3; return tw::vmap([](auto y, auto v) {{ return {inner}(y + v); }}, "
                f"tw::in_dims({d}, tw::none), tw::out_dims({o}))(x, w); }}"), d
    if kind == "vmap_closure":
        return (f"[](auto x) {{ return tw::vmap([x](auto y) {{ return {inner}(y * 0.5 + tw::sin(x)); }}, tw::out_dims({o}))"
                f"(tw::stack({{x * 0.5, x * -1.0, x + 1.0}})); }}"), None
    if kind == "grad":
        return f"[](auto x) {{ return tw::grad([](auto y) {{ return tw::sum({inner}(y)); }})(x); }}", None
    if kind == "grad_closure":
        return f"[](auto x) {{ return tw::grad([x](auto y) {{ return tw::sum({inner}(y + x * 0.5)); }})(x); }}", None
    if kind == "vjp":
        return f"[](auto x) {{ auto [y, pull] = tw::vjp({inner}, x); return std::get<0>(pull(tw::ones_like(y))); }}", None
    if kind == "jvp":
        return f"[](auto x) {{ return tw::jvp({inner}, std::tuple{{x}}, std::tuple{{tw::ones_like(x)}}).second; }}", None
    if kind == "hessian":
        return f"[](auto x) {{ return tw::hessian([](auto y) {{ return tw::sum({inner}(y)); }})(x); }}", None
    return f"[](auto x) {{ return tw::{kind}({inner})(x); }}", None


def program(i, r):
    depth = r.randint(1, 4)
    kinds = [r.choice(KINDS) for _ in range(depth)]  # outermost first
    jac = 0
    for k in range(depth):
        if kinds[k] in ("jacrev", "jacfwd", "hessian"):
            jac += 1
            if jac > 2:
                kinds[k] = "grad"
    rank = r.randint(1, 2)
    shape = [r.randint(1, 3) for _ in range(rank)]
    c = chain(r, shape)
    for _ in range(r.randint(2, 6)):
        c.step()
    c.finish()
    name = f"p{i}"
    out = [f"// program {i}: {'('.join(kinds)}(f{')' * depth}"]
    out.append(f"inline constexpr auto {name}_f = [](auto r0) {{")
    out += ["  " + l for l in c.lines]
    out.append(f"  return r{len(c.shapes) - 1};")
    out.append("};")
    inner = f"{name}_f"
    in_shape = list(shape)
    for level, kind in enumerate(reversed(kinds)):
        code, d = layer_code(kind, inner, r, len(in_shape))
        if d is not None:
            pos = d if d >= 0 else len(in_shape) + 1 + d
            in_shape.insert(pos, r.randint(1, 3))
        inner = f"{name}_{level}"
        out.append(f"inline constexpr auto {inner} = {code};")
    out.append(f"void run_{name}() {{ tower::testing::check_static_program(\"{name}: {'('.join(kinds)}(f{')' * depth}\", {inner}, shape_t{{{', '.join(map(str, in_shape))}}}, {i}u); }}")
    return "\n".join(out), name


# Programs of a seed that the static path does not compile yet: kept in the file under
# TOWER_FUZZ_KNOWN_FAILURES (off), so that -DTOWER_FUZZ_KNOWN_FAILURES shows the error.
KNOWN_FAILURES = {}

HEADER = """// Generated by tests/fuzz/gen_static_programs.py --seed {seed} --programs {n}; do not edit.
// Random programs of transforms (up to depth 4, closures included) around chains of ops, each
// run on the static path and on the runtime path (tests/fuzz/static_check.hpp).
#include <catch2/catch.hpp>

#include <tuple>

#include "tests/fuzz/static_check.hpp"
#include "tower/tower.hpp"

namespace tw = tower;
using tw::shape_t;

namespace {{
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--programs", type=int, default=16)
    args = ap.parse_args()
    r = random.Random(args.seed)
    print(HEADER.format(seed=args.seed, n=args.programs))
    names = []
    known = []
    for i in range(args.programs):
        code, name = program(i, r)
        why = KNOWN_FAILURES.get((args.seed, i))
        if why:
            print(f"// Does not compile yet: {why}.\n#if defined(TOWER_FUZZ_KNOWN_FAILURES)\n{code}\n#endif\n")
            known.append(name)
        else:
            print(code + "\n")
            names.append(name)
    print("}  // namespace\n")
    print(f'TEST_CASE("{len(names)} random programs: the static path gives the runtime path\'s numbers") {{')
    for n in names:
        print(f"  run_{n}();")
    for n in known:
        print(f"#if defined(TOWER_FUZZ_KNOWN_FAILURES)\n  run_{n}();\n#endif")
    print("}")


if __name__ == "__main__":
    main()
