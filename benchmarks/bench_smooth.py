"""Certified smooth-baseline solver (solvers.accelerated.smooth) against anchors, same problems.

Question: does ``solver="accelerated"`` for square, logit and ova reach its certified gap
faster than the paper's algorithm and an interior-point anchor, at the same optimum?
Answered by ``python benchmarks/bench_smooth.py --paper-iter 20000``.

Times ``SparseSVC(method, solver="accelerated", tol=TOL)`` (certified relative duality gap)
against CVXPY + Clarabel (the generic anchor: it solves the same problem, offsets mu = 1
inside the losses included; scikit-learn's multinomial logistic regression has no offset,
so it does not solve the paper's logit problem), and against the paper's algorithm
(FISTA / forward-backward) stopped on the same certified gap with an iteration cap.

Problems: leukemia's raw values (L = 38, M = 7129, K = 3; from the offline mirror); MNIST
L = 100 scattering features (``mnist-real``: 10 seeded images of each class from the
mirror through the workflow's scattering transform, M = 81 x 49, l1,inf with groups of 81,
at each method's best alpha at L = 100 in E2's record; ``--mnist-L`` for other sizes, same
alphas); News20 (``news20``: the workflow's TF-IDF features of E3's first class-balanced
subset of ``--news20-L`` documents, M = 26214, K = 20, l1,2 across classes, square and logit
at E3's best alphas at that size); and a same-shape stand-in for MNIST (``mnist``:
:func:`_harness.gamma_scattering_like`, no mirror needed). One BLAS thread (:mod:`_harness`).

Usage::

    python benchmarks/bench_smooth.py --mirror ../shared/data [--json out.json]
    python benchmarks/bench_smooth.py --problems mnist --methods square --no-anchor   # quick
    python benchmarks/bench_smooth.py --mirror ../shared/data --tol 1e-6 --cd-only   # issue 13
    python benchmarks/bench_smooth.py --mirror ../shared/data --problems mnist-real
    python benchmarks/bench_smooth.py --mirror ../shared/data --problems mnist-real \
        --mnist-L 1000 --max-time 300 --no-anchor --cd-only --no-terms   # L K > 5000
    python benchmarks/bench_smooth.py --mirror ../shared/data --problems leukemia \
        --penalties l1,l1inf --no-anchor --terms-from 0 --no-terms   # term generation's size rule
    python benchmarks/bench_smooth.py --mirror ../shared/data --problems mnist-real \
        --mnist-L 1000 --methods square,ova --no-anchor --terms-margin 0.3   # its constants:
        # also --terms-kkt qdldl, --terms-max-gap inf, --terms-max-scores N
    python benchmarks/bench_smooth.py --mirror ../shared/data --problems news20 --no-anchor
    python benchmarks/bench_smooth.py --mirror ../shared/data --problems news20 --news20-L 200 \
        --methods logit --no-anchor --logit-fista 0   # logit's engine choice: the full QPs
"""

import argparse
import csv
import time
from pathlib import Path
from unittest.mock import patch

import _harness as h  # one BLAS thread

#: leukemia's (penalty, groups, alphas): Table 1's best alphas of the smooth baselines in
#: E1's record at db7c2d1 (l1: 3e4 square and ova, 30 logit; l1inf: 3e4 square and ova,
#: 3e3 logit; l12: 1e4 square, 3e3 ova, 100 logit), and alpha = 1, the grids' nearly
#: hard-margin end
LEUKEMIA_CASES = (("l1", None, (1.0, 30.0, 3e4)), ("l1inf", 5, (1.0, 3e3, 3e4)),
                  ("l12", 5, (1.0, 100.0, 3e3, 1e4)), ("l2", None, (1e8,)))
#: the published best alphas: E2's (l1,inf/81; the smooth baselines' at L = 100 are the real
#: MNIST cases) and E3's (News20, l1,2 across classes)
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"
E2_BEST_ALPHA = RESULTS / "e2" / "e2_best_alpha.csv"
E3_BEST_ALPHA = RESULTS / "e3" / "e3_best_alpha.csv"

