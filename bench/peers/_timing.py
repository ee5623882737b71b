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
