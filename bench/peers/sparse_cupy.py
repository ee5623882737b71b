#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""CuPy's sparse direct solve on the 3-D Poisson problems of bench/bench_sparse.cpp.

Times cupyx.scipy.sparse.linalg.spsolve on the 7-point Laplacian of an n^3 grid (f64 CSR, 6 on the
diagonal, -1 to each neighbour, a right-hand side uniform in [-1, 1]) in this process, on the same
card as bench_sparse: wall time of one solve after one warm-up solve (each solve is a whole
factorization), with the relative residual. Grids whose previous solve took longer than
--budget seconds are skipped.

    python3 bench/peers/sparse_cupy.py [--quick] [--budget SECONDS]
"""

import argparse
import time


def laplacian7(cp, sp, n):
    one = sp.diags([-cp.ones(n - 1), -cp.ones(n - 1)], [-1, 1], format="csr", dtype=cp.float64)
    eye = sp.identity(n, format="csr", dtype=cp.float64)
    a = (sp.kron(sp.kron(one, eye), eye) + sp.kron(sp.kron(eye, one), eye) + sp.kron(sp.kron(eye, eye), one))
    a = a + 6 * sp.identity(n ** 3, format="csr", dtype=cp.float64)
    return a.tocsr()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget", type=float, default=60.0)
    args = parser.parse_args()
    try:
        import cupy as cp
        import cupyx.scipy.sparse as sp
        import cupyx.scipy.sparse.linalg as spla
    except ImportError:
        print("cupy: not installed, skipped")
        return
    print(f"cupy {cp.__version__}, {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    last = 0.0
    for n in ([32] if args.quick else [64, 100]):
        name = f"cuDSS f64 Laplacian7 {n}^3"
        if last > args.budget:
            print(f"  {name:<44} cupyx spsolve skipped: the previous grid took {last:.1f} s")
            continue
        a = laplacian7(cp, sp, n)
        b = cp.random.uniform(-1, 1, n ** 3)
        times = []
        for _ in range(2):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            x = spla.spsolve(a, b)
            cp.cuda.Device().synchronize()
            times.append(time.perf_counter() - t0)
            if times[-1] > args.budget:
                break
        last = times[-1]
        res = float(cp.linalg.norm(a @ x - b) / cp.linalg.norm(b))
        print(f"  {name:<44} cupyx spsolve {times[-1] * 1e3:12.1f} ms  residual {res:.1e}"
              f"  (own process, {len(times)} solves, the last timed)")


if __name__ == "__main__":
    main()