#: the solver constants a run may set: (option, type, module of
#: ``sparsesvm.solvers.accelerated``, constant, what it is)
CONSTANT_OPTIONS = (
    ("--terms-from", float, "smooth_qp", "TERMS_MIN_SCORES",
     "0: term generation on every square and ova l1 / l1,inf problem"),
    ("--terms-margin", float, "smooth_qp", "TERMS_MARGIN",
     "which hinge terms and groups term generation's first QP carries"),
    ("--terms-kkt", str, "smooth_qp", "TERMS_KKT",
     "Clarabel's KKT solver of term generation's QPs: qdldl, faer; default Clarabel's own"),
    ("--terms-max-scores", int, "smooth_qp", "TERMS_MAX_SCORES", "largest term generation QP"),
    ("--logit-fista", int, "smooth", "LOGIT_FISTA",
     "0: logit with l1, l1,2, l1,inf on the full QPs up to 5000 scores (the earlier choice)"),
    ("--terms-max-gap", float, "smooth", "TERMS_MAX_GAP",
     "the certified gap from which term generation is tried; inf: from the start"),
)


def best_alphas(L=100, path=E2_BEST_ALPHA, methods=("square", "logit", "ova")):
    """{method: alpha} of the smooth baselines at training size ``L`` in a record's best
    alphas (E2's by default)."""
    with open(path, newline="") as f:
        best = {r["method"]: float(r["alpha"]) for r in csv.DictReader(f) if int(r["L"]) == L}
    return {m: best[m] for m in methods}


def run(name, Phi, y, method, penalty, groups, alpha, tol, anchor, paper_iter, cd_only,
        max_time=None, no_terms=False):
    """One problem: the accelerated fit, then (optionally) coordinate descent alone, the
    fit without term generation, the paper's algorithm and the anchor. With ``max_time``
    the accelerated fits call :func:`sparsesvm.solvers.accelerated.smooth.solve` (the
    estimator's engine) with that wall-clock cap."""
    from types import SimpleNamespace

    from sparsesvm.solvers.accelerated import smooth, smooth_qp

    SparseSVC = h.SparseSVC   # imported here, not in the first fit's clock (scikit-learn)

    def fit(Phi, y):   # a new estimator per call: the rows below read each fit's own
        if max_time is not None:
            K = int(y.max()) + 1
            geo = h.make_penalty(penalty, groups, Phi.shape[1], K)
            r = smooth.solve(method, Phi, y, K, geo, 1.0 / alpha, tol=tol, max_time=max_time)
            return SimpleNamespace(rel_gap_=r.rel_gap, objective_=r.objective)
        return SparseSVC(method=method, penalty=penalty, groups=groups, alpha=alpha, tol=tol,
                         solver="accelerated").fit(Phi, y)

    ours, t_ours = h.timed(fit, Phi, y)
    row = dict(problem=name, method=method, penalty=f"{penalty}/{groups}" if groups else penalty,
               alpha=alpha, ours_s=t_ours, ours_gap=ours.rel_gap_, ours_obj=ours.objective_)
    if cd_only:   # the same solver without its working-set QPs (as without clarabel) and
        # without FISTA (the large problems', logit's): coordinate descent alone
        with patch.object(smooth_qp, "clarabel", None), \
                patch.object(smooth, "FISTA_MIN_SCORES", float("inf")), \
                patch.object(smooth, "LOGIT_FISTA", False):
            cd, t_cd = h.timed(fit, Phi, y)
        row.update(cd_s=t_cd, cd_gap=cd.rel_gap_)
    if no_terms and method in ("square", "ova"):   # the full QPs up to 5000 scores, FISTA above
        with patch.object(smooth_qp, "TERMS_MIN_SCORES", float("inf")):
            ft, t_ft = h.timed(fit, Phi, y)
        row.update(noterms_s=t_ft, noterms_gap=ft.rel_gap_)
    if paper_iter:
        pap, t_pap = h.timed(h.SparseSVC(method=method, penalty=penalty, groups=groups,
                                         alpha=alpha, tol=tol, stopping="gap",
                                         max_iter=paper_iter).fit, Phi, y)
        row.update(paper_s=t_pap, paper_gap=pap.rel_gap_, paper_iter=pap.n_iter_)
    if anchor:
        t = time.perf_counter()
        try:
            obj = h.cvx_optimum(method, Phi, y, int(y.max()) + 1, penalty, groups, alpha)
            row.update(cvx_s=time.perf_counter() - t, cvx_rel_diff=(ours.objective_ - obj) / obj)
        except Exception as e:  # noqa: BLE001 - report the anchor's failure
            row.update(cvx_s=time.perf_counter() - t, cvx_rel_diff=f"failed: {type(e).__name__}")
    return row


