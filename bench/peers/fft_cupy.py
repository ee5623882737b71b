#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CuPy (cupy.fft) on the cases of bench/bench_fft.cpp.

Times cupy.fft.fft / rfftn with CUDA events (median of many runs after warm-up, plan cache warm),
the host time per call of cupy.fft.fft on n = 64 and 4096 in bursts of 128, and window -> FFT ->
scale written the CuPy way (elementwise multiply, fft with norm="forward").

    python3 bench/peers/fft_cupy.py [--quick] [--json PATH]
"""

import argparse
import json
import statistics

import _timing as timing  # bench/peers/_timing.py, beside this script

import cupy as cp


def gpu_ms(fn, warmup, samples):
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(samples):
        start = cp.cuda.Event()
        stop = cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def host_us(fn, burst=128, bursts=51, warmup=3):
    return timing.host_us(fn, cp.cuda.Device().synchronize, burst, bursts, warmup)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    samples = 11 if args.quick else 31
    rows = []

    def add(group, variant, metric, value, note=""):
        print(f"  {group:44s} {variant:28s} {value:12.4g} {metric} {note}")
        rows.append({"group": group, "variant": variant, "metric": metric, "value": value, "note": note})

    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    print(f"fft_cupy on {props['name'].decode()}, CuPy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}")

    c2c = [("c2c f32 2^20 x 16", 1 << 20, 16), ("c2c f32 2^27", 1 << 27, 1), ("c2c f32 256 x 65536", 256, 65536)]
    if args.quick:
        c2c[1] = ("c2c f32 2^24 (quick)", 1 << 24, 1)
    for name, n, batch in c2c:
        x = (cp.random.rand(batch, n, dtype=cp.float32) - 0.5).astype(cp.complex64)
        add(name, "cupy.fft.fft", "ms", gpu_ms(lambda: cp.fft.fft(x, axis=-1), 3, samples))
        del x

    r2c = [("r2c f32 4096^2", (4096, 4096)), ("r2c f32 512^3", (512, 512, 512))]
    if args.quick:
        r2c[1] = ("r2c f32 256^3 (quick)", (256, 256, 256))
    for name, shape in r2c:
        x = cp.random.rand(*shape, dtype=cp.float32) - 0.5
        add(name, "cupy.fft.rfftn", "ms", gpu_ms(lambda: cp.fft.rfftn(x), 3, samples))
        del x

    for n in (64, 4096):
        x = (cp.random.rand(n, dtype=cp.float32) - 0.5).astype(cp.complex64)
        cp.fft.fft(x)
        add(f"host time c2c f32 n={n}", "cupy.fft.fft", "us/call", host_us(lambda: cp.fft.fft(x)))

    for name, n, batch in (("window-FFT-scale 2^20 x 16", 1 << 20, 16), ("window-FFT-scale 65536 x 256", 65536, 256)):
        x = (cp.random.rand(batch, n, dtype=cp.float32) - 0.5).astype(cp.complex64)
        w = cp.hanning(n).astype(cp.float32)
        add(name, "cupy multiply + fft(norm=forward)", "ms", gpu_ms(lambda: cp.fft.fft(x * w, norm="forward"), 3, samples))
        del x

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"program": "fft_cupy", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
