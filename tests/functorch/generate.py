#!/usr/bin/python3
"""functorch's values for the programs of tests/functorch_*_test.cpp, written to expected.hpp.

Each program below has a C++ twin of the same name in one of tests/functorch_*_test.cpp, which
runs it in tower on the static path (generic lambdas) and on the runtime path (std::function of
tw::dyn::value) and compares every output leaf with the numbers recorded here. The header is
checked in, so the tests run without torch; regenerate it after adding or changing a program:

    /usr/bin/python3 tests/functorch/generate.py      # from the repository root

(Debian's python3-torch 1.13 ships functorch; torch is not a build dependency.) Without torch
the script prints a message and exits 0, leaving the header as it is.

Inputs are float64 and are written to the header too, so both sides compute on the same bits.
A number `s` is a 0-d tensor here and a double in tower. Outputs are flattened in pytree order
(tuples and lists in order); each leaf keeps its shape.
"""
import math
import os
import sys

try:
    import torch
    import functorch as ft
except ImportError:
    print("generate.py: torch with functorch is not installed; tests/functorch/expected.hpp is left as it is")
    sys.exit(0)

torch.set_default_dtype(torch.float64)
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "expected.hpp")


def rnd(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    # Rounded to 4 decimals so that the header stays readable; the values are exact in both.
    return torch.round(torch.randn(*shape, generator=g) * 1e4) / 1e4


T = torch.tensor
inf = math.inf
I = {
    "x3": rnd(3, seed=1), "y3": rnd(3, seed=2), "v3": rnd(3, seed=3), "w3": rnd(3, seed=4),
    "A23": rnd(2, 3, seed=5), "B34": rnd(3, 4, seed=6), "M33": rnd(3, 3, seed=7), "T23": rnd(2, 3, seed=8),
    "X43": rnd(4, 3, seed=9), "Y43": rnd(4, 3, seed=10), "V43": rnd(4, 3, seed=11),
    "X423": rnd(4, 2, 3, seed=12), "B432": rnd(4, 3, 2, seed=13), "y4": rnd(4, seed=14),
    "C24": rnd(2, 4, seed=15), "pos3": torch.round(rnd(3, seed=16).abs() * 1e4) / 1e4 + 0.5,
    "s": T(0.7), "one_zero3": T([2.0, 0.0, 3.0]), "two_zeros3": T([0.0, 0.0, 3.0]),
    "zeros3": T([0.0, 0.0, 0.0]), "inf3": T([inf, 1.0, 2.0]), "ninf3": T([-inf, -inf, -inf]),
    "ties3": T([1.0, 3.0, 3.0]), "kinks3": T([0.0, 1.0, -3.0]), "sqrt3": T([0.0, 1.0, 4.0]),
    "max_other3": T([1.0, 3.0, 0.0]), "max_at3": T([1.0, 2.0, 3.0]),
}
globals().update(I)
sin, cos, exp = torch.sin, torch.cos, torch.exp
sp, sg = torch.nn.functional.softplus, torch.sigmoid
vmap, grad, vjp, jvp = ft.vmap, ft.grad, ft.vjp, ft.jvp
jacrev, jacfwd, hessian = ft.jacrev, ft.jacfwd, ft.hessian


def vjp_at(f, primals, ct):
    out, fn = vjp(f, *primals)
    return out, fn(ct)


P = {}


def program(name):
    def add(fn):
        assert name not in P, name
        P[name] = fn
        return fn
    return add


def prog(name, fn):
    program(name)(fn)


# ---- vmap --------------------------------------------------------------------------------------
prog("vmap.sin", lambda: vmap(sin)(X43))
prog("vmap.sum", lambda: vmap(lambda x: x.sum())(X43))
prog("vmap.in_dims_none", lambda: vmap(lambda x, b: x @ b, in_dims=(0, None))(X43, B34))
prog("vmap.in_dims_1", lambda: vmap(lambda x: x * 2.0 + x.sum(), in_dims=1)(X43))
prog("vmap.in_dims_neg1", lambda: vmap(lambda x: x * x.sum(), in_dims=-1)(X43))
prog("vmap.out_dims_1", lambda: vmap(lambda x: exp(x), out_dims=1)(X43))
prog("vmap.out_dims_0_applies_to_all", lambda: vmap(lambda x: (sin(x), x.sum()), out_dims=0)(X43))
prog("vmap.out_dims_per_output", lambda: vmap(lambda x: (x * 2.0, torch.outer(x, x)), out_dims=(0, 1))(X43))
prog("vmap.tuple_out", lambda: vmap(lambda x, y: (x * y, (x - y).sum()))(X43, Y43))
prog("vmap.nested", lambda: vmap(vmap(lambda x, y: torch.dot(x, y), in_dims=(0, None)), in_dims=(None, 0))(X43, Y43))
prog("vmap.bmm", lambda: vmap(lambda a, b: a @ b)(X423, B432))
prog("vmap.mv_unbatched_matrix", lambda: vmap(lambda m, v: m @ v, in_dims=(None, 0))(M33, X43))
prog("vmap.dot", lambda: vmap(torch.dot)(X43, Y43))
prog("vmap.softmax", lambda: vmap(lambda x: torch.softmax(x, -1))(X43))
prog("vmap.log_softmax_dim0", lambda: vmap(lambda m: torch.log_softmax(m, 0))(X423))
prog("vmap.logsumexp", lambda: vmap(lambda m: torch.logsumexp(m, 1))(X423))
prog("vmap.transpose", lambda: vmap(lambda m: m.t())(X423))
prog("vmap.reshape", lambda: vmap(lambda m: m.reshape(6))(X423))
prog("vmap.permute_unsqueeze", lambda: vmap(lambda m: m.permute(1, 0).unsqueeze(0))(X423))
prog("vmap.narrow", lambda: vmap(lambda x: x.narrow(0, 1, 2))(X43))
prog("vmap.cat", lambda: vmap(lambda x, y: torch.cat([x, y]))(X43, Y43))
prog("vmap.stack_dim1", lambda: vmap(lambda x, y: torch.stack([x, y], 1))(X43, Y43))
prog("vmap.amax_amin", lambda: vmap(lambda m: (m.amax(0), m.amin(1)))(X423))
prog("vmap.prod", lambda: vmap(lambda x: x.prod())(X43))
prog("vmap.mean_var", lambda: vmap(lambda m: (m.mean(1), m.var(1)))(X423))
prog("vmap.norm", lambda: vmap(lambda x: x.norm())(X43))
prog("vmap.maximum_pow", lambda: vmap(lambda x, y: torch.maximum(x, y) * (x.abs() + 1.0) ** 1.5)(X43, Y43))
prog("vmap.unbatched_scalar_arg", lambda: vmap(lambda x, s: x * s, in_dims=(0, None))(X43, s))

# ---- grad --------------------------------------------------------------------------------------
prog("grad.sin_sum", lambda: grad(lambda x: sin(x).sum())(x3))
prog("grad.scalar", lambda: grad(lambda s: s ** 3 * sin(s))(s))
prog("grad.argnums_0_1", lambda: grad(lambda x, y: (x * y).sum() + (x * x).sum() * y.sum(), argnums=(0, 1))(x3, y3))
prog("grad.argnums_1", lambda: grad(lambda x, y: (x * exp(y)).sum(), argnums=1)(x3, y3))
prog("grad.has_aux", lambda: grad(lambda x: (exp(x).sum(), cos(x)), has_aux=True)(x3))
prog("grad.matmul_tanh", lambda: grad(lambda a: torch.tanh(a @ B34).sum())(A23))
prog("grad.dot_squared", lambda: grad(lambda x, y: torch.dot(x, y) ** 2, argnums=(0, 1))(x3, y3))
prog("grad.logsumexp", lambda: grad(lambda x: torch.logsumexp(x, 0))(x3))
prog("grad.log_softmax", lambda: grad(lambda x: (torch.log_softmax(x, -1) * y3).sum())(x3))
prog("grad.prod", lambda: grad(lambda x: x.prod())(x3))
prog("grad.prod_one_zero", lambda: grad(lambda x: x.prod())(one_zero3))
prog("grad.prod_two_zeros", lambda: grad(lambda x: x.prod())(two_zeros3))
prog("grad.norm", lambda: grad(lambda x: x.norm())(x3))
prog("grad.norm_at_zero", lambda: grad(lambda x: x.norm())(zeros3))
prog("grad.logsumexp_inf", lambda: grad(lambda x: torch.logsumexp(x, 0))(inf3))
prog("grad.logsumexp_all_neg_inf", lambda: grad(lambda x: torch.logsumexp(x, 0))(ninf3))
prog("grad.amax_ties", lambda: grad(lambda x: x.amax())(ties3))
prog("grad.abs_relu_kinks", lambda: grad(lambda x: (x.abs() + torch.relu(x)).sum())(kinks3))
prog("grad.sqrt_at_zero", lambda: grad(lambda x: x.sqrt().sum())(sqrt3))
prog("grad.maximum_tie", lambda: grad(lambda x: torch.maximum(x, max_other3).sum())(max_at3))
prog("grad.layout_chain", lambda: grad(lambda m: (m.t().reshape(6).narrow(0, 1, 4) ** 2).sum())(A23))
prog("grad.mean_var", lambda: grad(lambda x: x.var() + x.mean() * x.sum())(x3))
prog("grad.smooth_ops", lambda: grad(lambda x: (sp(x) * sg(x) + torch.tanh(x) * torch.atan(x)).sum())(x3))
prog("grad.pow", lambda: grad(lambda x: ((x.abs() + 1.0) ** 2.5).sum())(x3))
prog("grad.atan2", lambda: grad(lambda x, y: torch.atan2(x, y).sum(), argnums=(0, 1))(x3, y3))
prog("grad.log_sqrt_positive", lambda: grad(lambda x: (torch.log(x) * torch.sqrt(x)).sum())(pos3))
prog("grad.grad_scalar", lambda: grad(grad(lambda s: sin(s) * s ** 2))(s))
prog("grad.amax_dim_mean", lambda: grad(lambda m: m.amax(1).sum() + m.mean(0).prod())(A23))

# ---- vjp and jvp ---------------------------------------------------------------------------------
prog("vjp.sin", lambda: vjp_at(sin, (x3,), v3))
prog("vjp.matmul", lambda: vjp_at(lambda a, b: a @ b, (A23, B34), C24))
prog("vjp.tuple_out", lambda: vjp_at(lambda x: (sin(x), x.sum() * x), (x3,), (v3, w3)))
prog("vjp.sum_dim", lambda: vjp_at(lambda m: m.sum(0), (A23,), y3))
prog("vjp.softmax", lambda: vjp_at(lambda m: torch.softmax(m, -1), (A23,), T23))
prog("jvp.sin", lambda: jvp(sin, (x3,), (v3,)))
prog("jvp.two_args", lambda: jvp(lambda x, y: x * y + exp(y), (x3, y3), (v3, w3)))
prog("jvp.matmul", lambda: jvp(lambda a: a @ B34, (A23,), (T23,)))
prog("jvp.tuple_out", lambda: jvp(lambda x: (cos(x), x.norm()), (x3,), (v3,)))
prog("jvp.logsumexp", lambda: jvp(lambda m: torch.logsumexp(m, 1), (A23,), (T23,)))
prog("jvp.scalar", lambda: jvp(lambda s: s ** 3, (s,), (T(1.5),)))

# ---- jacrev, jacfwd, hessian -----------------------------------------------------------------------
for jac in ("jacrev", "jacfwd"):
    J = jacrev if jac == "jacrev" else jacfwd
    prog(jac + ".sin", lambda J=J: J(sin)(x3))
    prog(jac + ".matmul", lambda J=J: J(lambda a: a @ B34)(A23))
    prog(jac + ".argnums_0_1", lambda J=J: J(lambda x, y: x * y.sum(), argnums=(0, 1))(x3, y3))
    prog(jac + ".softmax", lambda J=J: J(lambda x: torch.softmax(x, -1))(x3))
    prog(jac + ".scalar_out", lambda J=J: J(lambda x: x.norm())(x3))
    prog(jac + ".tuple_out", lambda J=J: J(lambda x: (sin(x), x.sum()))(x3))
    prog(jac + ".has_aux", lambda J=J: J(lambda x: (exp(x), x.sum()), has_aux=True)(x3))
    prog(jac + ".layout", lambda J=J: J(lambda m: m.t().reshape(6))(A23))
    prog(jac + ".prod", lambda J=J: J(lambda x: x.prod())(x3))
prog("hessian.cubic_prod", lambda: hessian(lambda x: (x ** 3).sum() + x.prod())(x3))
prog("hessian.logsumexp", lambda: hessian(lambda x: torch.logsumexp(x, 0))(x3))
prog("hessian.quadratic_form", lambda: hessian(lambda x: x @ (M33 @ x))(x3))
prog("hessian.scalar", lambda: hessian(lambda s: sin(s) * s)(s))
prog("hessian.norm", lambda: hessian(lambda x: x.norm())(x3))
prog("hessian.matrix_argument", lambda: hessian(lambda a: torch.tanh(a @ B34).sum())(A23))

# ---- compositions -------------------------------------------------------------------------------
logistic = lambda w, x, y: sp(-y * torch.dot(w, x))
prog("compose.vmap_grad", lambda: vmap(grad(logistic), in_dims=(None, 0, 0))(w3, X43, y4))
prog("compose.vmap_grad_argnums", lambda: vmap(grad(lambda w, x: (sin(w * x)).sum(), argnums=(0, 1)), in_dims=(None, 0))(w3, X43))
prog("compose.vmap_jacrev", lambda: vmap(jacrev(lambda x: sin(x) * x.sum()))(X43))
prog("compose.vmap_jacfwd", lambda: vmap(jacfwd(lambda x: torch.softmax(x, -1)))(X43))
prog("compose.vmap_hessian", lambda: vmap(hessian(lambda x: (x ** 3).sum() * x.sum()))(X43))
prog("compose.jacfwd_jacrev", lambda: jacfwd(jacrev(lambda x: sin(x).sum() * x.prod()))(x3))
prog("compose.jacrev_jacrev", lambda: jacrev(jacrev(lambda x: exp(x).sum() * x.norm()))(x3))
prog("compose.grad_of_vmap", lambda: grad(lambda w: vmap(lambda x: torch.tanh(w * x).sum())(X43).sum())(w3))
prog("compose.vmap_jvp", lambda: vmap(lambda x, t: jvp(lambda u: sin(u) * u.sum(), (x,), (t,))[1])(X43, V43))
prog("compose.vmap_vjp", lambda: vmap(lambda x, c: vjp(lambda u: exp(u) * u.sum(), x)[1](c)[0])(X43, V43))
prog("compose.hvp_grad_grad", lambda: grad(lambda x: torch.dot(grad(lambda u: (u ** 3).sum() * u.sum())(x), v3))(x3))
prog("compose.jvp_of_grad", lambda: jvp(grad(lambda u: torch.logsumexp(u, 0) * u.sum()), (x3,), (v3,)))
prog("compose.vmap_grad_has_aux", lambda: vmap(grad(lambda x: ((x * x).sum(), x.sum()), has_aux=True))(X43))
prog("compose.vmap_vmap_grad", lambda: vmap(vmap(grad(lambda x: sin(x).sum())))(X423))


# ---- writing -------------------------------------------------------------------------------------
def leaves(y):
    if isinstance(y, (tuple, list)):
        return [l for e in y for l in leaves(e)]
    if isinstance(y, torch.Tensor):
        return [y.detach()]
    if isinstance(y, float):
        return [T(y)]
    raise TypeError(type(y))


def num(v):
    if math.isnan(v):
        return "nan_"
    if math.isinf(v):
        return "inf_" if v > 0 else "-inf_"
    return repr(float(v))


def values(t):
    return "{" + ", ".join(num(v) for v in t.reshape(-1).tolist()) + "}"


def shape(t):
    return "{" + ", ".join(str(d) for d in t.shape) + "}"


lines = [
    "// Generated by tests/functorch/generate.py (torch %s, functorch); do not edit." % torch.__version__,
    "// Regenerate: /usr/bin/python3 tests/functorch/generate.py",
    "#pragma once",
    "#include <cstdint>",
    "#include <limits>",
    "#include <vector>",
    "",
    "namespace tower::testing::functorch {",
    "",
    "struct recorded {",
    "  const char* name;",
    "  std::vector<std::int64_t> shape;",
    "  std::vector<double> values;",
    "};",
    "",
    "inline constexpr double inf_ = std::numeric_limits<double>::infinity();",
    "inline constexpr double nan_ = std::numeric_limits<double>::quiet_NaN();",
    "",
    "/// The programs' inputs.",
    "inline const std::vector<recorded>& inputs() {",
    "  static const std::vector<recorded> r = {",
]
for k, t in I.items():
    lines.append('      {"%s", %s, %s},' % (k, shape(t), values(t)))
lines += ["  };", "  return r;", "}", "", "/// Each program's output leaves, in pytree order (a name once per leaf).",
          "inline const std::vector<recorded>& outputs() {", "  static const std::vector<recorded> r = {"]
for name, fn in P.items():
    for leaf in leaves(fn()):
        lines.append('      {"%s", %s, %s},' % (name, shape(leaf), values(leaf)))
lines += ["  };", "  return r;", "}", "", "}  // namespace tower::testing::functorch", ""]
with open(OUT, "w") as f:
    f.write("\n".join(lines))
print("generate.py: %d programs written to %s" % (len(P), os.path.relpath(OUT)))
