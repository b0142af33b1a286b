"""Tests of the paper-vs-reproduction comparison (sparsesvm.experiments.compare).

Verdict logic on constructed tidy tables whose answer is known by construction
(agrees, disagrees, inconclusive, not run), the pieces against direct numpy
computations, Table 1 cell by cell against the paper file, and the content of
the generated files.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sparsesvm.experiments import compare

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "workflow" / "resources" / "paper.yaml"
CLAIMS_MD = REPO.parent / "shared" / "paper" / "claims.md"

ALPHAS = [1e-3, 1e-2, 1e-1, 1.0, 10.0]


def curve(method, penalty, L, errors_pct, *, subsets=3, zeros=50.0, time=1.0, solver="paper",
          n_test=1000, n_classes=10, n_weights=1000, above=None, jitter=None, experiment="e2"):
    """Tidy rows of one curve: ``errors_pct`` per alpha (list) plus a per-subset offset ``jitter``."""
    rows = []
    jitter = np.zeros(subsets) if jitter is None else np.asarray(jitter, dtype=float)
    for a, e in zip(ALPHAS, errors_pct):
        for s in range(subsets):
            pct = float(e + jitter[s])
            rows.append({"dataset": "d", "experiment": experiment, "method": method, "solver": solver,
                         "stopping": "rel_change", "penalty": penalty, "groups": "81", "alpha": a, "L": L,
                         "subset": s, "test_error_pct": pct, "test_errors": pct * n_test / 100,
                         "n_test": n_test, "nnz": n_weights * (1 - zeros / 100), "zero_weights_pct": zeros,
                         "fit_time_s": time * (1 + 0.01 * s), "n_classes": n_classes, "n_weights": n_weights,
                         "n_weights_above_1e-5": n_weights if above is None else above})
    return rows


def frame(*curves):
    return pd.DataFrame([r for c in curves for r in c])


@pytest.fixture(scope="module")
def paper():
    return compare.load_paper(PAPER)


BASE = [12.0, 10.0, 11.0, 14.0, 30.0]


def claim(result, cid):
    return next(c for c in result if c["claim"] == cid)


# --------------------------------------------------------------------------- pieces


def test_paired_difference_matches_numpy():
    rng = np.random.default_rng(0)
    a = pd.Series(rng.normal(size=5), index=range(5))
    b = pd.Series(rng.normal(size=5), index=[4, 3, 2, 1, 0])
    d, s, n = compare.paired_difference(a, b)
    diffs = np.array([a[i] - b[i] for i in range(5)])
    assert n == 5 and d == pytest.approx(diffs.mean()) and s == pytest.approx(diffs.std(ddof=1))
    # unpaired: combined sd; one value each: no spread
    d, s, n = compare.paired_difference(pd.Series([1.0, 3.0], index=[0, 1]), pd.Series([0.0, 4.0], index=[2, 3]))
    assert d == pytest.approx(0.0) and s == pytest.approx(math.sqrt(2.0 + 8.0))
    assert compare.paired_difference(pd.Series([2.0]), pd.Series([5.0]))[:2] == (-3.0, 0.0)
    # error counts: at least the counting noise sqrt((mean a + mean b) / n)
    d, s, n = compare.paired_difference(pd.Series([2.0]), pd.Series([0.0]), counts=True)
    assert (d, n) == (2.0, 1) and s == pytest.approx(np.sqrt(2.0))
    assert compare.better_outcome(d, s) == "worse"  # 2 errors against 0: beyond sqrt(2)
    d, s, _ = compare.paired_difference(pd.Series([1.0]), pd.Series([0.0]), counts=True)
    assert compare.better_outcome(d, s) == "tie"  # one error in 34: counting noise
    a, b = pd.Series([10.0, 12.0, 11.0]), pd.Series([1.0, 9.0, 2.0])
    assert compare.paired_difference(a, b, counts=True)[1] == pytest.approx(np.std(a - b, ddof=1))


def test_outcomes_and_majority():
    assert compare.better_outcome(-1.0, 0.5) == "better"
    assert compare.better_outcome(1.0, 0.5) == "worse"
    assert compare.better_outcome(-0.4, 0.5) == "tie"
    assert compare.better_outcome(1.0, 0.5, lower_is_better=False) == "better"
    assert compare.equal_outcome(0.5, 10.0, 1.0) == "equal"
    assert compare.equal_outcome(3.0, 1.0, 1.0) == "different"
    assert compare.equal_outcome(3.0, 2.5, 1.0) == "undetermined"
    assert compare.majority_verdict(["better", "tie", "worse", "better"]) == "agrees"
    assert compare.majority_verdict(["worse", "tie"]) == "disagrees"
    assert compare.majority_verdict(["tie", "undetermined"]) == "inconclusive"
    assert compare.majority_verdict(["better", "worse"]) == "inconclusive"
    assert compare.majority_verdict(["not run"]) == "not run"


def test_alpha_range_width_brute_force():
    rng = np.random.default_rng(1)
    alphas = np.logspace(-3, 1, 9)
    for _ in range(200):
        err = rng.integers(0, 6, size=alphas.size).astype(float)
        width, edge = compare.alpha_range_width(alphas[::-1], err[::-1], 1.0)  # order does not matter
        ok = err <= err.min() + 1.0
        best_w, best_edge = -1.0, False
        for i in range(alphas.size):       # every contiguous run inside `ok` holding a minimum
            for j in range(i, alphas.size):
                if ok[i:j + 1].all() and (err[i:j + 1] == err.min()).any():
                    w = math.log10(alphas[j] / alphas[i])
                    if w > best_w + 1e-12:
                        best_w, best_edge = w, (i == 0 or j == alphas.size - 1)
        assert width == pytest.approx(best_w) and edge == best_edge


def test_primary_curves_keeps_the_papers_algorithm():
    df = frame(curve("hinge-reg", "l1inf", 30, BASE), curve("hinge-reg", "l1inf", 30, BASE, solver="accelerated"),
               curve("hinge-con", "l1inf", 30, BASE, solver="accelerated"))
    prim = compare.primary_curves(df)
    assert set(zip(prim["method"], prim["solver"])) == {("hinge-reg", "paper"), ("hinge-con", "accelerated")}


# --------------------------------------------------------------------------- verdicts on constructed tables


def test_accuracy_claims_agree_disagree_inconclusive(paper):
    others = [curve(m, "l1inf", L, BASE, jitter=[0.0, 0.3, -0.3]) for m in ("square", "logit", "ova")
              for L in (30, 50)]
    # hinge 2 points better at every L, on every subset: agrees
    good = frame(*others, *[curve(m, "l1inf", L, [b - 2 for b in BASE], jitter=[0.0, 0.3, -0.3])
                            for m in ("hinge-reg", "hinge-con") for L in (30, 50)])
    # hinge 2 points worse: disagrees
    bad = frame(*others, *[curve(m, "l1inf", L, [b + 2 for b in BASE], jitter=[0.0, 0.3, -0.3])
                           for m in ("hinge-reg", "hinge-con") for L in (30, 50)])
    # hinge 0.5 better on average, but the subsets disagree by +-3 points: inconclusive
    noisy = frame(*others, *[curve(m, "l1inf", L, [b - 0.5 for b in BASE], jitter=[3.0, -3.0, 0.0])
                             for m in ("hinge-reg", "hinge-con") for L in (30, 50)])
    for tables, want in ((good, "agrees"), (bad, "disagrees"), (noisy, "inconclusive")):
        res = compare.claims_comparison({"e2": tables}, paper)
        c4 = claim(res, "C4")
        assert c4["verdict"] == want, c4
        assert len(c4["details"]) == 2 * 3 * 2  # hinge forms x others x L
        # experiments absent from the tables: not run
        for cid in ("C1", "C2", "C6", "C7", "C8", "C9", "C10", "C11", "C12"):
            assert claim(res, cid)["verdict"] == "not run", cid
        # C3: E2 with l1,inf only cannot tell
        assert claim(res, "C3")["verdict"] == "not run"
    # C13 on E2 alone: hinge better than square and logit by the same margin at every L
    assert claim(compare.claims_comparison({"e2": good}, paper), "C13")["verdict"] == "agrees"
    assert claim(compare.claims_comparison({"e2": bad}, paper), "C13")["verdict"] == "disagrees"


def test_sparsity_and_robustness_claims(paper):
    flat = [11.0, 10.0, 10.5, 10.8, 30.0]    # within 1 point over 3 decades
    peaked = [20.0, 15.0, 10.0, 15.0, 30.0]  # within 1 point at one alpha only
    tables = frame(*[curve(m, "l12", L, flat, zeros=60.0, jitter=[0, 0.1, 0.2])
                     for m in ("hinge-reg", "hinge-con") for L in (100, 200)],
                   *[curve("square", "l12", L, peaked, zeros=61.0, jitter=[0, 0.1, 0.2]) for L in (100, 200)],
                   *[curve("logit", "l12", L, peaked, zeros=61.0, jitter=[0, 0.1, 0.2]) for L in (100, 200)])
    res = compare.claims_comparison({"e3": tables}, paper)
    assert claim(res, "C7")["verdict"] == "agrees"
    assert claim(res, "C8")["verdict"] == "agrees"       # 1 point apart < 2-point margin
    assert claim(res, "C6")["verdict"] == "inconclusive"  # the same best error (10%): nothing to tell
    sparse_diff = frame(*[curve(m, "l12", 100, flat, zeros=30.0) for m in ("hinge-reg", "hinge-con")],
                        curve("square", "l12", 100, flat, zeros=60.0))
    assert claim(compare.claims_comparison({"e3": sparse_diff}, paper), "C8")["verdict"] == "disagrees"


def test_timing_claims(paper):
    fast = frame(*[curve(m, "l1inf", 30, BASE, time=t)
                   for m, t in (("hinge-reg", 2.0), ("hinge-con", 1.0), ("hinge-lin", 20.0), ("logit", 10.0),
                                ("square", 1.5))])
    res = compare.claims_comparison({"e4": fast}, paper)
    assert claim(res, "C9")["verdict"] == "agrees"
    assert claim(res, "C10")["verdict"] == "agrees"
    slow = frame(*[curve(m, "l1inf", 30, BASE, time=t)
                   for m, t in (("hinge-reg", 1.0), ("hinge-con", 3.0), ("hinge-lin", 0.5), ("logit", 0.5),
                                ("square", 0.1))])
    res = compare.claims_comparison({"e4": slow}, paper)
    assert claim(res, "C9")["verdict"] == "disagrees"
    assert claim(res, "C10")["verdict"] == "disagrees"
    # C11: competitive at the smallest L, more than twice slower at the largest
    e5 = frame(*[curve(m, "l2", 30, BASE, time=1.0, experiment="e5") for m in ("hinge-reg", "hinge-con")],
               curve("liblinear-cs", "l2", 30, BASE, time=1.2, solver="liblinear", experiment="e5"),
               *[curve(m, "l2", 5000, BASE, time=100.0, experiment="e5") for m in ("hinge-reg", "hinge-con")],
               curve("liblinear-cs", "l2", 5000, BASE, time=5.0, solver="liblinear", experiment="e5"),
               *[curve(m, "l1inf", 5000, BASE, time=100.0, above=270, experiment="e5")
                 for m in ("hinge-reg", "hinge-con")])
    res = compare.claims_comparison({"e5": e5}, paper)
    assert claim(res, "C11")["verdict"] == "agrees"
    c12 = claim(res, "C12")
    assert c12["verdict"] == "agrees"                    # 27% above 1e-5 against 100%
    assert "99.7%" in c12["paper"] and "27.0%" in c12["paper"]
    assert "l2 100.0%, l1inf 27.0%" in c12["reproduction"]


def test_c14_combines_verdicts(paper):
    res = compare.claims_comparison({}, paper)
    assert all(c["verdict"] == "not run" for c in res)
    assert [c["claim"] for c in res] == [f"C{i}" for i in range(1, 15)]


# --------------------------------------------------------------------------- Table 1 and the files


def e1_table(errors):
    """E1 records: one job per regulariser x method x alpha, ``errors[(pen, method)]`` at alpha 1."""
    rows = []
    for pen in ("l2", "l1", "l12", "l1inf"):
        for method in ("hinge-reg", "hinge-con", "square", "logit", "ova"):
            solver = "accelerated" if method.startswith("hinge") else "paper"
            for alpha, extra in ((1.0, 0), (10.0, 2)):
                e = errors[(pen, method)] + extra
                nnz = [7129] * 3 if pen == "l2" else [10, 3, 8]
                rows.append({"dataset": "leukemia", "experiment": "e1", "method": method, "solver": solver,
                             "stopping": "gap", "penalty": pen, "groups": "none" if pen in ("l2", "l1") else "5",
                             "alpha": alpha, "L": 38, "subset": 0, "test_errors": e, "test_error_pct": e / 34 * 100,
                             "n_test": 34, "nnz": sum(nnz), "zero_weights_pct": 0.0,
                             **{f"nnz_class{k}": v for k, v in enumerate(nnz)}})
    return pd.DataFrame(rows)


def test_table1_every_cell_against_the_paper_file(paper):
    raw = yaml.safe_load(PAPER.read_text())
    errors = {(p, m): (i + j) % 3 for i, p in enumerate(("l2", "l1", "l12", "l1inf"))
              for j, m in enumerate(("hinge-reg", "hinge-con", "square", "logit", "ova"))}
    t1 = compare.table1_comparison(e1_table(errors), paper)
    cols = raw["table1"]["columns"]
    assert len(t1) == sum(len(cols[c]) for c in cols) * 4 == 20
    for reg, cells in raw["table1"]["cells"].items():
        for col, cell in cells.items():
            for method in cols[col]:
                row = t1[(t1["regulariser"] == reg) & (t1["paper_column"] == col)
                         & (t1["method"].str.startswith(method))]
                assert len(row) == 1, (reg, col, method)
                row = row.iloc[0]
                assert row["paper_errors"] == cell["errors"]
                assert row["errors"] == errors[(reg, method)]
                assert row["errors_diff"] == errors[(reg, method)] - cell["errors"]
                assert row["nnz_per_class"] == ("7129+7129+7129" if reg == "l2" else "10+3+8")
                assert row["alpha"] == 1.0
    # not run: every cell still there
    empty = compare.table1_comparison(None, paper)
    assert len(empty) == 20 and empty["errors"].isna().all()


def test_e1_claims_from_table1_numbers(paper):
    # sparse regularisers 5 errors better than l2 for every method, hinge 4 better than square:
    # beyond the counting noise of one test set of 34
    errors = {(p, m): (6 if p == "l2" else 1) + (4 if m == "square" else 0)
              for p in ("l2", "l1", "l12", "l1inf") for m in ("hinge-reg", "hinge-con", "square", "logit", "ova")}
    res = compare.claims_comparison({"e1": e1_table(errors)}, paper)
    assert claim(res, "C1")["verdict"] == "agrees"
    assert claim(res, "C2")["verdict"] == "agrees"
    assert claim(res, "C14")["verdict"] == "agrees"      # C2 agrees, the others not run
    flipped = {(p, m): 1 if m == "square" else 8 for p, m in errors}
    res = compare.claims_comparison({"e1": e1_table(flipped)}, paper)
    assert claim(res, "C2")["verdict"] == "disagrees"
    # one error in 34 either way, one training set: within the counting noise
    close = {(p, m): (2 if p == "l2" else 1) + (1 if m == "square" else 0) for p, m in errors}
    res = compare.claims_comparison({"e1": e1_table(close)}, paper)
    assert claim(res, "C1")["verdict"] == "inconclusive"
    assert claim(res, "C2")["verdict"] == "inconclusive"


def test_paper_file_matches_claims_md():
    """Table 1 of paper.yaml is the table of ../shared/paper/claims.md, cell by cell."""
    if not CLAIMS_MD.is_file():
        pytest.skip(f"{CLAIMS_MD} not found (the paper's material lives beside the repository)")
    raw = yaml.safe_load(PAPER.read_text())
    text = CLAIMS_MD.read_text()
    names = {"l2": "l2", "l1": "l1", "l1,2": "l12", "l1,inf": "l1inf"}
    seen = 0
    for line in text.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts and parts[0] in names and len(parts) == 5:
            for col, cell in zip(("hinge", "square", "logit", "one-vs-all"), parts[1:]):
                err, nnz = cell.split(", ")
                want = raw["table1"]["cells"][names[parts[0]]][col]
                assert int(err.split("/")[0]) == want["errors"] and int(err.split("/")[1]) == raw["table1"]["n_test"]
                assert [int(v) for v in nnz.split("+")] == want["nnz_per_class"]
                seen += 1
    assert seen == 16
    ids = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| C")]
    assert ids == list(raw["claims"])


def test_write_comparison_files(tmp_path, paper):
    errors = {(p, m): 1 for p in ("l2", "l1", "l12", "l1inf") for m in ("hinge-reg", "hinge-con", "square",
                                                                        "logit", "ova")}
    csv, md = tmp_path / "c.csv", tmp_path / "c.md"
    long = compare.write_comparison({"e1": e1_table(errors)}, PAPER, csv, md)
    back = pd.read_csv(csv, keep_default_na=False)
    assert len(back) == len(long)
    claims = back[back["section"] == "claim"]
    assert list(claims["item"]) == [f"C{i}" for i in range(1, 15)]
    assert set(claims["verdict"]) <= set(compare.VERDICTS)
    assert (back["section"] == "table1").sum() == 40
    text = md.read_text()
    for i in range(1, 15):
        assert f"| C{i} |" in text
    assert text.count("| l1inf |") == 5 and not list(tmp_path.glob(".*.tmp"))


def test_c3_with_other_regularisers(paper):
    """C3 is measurable when E2 runs other regularisers: l1,inf never worse -> agrees."""
    base = [curve(m, "l1inf", 30, BASE, jitter=[0, 0.1, 0.2]) for m in ("hinge-reg", "square")]
    worse_l1 = [curve(m, "l1", 30, [b + 3 for b in BASE], jitter=[0, 0.1, 0.2]) for m in ("hinge-reg", "square")]
    better_l1 = [curve(m, "l1", 30, [b - 3 for b in BASE], jitter=[0, 0.1, 0.2]) for m in ("hinge-reg", "square")]
    assert claim(compare.claims_comparison({"e2": frame(*base, *worse_l1)}, paper), "C3")["verdict"] == "agrees"
    assert claim(compare.claims_comparison({"e2": frame(*base, *better_l1)}, paper), "C3")["verdict"] == "disagrees"


def test_c13_needs_the_advantage_at_small_L(paper):
    """Hinge better everywhere, but by more at the largest L than at the smallest: inconclusive."""
    rows = []
    for L, gain in ((30, 0.5), (100, 3.0)):
        rows += [curve(m, "l1inf", L, [b - gain for b in BASE]) for m in ("hinge-reg", "hinge-con")]
        rows += [curve(m, "l1inf", L, BASE) for m in ("square", "logit")]
    c13 = claim(compare.claims_comparison({"e2": frame(*rows)}, paper), "C13")
    assert c13["verdict"] == "inconclusive"
    assert "L=30 +0.50, L=100 +3.00" in c13["reproduction"]
