"""The two products with a dense Phi in each BLAS orientation, by shape.

Question: which orientation of ``Phi @ W`` and ``Phi^T G`` does this machine's BLAS run
faster at the experiments' shapes, and by how much? (The choice
:class:`sparsesvm.model.operator.DenseProducts` makes once per operator.) Answered by
``python benchmarks/bench_products.py``.

For each shape (L samples, M features, K classes; non-negative Gaussian ``Phi``, C-ordered
float64, one BLAS thread) it reports the median CPU time (``time.process_time``) of

* ``forward``: ``Phi @ W`` (W: (M, K)), and ``forward_t``: ``(W^T Phi^T)^T`` with the
  transposed ``W`` and result copied to C order;
* ``adjoint``: ``Phi^T G`` written into an (M, K) array (G: (L, K)), and ``adjoint_t``:
  ``(G^T Phi)^T`` copied into it;

each timed ``--repeats`` times as runs of enough calls to last about ``--min-ms``
milliseconds, the four interleaved, so that the load of a shared machine hits all four;
``speedup`` = direct / transposed (above 1: the transposed orientation is faster), and
whether the two orientations gave bitwise the same results.

Default shapes: MNIST scattering (M = 3969, K = 10) at E2/E4's and E5's training sizes,
leukemia (M = 7129, K = 3) at E1's, and load_digits (M = 64, K = 10).

    python benchmarks/bench_products.py [--shapes 30x3969x10 5000x3969x10 ...]
        [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import _harness as h  # one BLAS thread
import numpy as np

SHAPES = ["30x3969x10", "50x3969x10", "100x3969x10", "500x3969x10", "1000x3969x10",
          "2000x3969x10", "5000x3969x10", "38x7129x3", "72x7129x3", "1257x64x10"]


def parse_shape(text):
    """``"LxMxK"`` -> (L, M, K)."""
    try:
        L, M, K = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise SystemExit(f"a shape is LxMxK (three integers), got {text!r}") from None
    if min(L, M, K) < 1:
        raise SystemExit(f"a shape has positive sizes, got {text!r}")
    return L, M, K


def per_call(fn, min_ms):
    """CPU seconds per call of ``fn``, over as many calls as fill ``min_ms`` milliseconds."""
    fn()
    n, spent = 1, 0.0
    while True:
        t0 = time.process_time()
        for _ in range(n):
            fn()
        spent = time.process_time() - t0
        if spent * 1e3 >= min_ms:
            return spent / n
        n *= 2


def bench_shape(L, M, K, repeats, min_ms, seed=0):
    rng = np.random.default_rng(seed)
    Phi = np.ascontiguousarray(np.abs(rng.standard_normal((L, M))))
    W = rng.standard_normal((M, K))
    G = rng.standard_normal((L, K))
    prods = h.DenseProducts(Phi, K)  # the package's own two orientations of each product
    out, out_t = np.empty((M, K)), np.empty((M, K))
    calls = {
        "forward": lambda: prods.forward(W, False),
        "forward_t": lambda: prods.forward(W, True),
        "adjoint": lambda: prods.adjoint(G, out, False),
        "adjoint_t": lambda: prods.adjoint(G, out_t, True),
    }
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            times[name].append(per_call(fn, min_ms))
    med = {name: float(np.median(t)) for name, t in times.items()}
    calls["adjoint"]()
    calls["adjoint_t"]()
    return dict(L=L, M=M, K=K, **{f"{n}_ms": 1e3 * v for n, v in med.items()},
                forward_speedup=med["forward"] / med["forward_t"],
                adjoint_speedup=med["adjoint"] / med["adjoint_t"],
                forward_bitwise=bool(np.array_equal(calls["forward"](), calls["forward_t"]())),
                adjoint_bitwise=bool(np.array_equal(out, out_t)),
                ranges_ms={n: [1e3 * min(t), 1e3 * max(t)] for n, t in times.items()})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=SHAPES, help="LxMxK shapes")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of each product")
    ap.add_argument("--min-ms", type=float, default=50.0,
                    help="milliseconds of CPU per timed run (calls are repeated to fill it)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    h.limit_blas(args.threads)
    rows = []
    print("| L | M | K | forward: direct / transposed (ms) | speedup | adjoint: direct / "
          "transposed (ms) | speedup | bitwise |")
    print("|---|---|---|---|---|---|---|---|")
    for text in args.shapes:
        row = bench_shape(*parse_shape(text), args.repeats, args.min_ms)
        rows.append(row)
        print(f"| {row['L']} | {row['M']} | {row['K']} | {row['forward_ms']:.3f} / "
              f"{row['forward_t_ms']:.3f} | {row['forward_speedup']:.2f} | {row['adjoint_ms']:.3f}"
              f" / {row['adjoint_t_ms']:.3f} | {row['adjoint_speedup']:.2f} | "
              f"{'yes' if row['forward_bitwise'] and row['adjoint_bitwise'] else 'no'} |",
              flush=True)
    if args.json:
        h.write_results(args.json, {"rows": rows}, args)
    else:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
