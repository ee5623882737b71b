# SPDX-License-Identifier: Apache-2.0
"""Timing shared by the peer scripts (imported from their own directory)."""

import statistics
import time


def host_us(fn, synchronize, burst=128, bursts=51, warmup=3):
    """Host microseconds per call of fn(), in bursts of `burst` calls (shorter than the launch
    queue) with the device drained by synchronize() between bursts; median over `bursts`."""
    times = []
    for b in range(warmup + bursts):
        synchronize()
        t0 = time.perf_counter()
        for _ in range(burst):
            fn()
        t1 = time.perf_counter()
        if b >= warmup:
            times.append((t1 - t0) * 1e6 / burst)
    synchronize()
    return statistics.median(times)


def torch_gpu_ms(torch, fn, warmup, samples, burn_seconds, burn_calls=16):
    """Median GPU milliseconds of fn() between two CUDA events, over `samples` runs. Sustained load
    first (`burn_seconds` of fn() in groups of `burn_calls`), as the bench programs do: the card
    boosts when idle and slows within seconds of heavy work, so both measure at the clocks it
    settles at. `torch` is the caller's torch module."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < burn_seconds:
        for _ in range(burn_calls):
            fn()
        torch.cuda.synchronize()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)
