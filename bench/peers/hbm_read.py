# SPDX-License-Identifier: Apache-2.0
"""HBM bandwidth reference for the grouped-product bounds in docs/benchmarks.md: GB/s of a
read-only stream (a CuPy kernel loading 16 bytes per thread and keeping one word per block) and of
a device-to-device copy, over buffers the size of the experts' weights that one grouped call
streams (G = 8 and 64 experts of K = 4096, N = 14336 bf16, one expert empty).

    python3 bench/peers/hbm_read.py
"""

import cupy as cp

READ = r"""
extern "C" __global__ void read_all(const uint4* __restrict__ x, long long n, unsigned* out) {
    unsigned acc = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const uint4 v = x[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) out[blockIdx.x] = acc;  // keeps the loads; almost never stores
}
"""


def median_ms(fn, runs=31, warmup=3):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for r in range(warmup + runs):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        if r >= warmup:
            times.append(cp.cuda.get_elapsed_time(start, stop))
    times.sort()
    return times[len(times) // 2]


def main():
    kernel = cp.RawKernel(READ, "read_all")
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = props["multiProcessorCount"]
    print(f"{props['name'].decode()}, {sms} SMs")
    expert = 4096 * 14336 * 2
    for experts in (7, 63):
        nbytes = experts * expert
        x = cp.random.randint(0, 2**31, size=nbytes // 4, dtype=cp.int32)
        y = cp.empty_like(x)
        out = cp.zeros(sms * 64, dtype=cp.uint32)
        n = nbytes // 16
        for blocks_per_sm in (4, 8, 16):
            grid = sms * blocks_per_sm
            ms = median_ms(lambda: kernel((grid,), (512,), (x, cp.int64(n), out)))
            print(f"read   {nbytes / 1e6:9.1f} MB  grid {grid:5d}x512  {ms:8.3f} ms  {nbytes / ms / 1e6:7.1f} GB/s")
        ms = median_ms(lambda: y.__setitem__(Ellipsis, x))
        print(f"copy   {nbytes / 1e6:9.1f} MB  (read + write)     {ms:8.3f} ms  {2 * nbytes / ms / 1e6:7.1f} GB/s")
        del x, y


if __name__ == "__main__":
    main()
