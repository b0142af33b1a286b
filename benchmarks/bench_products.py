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

Sparse weights (numba installed): ``Phi @ W`` over the non-zero entries of ``W`` only
(``DenseProducts.forward_sparse``), at each of ``--densities`` (``W`` zero in runs of 81
rows within a class, as E2's l1,inf groups leave it), against the faster dense orientation,
the largest difference from the dense product, and the density below which the package's
own ``DenseProducts.tune_sparse`` (timed at a quarter density) takes it on this machine;
likewise ``Phi^T G`` over the non-zero entries of ``G`` (``DenseProducts.adjoint_sparse``;
``G``'s entries zero at random, as the dual's inactive classes leave them).

Default shapes: MNIST scattering (M = 3969, K = 10) at E2/E4's and E5's training sizes,
leukemia (M = 7129, K = 3) at E1's, and load_digits (M = 64, K = 10).

Sparse ``Phi`` (numba installed; ``--news20`` and/or ``--csr-shapes``): scipy's two CSR
products against the operator's compiled ones (``MulticlassOperator.prepare``;
``sparsesvm.solvers._kernels.sparse_products``): ``[Phi 1] @ X`` at each of
``--row-densities`` (``X`` zero in whole rows, as E3's l1,2 across classes leaves it) and
``[Phi^T; 1^T] @ G``, whether they agree to the bit, and which of the compiled ones the
operator's own timed choice took in this process. ``--news20 5 10 50``: E3's TF-IDF
features of the first subset of that many documents per class (L = 100, 200, 1000; the
features no document uses left out, as ``SparseSVC`` does; needs the mirror, ``--data``);
``--csr-shapes LxMxK``: random CSR features at TF-IDF's density (0.6 %).

    python benchmarks/bench_products.py [--shapes 30x3969x10 5000x3969x10 ...]
        [--repeats 5] [--densities 0.1 0.25 0.5] [--news20 5 10 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import _harness as h  # one BLAS thread
import numpy as np
import scipy.sparse as sp

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


def block_sparse(rng, M, K, density, run=81):
    """(M, K) Gaussian weights, zero in runs of ``run`` rows within a class (E2's groups)."""
    on = rng.random((-(-M // run), 1, K)) < density
    mask = np.broadcast_to(on, (on.shape[0], run, K)).reshape(-1, K)[:M]
    return np.ascontiguousarray(rng.standard_normal((M, K)) * mask)


def bench_sparse(L, M, K, densities, repeats, min_ms, seed=0):
    """The sparse forward product at each density against the faster dense orientation."""
    rng = np.random.default_rng(seed)
    Phi = np.ascontiguousarray(np.abs(rng.standard_normal((L, M))))  # bench_shape's Phi
    prods = h.DenseProducts(Phi, K)
    prods.tune_sparse()
    if "sparse_forward" not in prods.timings:
        return None  # no numba, Phi above SPARSE_FORWARD_MAX_BYTES or below TUNE_MIN_SIZE
    Ws = {d: block_sparse(rng, M, K, d) for d in densities}
    Gs = {d: rng.standard_normal((L, K)) * (rng.random((L, K)) < d) for d in densities}
    dense_W, dense_G, out = Ws[densities[0]], Gs[densities[0]], np.empty((M, K))
    calls = {"dense_direct": lambda: prods.forward(dense_W, False),
             "dense_transposed": lambda: prods.forward(dense_W, True),
             "adjoint_direct": lambda: prods.adjoint(dense_G, out, False),
             "adjoint_transposed": lambda: prods.adjoint(dense_G, out, True)}
    calls.update({f"sparse_{d}": (lambda d=d: prods.forward_sparse(Ws[d])) for d in densities})
    if "sparse_adjoint" in prods.timings:
        calls.update({f"sparse_adjoint_{d}": (lambda d=d: prods.adjoint_sparse(Gs[d], out))
                      for d in densities})
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            times[name].append(per_call(fn, min_ms))
    med = {name: float(np.median(t)) for name, t in times.items()}
    dense = min(med["dense_direct"], med["dense_transposed"])
    error = max(float(np.abs(prods.forward_sparse(W) - Phi @ W).max() / max(np.abs(Phi @ W).max(), 1e-300))
                for W in Ws.values())
    row = dict(L=L, M=M, K=K, dense_ms=1e3 * dense,
               sparse_ms={str(d): 1e3 * med[f"sparse_{d}"] for d in densities},
               actual_density={str(d): float(np.count_nonzero(W) / W.size) for d, W in Ws.items()},
               max_rel_difference=error,
               tuned_max_density=prods.sparse_max_nnz / (M * K),
               adjoint_dense_ms=1e3 * min(med["adjoint_direct"], med["adjoint_transposed"]))
    if "sparse_adjoint" in prods.timings:
        row.update(
            sparse_adjoint_ms={str(d): 1e3 * med[f"sparse_adjoint_{d}"] for d in densities},
            adjoint_actual_density={str(d): float(np.count_nonzero(G) / G.size) for d, G in Gs.items()},
            adjoint_max_rel_difference=max(
                float(np.abs(prods.adjoint_sparse(G, out) - Phi.T @ G).max()
                      / max(np.abs(Phi.T @ G).max(), 1e-300)) for G in Gs.values()),
            tuned_adjoint_max_density=prods.sparse_adjoint_max_nnz / (L * K))
    return row


def bench_csr(name, Phi, K, row_densities, repeats, min_ms, seed=0):
    """scipy's CSR products against the operator's compiled ones, for a CSR ``Phi`` (L, M)."""
    rng = np.random.default_rng(seed)
    L, M = Phi.shape
    prods = h.MulticlassOperator(Phi, np.arange(L) % K, K).prepare().products
    if not prods.compiled:
        return None  # no numba, or too few weights for the compiled kernels
    Xs = {}
    for d in row_densities:
        X = rng.standard_normal((M + 1, K)) * (rng.random((M + 1, 1)) < d)
        X[-1] = rng.standard_normal(K)
        Xs[d] = X
    G = rng.standard_normal((L, K))

    # each product asked for explicitly (a new array per call, as the operator's products)
    calls = {"adjoint_scipy": lambda: prods.adjoint(G, False),
             "adjoint_compiled": lambda: prods.adjoint(G, True)}
    for d, X in Xs.items():
        calls[f"forward_scipy_{d}"] = lambda X=X: prods.forward(X, False)
        calls[f"forward_compiled_{d}"] = lambda X=X: prods.forward(X, True)
    times = {n: [] for n in calls}
    for _ in range(repeats):
        for n, fn in calls.items():
            times[n].append(per_call(fn, min_ms))
    med = {n: 1e3 * float(np.median(t)) for n, t in times.items()}
    bitwise = np.array_equal(prods.adjoint(G, False), prods.adjoint(G, True)) and all(
        np.array_equal(prods.forward(X, False), prods.forward(X, True)) for X in Xs.values())
    return dict(name=name, L=L, M=M, K=K, nnz=int(Phi.nnz),
                forward_ms={str(d): [med[f"forward_scipy_{d}"], med[f"forward_compiled_{d}"]]
                            for d in row_densities},
                adjoint_ms=[med["adjoint_scipy"], med["adjoint_compiled"]], bitwise=bool(bitwise),
                chosen=dict(prods.use))


def csr_problems(args):
    """``(name, Phi, K)`` for ``--news20`` and ``--csr-shapes``."""
    for per_class in args.news20 or []:
        Phi, _ = h.news20_tfidf(args.data, per_class)
        used = np.unique(Phi.indices)  # as SparseSVC: the features no document uses left out
        yield f"News20, {per_class} per class", Phi[:, used].tocsr(), 20
    for text in args.csr_shapes or []:
        L, M, K = parse_shape(text)
        yield f"random CSR {text}", sp.random(L, M, density=0.006, format="csr",
                                             random_state=0), K


def print_header(columns, blank_line=True):
    """A markdown table's header row and separator (after a blank line)."""
    print(("\n" if blank_line else "") + "| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=SHAPES, help="LxMxK shapes (none: skip the dense tables)")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of each product")
    ap.add_argument("--min-ms", type=float, default=50.0,
                    help="milliseconds of CPU per timed run (calls are repeated to fill it)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    ap.add_argument("--densities", type=float, nargs="*", default=[0.1, 0.25, 0.5],
                    help="densities of the sparse forward product's weights (none: skip it)")
    ap.add_argument("--news20", type=int, nargs="*", default=[],
                    help="sparse table on E3's News20 features, documents per class (e.g. 5 10 50)")
    ap.add_argument("--csr-shapes", nargs="*", default=[],
                    help="sparse table on random CSR features of these LxMxK shapes")
    ap.add_argument("--row-densities", type=float, nargs="+", default=[1.0, 0.1, 0.01],
                    help="fractions of non-zero rows of X in the sparse table's forward product")
    h.add_data_argument(ap)
    h.add_output_argument(ap)
    args = ap.parse_args(argv)
    h.limit_blas(args.threads)
    rows = []
    if args.shapes:
        print_header(["L", "M", "K", "forward: direct / transposed (ms)", "speedup",
                      "adjoint: direct / transposed (ms)", "speedup", "bitwise"], blank_line=False)
    for text in args.shapes:
        row = bench_shape(*parse_shape(text), args.repeats, args.min_ms)
        rows.append(row)
        print(f"| {row['L']} | {row['M']} | {row['K']} | {row['forward_ms']:.3f} / "
              f"{row['forward_t_ms']:.3f} | {row['forward_speedup']:.2f} | {row['adjoint_ms']:.3f}"
              f" / {row['adjoint_t_ms']:.3f} | {row['adjoint_speedup']:.2f} | "
              f"{'yes' if row['forward_bitwise'] and row['adjoint_bitwise'] else 'no'} |",
              flush=True)
    sparse_rows = []
    if args.densities and args.shapes:
        dens = args.densities
        print_header(["L", "M", "K", "product", "dense, faster orientation (ms)"]
                     + [f"sparse at {d:g} (ms)" for d in dens]
                     + ["max rel. difference", "tuned: sparse below density"])
        for text in args.shapes:
            row = bench_sparse(*parse_shape(text), dens, args.repeats, args.min_ms)
            if row is None:
                print(f"| {text} | sparse product not set up (numba missing, or Phi outside "
                      "the sizes DenseProducts.tune_sparse times) |")
                continue
            sparse_rows.append(row)
            for product, key, dense, diff, tuned in (
                    ("Phi @ W", "sparse_ms", "dense_ms", "max_rel_difference", "tuned_max_density"),
                    ("Phi^T G", "sparse_adjoint_ms", "adjoint_dense_ms", "adjoint_max_rel_difference",
                     "tuned_adjoint_max_density")):
                if key not in row:
                    continue
                cells = " | ".join(f"{row[key][str(d)]:.3f} ({row[dense] / row[key][str(d)]:.2f}x)"
                                   for d in dens)
                print(f"| {row['L']} | {row['M']} | {row['K']} | {product} | {row[dense]:.3f} | {cells} | "
                      f"{row[diff]:.1e} | {row[tuned]:.2f} |", flush=True)
    csr_rows = []
    if args.news20 or args.csr_shapes:
        rd = args.row_densities
        print_header(["sparse Phi", "L x M x K (nnz)"]
                     + [f"[Phi 1] @ X, rows {d:g}: scipy / compiled (ms)" for d in rd]
                     + ["[Phi^T; 1^T] @ G: scipy / compiled (ms)", "bitwise",
                        "prepare() took the compiled"])
        for name, Phi, K in csr_problems(args):
            row = bench_csr(name, Phi, K, rd, args.repeats, args.min_ms)
            if row is None:
                print(f"| {name} | compiled products not set up (numba missing, or too few "
                      "weights) |")
                continue
            csr_rows.append(row)
            cells = " | ".join("{:.3f} / {:.3f} ({:.2f}x)".format(
                *row["forward_ms"][str(d)], row["forward_ms"][str(d)][0] / row["forward_ms"][str(d)][1])
                for d in rd)
            a = row["adjoint_ms"]
            print(f"| {name} | {row['L']} x {row['M']} x {row['K']} ({row['nnz']}) | {cells} | "
                  f"{a[0]:.3f} / {a[1]:.3f} ({a[0] / a[1]:.2f}x) | "
                  f"{'yes' if row['bitwise'] else 'no'} | "
                  f"{', '.join(n for n, v in row['chosen'].items() if v) or 'neither'} |", flush=True)
    record = {"rows": rows, "sparse_rows": sparse_rows, "csr_rows": csr_rows}
    if args.json:
        h.write_results(args.json, record, args)
    else:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