def cases(args):
    """(problem name, Phi, y, penalty, groups, alpha, methods) of the selected problems
    (``methods``: None for every selected method)."""
    out = []
    problems, penalties = args.problems.split(","), args.penalties.split(",")
    if "leukemia" in problems:
        Phi, y, _, _ = h.leukemia(args.mirror)
        for pen, g, alphas in LEUKEMIA_CASES:
            if pen in penalties:
                out += [("leukemia", Phi, y, pen, g, al, None) for al in alphas]
    if "mnist-real" in problems:
        Phi, y, _, _, _ = h.mnist_scattering(args.mirror, args.mnist_L)
        out += [(f"MNIST L={args.mnist_L}", Phi, y, "l1inf", 81, al, (m,))
                for m, al in best_alphas().items()]
    if "news20" in problems:   # E3: square and logit (one-vs-all has no across-class groups)
        Phi, y = h.news20_tfidf(args.mirror, args.news20_L // 20)
        out += [(f"News20 L={args.news20_L}", Phi, y, "l12", "features", al, (m,))
                for m, al in best_alphas(args.news20_L, E3_BEST_ALPHA, ("square", "logit")).items()]
    if "mnist" in problems:
        Phi, y = h.gamma_scattering_like()
        out += [("mnist-like L=100", Phi, y, "l1inf", 81, al, None) for al in (0.1, 1.0)]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_data_argument(ap, "--mirror")
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--methods", default="square,logit,ova")
    ap.add_argument("--problems", default="leukemia,mnist")
    ap.add_argument("--penalties", default="l1,l1inf,l2",
                    help="leukemia penalties to run (also: l12)")
    ap.add_argument("--no-anchor", action="store_true")
    ap.add_argument("--cd-only", action="store_true",
                    help="also time the accelerated solver without its working-set QPs "
                         "and its FISTA path (coordinate descent alone)")
    ap.add_argument("--no-terms", action="store_true",
                    help="also time square and ova without term generation (the full QPs up to "
                         "5000 scores L K, FISTA alone above)")
    for flag, kind, module, constant, what in CONSTANT_OPTIONS:
        ap.add_argument(flag, type=kind, default=None,
                        help=f"{module}.{constant} for the accelerated fits ({what})")
    ap.add_argument("--mnist-L", type=int, default=100,
                    help="training images of mnist-real (class-balanced, seeded; the alphas stay "
                         "E2's best at L = 100)")
    ap.add_argument("--news20-L", type=int, default=1000, choices=(100, 200, 1000),
                    help="training documents of news20 (E3's first class-balanced subset of "
                         "that size, at E3's best alphas there)")
    ap.add_argument("--max-time", type=float, default=None,
                    help="wall-clock cap (s) of each accelerated fit (then run through "
                         "smooth.solve, the estimator's engine)")
    ap.add_argument("--paper-iter", type=int, default=0,
                    help="also run the paper's algorithm with stopping='gap' up to this many "
                         "iterations")
    h.add_output_argument(ap)
    a = ap.parse_args(argv)
    from sparsesvm.solvers.accelerated import smooth, smooth_qp

    modules = {"smooth": smooth, "smooth_qp": smooth_qp}
    for flag, _, module, constant, _ in CONSTANT_OPTIONS:
        value = getattr(a, flag[2:].replace("-", "_"))
        if value is not None:
            setattr(modules[module], constant, value)
    print("| problem | method | penalty | alpha | ours s | ours gap | CD alone s | CD alone gap "
          "| no term generation s | its gap | paper s | paper gap (iters) | CVXPY s "
          "| (ours - CVXPY)/CVXPY |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name, Phi, y, pen, g, al, only in cases(a):
        for m in a.methods.split(","):
            if only is not None and m not in only:
                continue
            r = run(name, Phi, y, m, pen, g, al, a.tol, not a.no_anchor, a.paper_iter, a.cd_only,
                    a.max_time, a.no_terms)
            rows.append(r)
            cd = f"{r['cd_s']:.2f} | {r['cd_gap']:.1e}" if "cd_s" in r else "- | -"
            nt = f"{r['noterms_s']:.2f} | {r['noterms_gap']:.1e}" if "noterms_s" in r else "- | -"
            paper = (f"{r['paper_s']:.2f} | {r['paper_gap']:.1e} ({r['paper_iter']})"
                     if "paper_s" in r else "- | -")
            cvx = (f"{r['cvx_s']:.2f} | {r['cvx_rel_diff']:.1e}"
                   if isinstance(r.get("cvx_rel_diff"), float)
                   else f"{r.get('cvx_s', float('nan')):.2f} | {r.get('cvx_rel_diff', '-')}")
            print(f"| {r['problem']} | {m} | {r['penalty']} | {al:g} | {r['ours_s']:.2f} | "
                  f"{r['ours_gap']:.1e} | {cd} | {nt} | {paper} | {cvx} |", flush=True)
    if a.json:
        h.write_results(a.json, {"rows": rows}, a)


if __name__ == "__main__":
    main()
