#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch and CuPy on the batched eigendecompositions of bench/bench_linalg.cpp.

Times torch.linalg.eigh and cupy.linalg.eigh (values and vectors) on 500 x 100x100 (f32, f64) and
512 x 3x3 (f64) symmetric matrices with CUDA events (median of runs after warm-up), in this
process, on the same card as bench_linalg. Either library may be missing: its rows are skipped.

    python3 bench/peers/linalg_peers.py [--quick]
"""

import argparse
import statistics


def cases(quick):
    yield "eigh f32 500 x 100x100", 500, 100, "float32"
    yield "eigh f64 500 x 100x100", 500, 100, "float64"
    yield "eigh f64 512 x 3x3", 512, 3, "float64"


def run_torch(quick):
    try:
        import torch
    except ImportError:
        print("torch: not installed, skipped")
        return
    for name, count, n, dtype in cases(quick):
        t = getattr(torch, dtype)
        a = torch.rand(count, n, n, dtype=t, device="cuda") * 2 - 1
        a = (a + a.transpose(-1, -2)) / 2
        fn = lambda: torch.linalg.eigh(a)  # noqa: E731
        for _ in range(2):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(5 if quick else 9):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop))
        print(f"  {name:<30} torch.linalg.eigh {statistics.median(times):10.4f} ms  (torch {torch.__version__})")


def run_cupy(quick):
    try:
        import cupy as cp
    except ImportError:
        print("cupy: not installed, skipped")
        return
    for name, count, n, dtype in cases(quick):
        a = cp.random.uniform(-1, 1, (count, n, n)).astype(dtype)
        a = (a + a.transpose(0, 2, 1)) / 2
        fn = lambda: cp.linalg.eigh(a)  # noqa: E731
        for _ in range(2):
            fn()
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(5 if quick else 9):
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop))
        print(f"  {name:<30} cupy.linalg.eigh  {statistics.median(times):10.4f} ms  (cupy {cp.__version__})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    run_torch(args.quick)
    run_cupy(args.quick)


if __name__ == "__main__":
    main()
