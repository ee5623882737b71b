#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch (and, when importable, nvmath-python) on the shapes of bench/bench_matmul.cpp.

Times torch.matmul, torch._addmm_activation(gelu), F.linear and torch._scaled_mm with CUDA
events (median of many runs after warm-up) on inputs uniform in (-0.5, 0.5), the same
distribution bench_matmul uses, and prints TFLOP/s (or ms) per case, plus the host time per call
of a 64^3 f32 matmul in bursts of 128.

    python3 bench/peers/matmul_torch.py [--quick] [--json PATH]
"""

import argparse
import json

import _timing as timing  # bench/peers/_timing.py, beside this script

import torch
import torch.nn.functional as F


def uniform(shape, dtype):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) - 0.5).to(dtype)


BURN_SECONDS = 2.0


def gpu_ms(fn, warmup, samples):
    return timing.torch_gpu_ms(torch, fn, warmup, samples, BURN_SECONDS)


def host_us(fn, burst=128, bursts=51, warmup=3):
    return timing.host_us(fn, torch.cuda.synchronize, burst, bursts, warmup)


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12


def nvmath_hook(rows, sizes, timing):
    """nvmath-python's stateful Matmul on the bf16 cubes, when the package can be imported."""
    try:
        import nvmath  # noqa: F401
        from nvmath.linalg.advanced import Matmul
    except Exception as e:  # pragma: no cover - depends on the machine
        print(f"  nvmath-python not importable ({type(e).__name__}: {e}); skipped")
        return
    for n in sizes:
        a, b = uniform((n, n), torch.bfloat16), uniform((n, n), torch.bfloat16)
        with Matmul(a, b) as mm:
            mm.plan()
            ms = gpu_ms(mm.execute, *timing)
        rows.append(("bf16 %d^3" % n, "nvmath Matmul.execute", "TFLOP/s", tflops(2.0 * n**3, ms)))
        print(f"  {'bf16 %d^3' % n:<44} {'nvmath Matmul.execute':<34} {tflops(2.0 * n**3, ms):12.4g} TFLOP/s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    global BURN_SECONDS
    BURN_SECONDS = 0.2 if args.quick else 2.0
    timing = (2, 7) if args.quick else (5, 21)
    rows = []

    def add(group, variant, metric, value):
        rows.append((group, variant, metric, value))
        print(f"  {group:<44} {variant:<34} {value:12.4g} {metric}")

    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}")
    cubes = [2048, 1024] if args.quick else [8192, 4096, 1024]
    for n in cubes:
        a, b = uniform((n, n), torch.bfloat16), uniform((n, n), torch.bfloat16)
        add(f"bf16 {n}^3", "torch.matmul", "TFLOP/s", tflops(2.0 * n**3, gpu_ms(lambda: torch.matmul(a, b), *timing)))

    for n in [2048] if args.quick else [8192, 4096]:
        a, b, bias = uniform((n, n), torch.bfloat16), uniform((n, n), torch.bfloat16), uniform((n,), torch.bfloat16)
        ms = gpu_ms(lambda: torch._addmm_activation(bias, a, b, use_gelu=True), *timing)
        add(f"bf16 + bias + GELU {n}^3", "torch._addmm_activation(gelu)", "TFLOP/s", tflops(2.0 * n**3, ms))

    nk = 2048 if args.quick else 8192
    w = uniform((nk, nk), torch.bfloat16)
    for m in [1, 16, 64, 256]:
        x = uniform((m, nk), torch.bfloat16)
        ms = gpu_ms(lambda: F.linear(x, w), 3 if args.quick else 10, 11 if args.quick else 51)
        add(f"bf16 linear m={m} n=k={nk}", "F.linear", "ms", ms)

    if torch.cuda.get_device_capability() >= (8, 9) and hasattr(torch, "_scaled_mm"):
        for n in [2048] if args.quick else [8192, 4096]:
            a = uniform((n, n), torch.float32).to(torch.float8_e4m3fn)
            b = uniform((n, n), torch.float32).to(torch.float8_e4m3fn).t().contiguous().t()  # column-major
            one = torch.ones((), device="cuda", dtype=torch.float32)
            ms = gpu_ms(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), *timing)
            add(f"fp8 e4m3 -> bf16 {n}^3", "torch._scaled_mm", "TFLOP/s", tflops(2.0 * n**3, ms))

    # Row-wise FP8 (one f32 scale per row of a and per column of b), the shapes of bench_matmul's
    # "fp8 rowwise" groups: _scaled_mm takes scale_a (M, 1) and scale_b (1, N) on Hopper.
    if torch.cuda.get_device_capability()[0] == 9 and hasattr(torch, "_scaled_mm"):
        shapes = [(2048, 2048, 2048), (256, 7168, 7168)] if args.quick else \
            [(8192, 8192, 8192), (4096, 4096, 4096)] + [(m, 7168, 7168) for m in (128, 256, 512, 1024, 2048, 4096)]
        for m, n, k in shapes:
            a = uniform((m, k), torch.float32).to(torch.float8_e4m3fn)
            b = uniform((n, k), torch.float32).to(torch.float8_e4m3fn).t()  # (k, n) column-major
            sa = torch.ones((m, 1), device="cuda", dtype=torch.float32)
            sb = torch.ones((1, n), device="cuda", dtype=torch.float32)
            try:
                ms = gpu_ms(lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16), *timing)
            except Exception as e:  # pragma: no cover - depends on the PyTorch build
                print(f"  row-wise _scaled_mm unavailable ({type(e).__name__}: {e}); skipped")
                break
            add(f"fp8 rowwise -> bf16 m={m} n={n} k={k}", "torch._scaled_mm rowwise", "TFLOP/s",
                tflops(2.0 * m * n * k, ms))

    bufs = [(uniform((64, 64), torch.float32), uniform((64, 64), torch.float32), torch.empty((64, 64), device="cuda"))
            for _ in range(8)]
    counter = [0]

    def small():
        a, b, d = bufs[counter[0] % 8]
        counter[0] += 1
        torch.matmul(a, b, out=d)

    add("f32 64^3 host time per call", "torch.matmul(out=)", "us/call", host_us(small, bursts=11 if args.quick else 51))

    nvmath_hook(rows, [2048] if args.quick else [8192, 4096], timing)

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"program": "matmul_torch", "torch": torch.__version__,
                       "rows": [dict(group=g, variant=v, metric=m, value=x) for g, v, m, x in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
