#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch on the uneven grouped cases of bench/bench_grouped.cpp ("grouped gpu ..."): the same
fixed-seed routed group sizes (one group empty), bf16 A (T, K) and weights (G, K, N), D (T, N).

Times, with CUDA events (median of many runs after a sustained warm-up):
  - a loop of torch.mm over the non-empty groups (what bench_grouped's baseline does with Matmul);
  - torch._grouped_mm (PyTorch's grouped kernel for Hopper) when this PyTorch has it, with the
    weights row-major per expert and, if that is refused, column-major per expert;
  - one dense torch.mm of (T, K) x (K, N) for reference.

    python3 bench/peers/grouped_torch.py [--quick] [--json PATH]
"""

import argparse
import json
import math

import _timing as timing  # bench/peers/_timing.py, beside this script

import torch

MASK = (1 << 64) - 1
BURN_SECONDS = 1.0


def next_uniform(state):
    """bench::next_uniform (bench/harness.hpp): xorshift64, 53 bits."""
    x = state[0]
    x ^= (x << 13) & MASK
    x ^= x >> 7
    x ^= (x << 17) & MASK
    state[0] = x
    return (x >> 11) * 2.0**-53


def routed_sizes(groups, tokens, seed):
    """routed_sizes() of bench/bench_grouped.cpp."""
    state = [(seed * 0x9E3779B97F4A7C15 + 1) & MASK]
    rank = list(range(groups))
    for i in range(groups - 1, 0, -1):
        j = int(next_uniform(state) * (i + 1))
        rank[i], rank[j] = rank[j], rank[i]
    cdf, total = [], 0.0
    for g in range(groups):
        total += 1.0 / math.sqrt(rank[g] + 1)
        cdf.append(total)
    sizes = [0] * groups
    for _ in range(tokens):
        u = next_uniform(state) * total
        lo, hi = 0, groups  # upper_bound
        while lo < hi:
            mid = (lo + hi) // 2
            if cdf[mid] <= u:
                lo = mid + 1
            else:
                hi = mid
        sizes[min(lo, groups - 1)] += 1
    empty = groups // 2
    sizes[(empty + 1) % groups] += sizes[empty]
    sizes[empty] = 0
    return sizes


def uniform(shape):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) - 0.5).to(torch.bfloat16)


def gpu_ms(fn, warmup=5, samples=31):
    return timing.torch_gpu_ms(torch, fn, warmup, samples, BURN_SECONDS, burn_calls=4)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    shapes = [(7168, 2048)] if args.quick else [(4096, 14336), (7168, 2048)]
    means = [16, 128] if args.quick else [16, 128, 1024]
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}; "
          f"torch._grouped_mm {'present' if hasattr(torch, '_grouped_mm') else 'absent'}")
    rows = []
    for groups in (8, 64):
        for k, n in shapes:
            w = uniform((groups, k, n))
            w_col = None
            for mean in means:
                tokens = groups * mean
                sizes = routed_sizes(groups, tokens, groups * 10000 + mean)
                a = uniform((tokens, k))
                d = torch.empty((tokens, n), device="cuda", dtype=torch.bfloat16)
                flops = 2.0 * tokens * k * n
                name = f"G={groups} K={k} N={n} mean={mean}"
                starts = [0]
                for m in sizes:
                    starts.append(starts[-1] + m)

                def loop():
                    for g, m in enumerate(sizes):
                        if m:
                            torch.mm(a[starts[g]:starts[g + 1]], w[g], out=d[starts[g]:starts[g + 1]])

                results = {"loop of torch.mm": gpu_ms(loop)}
                if hasattr(torch, "_grouped_mm"):
                    offs = torch.tensor(starts[1:], device="cuda", dtype=torch.int32)
                    for layout in ("row-major", "column-major"):
                        try:
                            if layout == "column-major":
                                if w_col is None:
                                    w_col = w.transpose(-2, -1).contiguous().transpose(-2, -1)
                                b = w_col
                            else:
                                b = w
                            got = torch._grouped_mm(a, b, offs=offs)
                            ref = torch.empty_like(got)
                            for g, m in enumerate(sizes):
                                if m:
                                    ref[starts[g]:starts[g + 1]] = a[starts[g]:starts[g + 1]] @ w[g]
                            err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
                            if err > 1e-2:
                                raise RuntimeError(f"relative error {err:.3g}")
                            results[f"torch._grouped_mm, weights {layout}"] = gpu_ms(
                                lambda: torch._grouped_mm(a, b, offs=offs))
                        except Exception as e:  # noqa: BLE001 - report what this PyTorch refuses
                            print(f"  {name}: torch._grouped_mm with {layout} weights: {str(e).splitlines()[0]}")
                results["dense torch.mm (T, K) x (K, N)"] = gpu_ms(lambda: torch.mm(a, w[0], out=d))
                base = results["loop of torch.mm"]
                for label, ms in results.items():
                    tf = flops / (ms * 1e-3) / 1e12
                    print(f"  {name:32s} {label:44s} {ms:9.4f} ms {tf:7.1f} TFLOP/s  loop / this {base / ms:.3f}")
                    rows.append({"case": name, "what": label, "ms": ms, "tflops": tf, "ratio": base / ms})
                del a, d
            del w, w_col
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
