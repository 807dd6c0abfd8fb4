#!/usr/bin/env python3
"""The workloads of bench/*.cpp with functorch (torch 1.13's functorch / torch.func), float64,
one thread. Prints one JSON object {"<workload>": median CPU seconds per call}; `--pretty` prints a
table instead. Run with Debian's python3 (python3-torch): /usr/bin/python3 bench/functorch_bench.py
"""
import json
import math
import statistics
import sys
import time

import torch

try:  # torch >= 2.0
    from torch.func import grad, hessian, jacrev, vmap
except ImportError:  # torch 1.13 ships functorch separately
    from functorch import grad, hessian, jacrev, vmap

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(0)


def measure(fn, reps=5, min_time=0.2):
    """Median CPU seconds per call over `reps` repetitions of at least `min_time` each."""
    fn()  # warm up
    n, t0 = 0, time.process_time()
    while time.process_time() - t0 < min_time / 4:
        fn()
        n += 1
    per = (time.process_time() - t0) / max(n, 1)
    iters = max(1, int(min_time / max(per, 1e-9)))
    samples = []
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(iters):
            fn()
        samples.append((time.process_time() - t0) / iters)
    return statistics.median(samples)


def logistic(d, B=4096):
    w, X = torch.rand(d) - 0.5, torch.rand(B, d) * 2 - 1
    Y = torch.sign(torch.rand(B) - 0.5)
    loss = lambda w, x, y: torch.log(1.0 + torch.exp(-(y * torch.dot(w, x))))
    f = vmap(grad(loss), in_dims=(None, 0, 0))
    return lambda: f(w, X, Y)


def mlp(B=1024, I=32, H=64):
    W1, b1, W2, b2 = torch.rand(H, I) * 0.6 - 0.3, torch.rand(H) * 0.2 - 0.1, torch.rand(H) * 0.6 - 0.3, torch.tensor(0.05)
    X, Y = torch.rand(B, I) * 2 - 1, torch.rand(B) * 2 - 1

    def loss(W1, b1, W2, b2, x, y):
        e = torch.dot(W2, torch.tanh(W1 @ x + b1)) + b2 - y
        return e * e

    f = vmap(grad(loss, argnums=(0, 1, 2, 3)), in_dims=(None, None, None, None, 0, 0))
    return lambda: f(W1, b1, W2, b2, X, Y)


def lennard_jones(B=1 << 20):
    R = (torch.rand(B, 3) * 0.8 + 0.6) * torch.sign(torch.rand(B, 3) - 0.5)

    def energy(r):
        s = 1.0 / torch.sum(r * r)
        s3 = s * s * s
        return 4.0 * (s3 * s3 - s3)

    f = vmap(grad(energy))
    return lambda: f(R)


def hessian_r8(B=1 << 14, N=8):
    X = torch.rand(B, N) * 3 - 1.5
    f = lambda x: torch.log(1.0 + torch.sum(x * x)) + torch.sum(torch.sin(x))
    h = vmap(hessian(f))
    return lambda: h(X)


def jacobian_tanh_64(N=64):
    A, x = torch.rand(N, N) * 0.4 - 0.2, torch.rand(N) * 2 - 1
    j = jacrev(lambda x: torch.tanh(A @ x))
    return lambda: j(x)


def chain10_b1():
    X = torch.tensor([0.7])

    def f(x):
        a = torch.sin(x) * x
        b = torch.exp((a + 1.0) * 0.1)
        c = torch.cos(b - x)
        return torch.tanh(c * c) * x

    g = vmap(grad(f))
    return lambda: g(X)


WORKLOADS = {
    "logistic_d16": lambda: logistic(16),
    "logistic_d256": lambda: logistic(256),
    "mlp_32_64_1": mlp,
    "lennard_jones": lennard_jones,
    "hessian_r8": hessian_r8,
    "jacobian_tanh_64": jacobian_tanh_64,
    "chain10_b1": chain10_b1,
}


def main():
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = {}
    for name, make in WORKLOADS.items():
        if only and name not in only:
            continue
        out[name] = measure(make())
    if "--pretty" in sys.argv:
        for k, v in out.items():
            print(f"{k:20s} {v * 1e6:12.1f} us")
    else:
        print(json.dumps({"torch": torch.__version__, "times": out}))


if __name__ == "__main__":
    main()
