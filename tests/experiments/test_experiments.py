"""Tests of sparsesvm.experiments: job runner, aggregation, Table 1 and Figures 1-4.

The aggregation, table and figure tests use synthetic job tables built here
with known answers (best alphas, counts); ``run_job`` runs end to end on a tiny
feature directory written with ``features.save_features`` and is checked
against quantities recomputed from the returned coefficients.
"""

import json
import os

import numpy as np
import pandas as pd
import pytest
from conftest import save_blob_features

from sparsesvm.experiments import accuracy, aggregate, figures, runner, tables

# --------------------------------------------------------------------------- synthetic records

N_TEST = 34
K = 3
M = 20


def _record(method, penalty, alpha, *, errors, nnz_per_class, L=38, subset=0, n_test=N_TEST,
            fit_time=1.0, solver="paper", groups=None, dataset="leukemia", experiment="E1",
            above=None, n_features=M):
    nnz = int(sum(nnz_per_class))
    n_weights = len(nnz_per_class) * n_features
    return {
        "dataset": dataset, "experiment": experiment, "method": method, "penalty": penalty,
        "groups": groups, "alpha": float(alpha), "L": L, "subset": subset,
        "n_features": n_features, "n_classes": len(nnz_per_class), "n_test": n_test,
        "test_errors": errors, "test_error_pct": 100.0 * errors / n_test,
        "nnz_per_class": list(nnz_per_class), "nnz": nnz, "n_weights": n_weights,
        "zero_weights_pct": 100.0 * (n_weights - nnz) / n_weights,
        "n_weights_above_1e-5": nnz if above is None else above,
        "fit_time_s": fit_time, "fit_wall_time_s": fit_time * 1.1, "n_iter": 100,
        "objective": 1.0, "constraint_violation": 0.0, "converged": True, "tol": 1e-5,
        "max_iter": 1000, "solver": solver, "stopping": "rel_change",
        "sparsesvm_version": "0", "source_hash": "x",
    }


ALPHAS = [0.01, 0.1, 1.0, 10.0]
# best alpha index of each (penalty, method) cell of the synthetic Table 1
E1_BEST = {
    ("l2", "hinge-reg"): 1, ("l2", "hinge-con"): 2, ("l2", "square"): 1, ("l2", "logit"): 2, ("l2", "ova"): 1,
    ("l1", "hinge-reg"): 2, ("l1", "hinge-con"): 1, ("l1", "square"): 2, ("l1", "logit"): 1, ("l1", "ova"): 2,
    ("l12", "hinge-reg"): 1, ("l12", "hinge-con"): 1, ("l12", "square"): 2, ("l12", "logit"): 2,
    ("l12", "ova"): 1,
    ("l1inf", "hinge-reg"): 2, ("l1inf", "hinge-con"): 2, ("l1inf", "square"): 1, ("l1inf", "logit"): 1,
    ("l1inf", "ova"): 2,
}
E1_METHODS = ["hinge-reg", "hinge-con", "square", "logit", "ova"]
E1_PENALTIES = ["l2", "l1", "l12", "l1inf"]


def _e1_records(n_test=N_TEST):
    recs = []
    for (pen, meth), b in E1_BEST.items():
        base = 1 + E1_PENALTIES.index(pen)  # errors at the best alpha
        for i, a in enumerate(ALPHAS):
            err = base + 3 * abs(i - b)
            # distinct per-class non-zeros; larger alpha -> sparser (l2 dense)
            nnz = [M, M, M] if pen == "l2" else [12 - 3 * i, 9 - 2 * i, 7 - i + E1_METHODS.index(meth)]
            recs.append(_record(meth, pen, a, errors=err, nnz_per_class=nnz, n_test=n_test,
                                groups=5 if pen in ("l12", "l1inf") else None))
    return recs


def _expected_cell(pen, meth, n_test=N_TEST):
    b = E1_BEST[(pen, meth)]
    nnz = [M, M, M] if pen == "l2" else [12 - 3 * b, 9 - 2 * b, 7 - b + E1_METHODS.index(meth)]
    return f"{1 + E1_PENALTIES.index(pen)}/{n_test} ({nnz[0]}+{nnz[1]}+{nnz[2]})"


# E2-like: several L, several subsets, known best alpha per (method, L)
E2_LS = [30, 50]
E2_METHODS = ["hinge-reg", "hinge-con", "square"]
E2_BEST = {("hinge-reg", 30): 1, ("hinge-con", 30): 2, ("square", 30): 1,
           ("hinge-reg", 50): 2, ("hinge-con", 50): 2, ("square", 50): 0}
E2_NOISE = [-1, 0, 1]  # per-subset error offsets: zero mean


def _e2_records(dataset="mnist", experiment="E2", penalty="l1inf", extra_solver=None):
    recs = []
    for (meth, L), b in E2_BEST.items():
        solvers = ["paper"] + ([extra_solver] if extra_solver and meth in ("hinge-reg", "hinge-con") else [])
        for solver in solvers:
            for i, a in enumerate(ALPHAS):
                for s, noise in enumerate(E2_NOISE):
                    err = 20 + 4 * abs(i - b) + noise
                    nnz = [max(0, 15 - 4 * i + s)] * 10
                    fit = (0.5 + i) * (1 + E2_METHODS.index(meth)) * (0.5 if solver != "paper" else 1.0)
                    recs.append(_record(meth, penalty, a, errors=err, nnz_per_class=nnz, L=L, subset=s,
                                        n_test=100, fit_time=fit * (1 + 0.1 * noise), solver=solver,
                                        dataset=dataset, experiment=experiment, n_features=40))
    return recs


# --------------------------------------------------------------------------- runner helpers

def test_to_jsonable_converts_numpy_and_nonfinite():
    obj = {"a": np.int64(3), "b": np.float32(0.5), "c": np.bool_(True), "d": np.arange(3),
           "e": (1, np.nan), "f": float("inf"), "g": None, "h": [np.float64(-np.inf)]}
    out = runner.to_jsonable(obj)
    assert out == {"a": 3, "b": 0.5, "c": True, "d": [0, 1, 2], "e": [1, None], "f": None, "g": None,
                   "h": [None]}
    assert type(out["a"]) is int and type(out["c"]) is bool and type(out["d"][0]) is int
    with pytest.raises(ValueError, match="set"):
        runner.to_jsonable({"x": {1, 2}})


def test_write_json_atomic_roundtrip_and_no_partial_file(tmp_path):
    path = tmp_path / "sub" / "r.json"
    runner.write_json_atomic(path, {"x": np.float64(1.5), "y": [1, 2]})
    assert json.loads(path.read_text()) == {"x": 1.5, "y": [1, 2]}
    # a failing write leaves the previous file untouched and no temporary behind
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        runner.write_json_atomic(path, {"x": object()})
    assert json.loads(path.read_text()) == {"x": 1.5, "y": [1, 2]}
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]


def test_count_weights_exact_zeros_and_threshold():
    coef = np.array([[0.0, 1e-6, 2.0, 0.0],
                     [3e-5, 0.0, 0.0, 0.0],
                     [-1.0, -2e-5, 0.0, 1e-9]])
    c = runner.count_weights(coef)
    assert c["nnz_per_class"] == [2, 1, 3]
    assert c["nnz"] == 6 and c["n_weights"] == 12
    assert c["zero_weights_pct"] == pytest.approx(50.0)
    assert c["n_weights_above_1e-5"] == 4
    assert c["n_weights_above_1e-5_per_class"] == [1, 1, 2]
    with pytest.raises(ValueError, match="2-D"):
        runner.count_weights(np.zeros(3))


# --------------------------------------------------------------------------- aggregate

def test_collect_flattens_lists_and_groups(tmp_path):
    recs = _e1_records()[:6]
    recs[0]["trace"] = {"time": [0.1, 0.2], "rel_dist": [1.0, 0.5]}
    paths = []
    for i, r in enumerate(recs):
        paths.append(runner.write_json_atomic(tmp_path / f"{i}.json", r))
    df = aggregate.collect(paths)
    assert len(df) == 6
    assert "trace" not in df.columns
    row = df[(df["method"] == recs[1]["method"]) & (df["alpha"] == recs[1]["alpha"])
             & (df["penalty"] == recs[1]["penalty"])].iloc[0]
    assert row["nnz_per_class"] == "+".join(map(str, recs[1]["nnz_per_class"]))
    assert [row[f"nnz_class{k}"] for k in range(3)] == recs[1]["nnz_per_class"]
    assert set(df["groups"]) <= {"none", "5"}
    assert df["alpha"].dtype == float and df["test_errors"].dtype.kind == "i"
    # sorted by parameters
    assert df[["method", "penalty", "alpha"]].equals(
        df[["method", "penalty", "alpha"]].sort_values(["method", "penalty", "alpha"]).reset_index(drop=True))
    with pytest.raises(ValueError, match="no result files"):
        aggregate.collect([])
    # records run by another experiment's jobs (shared runs) are the collected experiment's rows
    recs[2]["experiment"] = "e0"
    paths[2] = runner.write_json_atomic(tmp_path / "2.json", recs[2])
    shared = aggregate.collect(paths, experiment="E1")
    assert set(shared["experiment"]) == {"E1"}
    made = shared.set_index("result_path")["run_experiment"]
    assert made[str(paths[2])] == "e0" and set(made.drop(str(paths[2]))) == {"E1"}
    assert len(aggregate.best_alpha(shared)) == len(aggregate.best_alpha(df))


def test_collect_traces_long_table(tmp_path):
    r = _record("hinge-reg", "l1inf", 0.1, errors=1, nnz_per_class=[1, 2, 3], groups=81)
    r["trace"] = {"iteration": [1, 2, 3], "time": [0.1, 0.2, 0.3], "rel_dist": [1.0, 0.1, 0.01]}
    r2 = dict(r, method="ova")  # no trace
    r2.pop("trace")
    paths = [runner.write_json_atomic(tmp_path / "a.json", r), runner.write_json_atomic(tmp_path / "b.json", r2)]
    tr = aggregate.collect_traces(paths)
    assert len(tr) == 3
    assert list(tr["rel_dist"]) == [1.0, 0.1, 0.01]
    assert set(tr["method"]) == {"hinge-reg"} and set(tr["groups"]) == {"81"}
    empty = aggregate.traces_to_frame([r2])
    assert len(empty) == 0 and "time" in empty.columns


def test_best_alpha_picks_known_values():
    df = aggregate.records_to_frame(_e2_records())
    best = aggregate.best_alpha(df)
    assert len(best) == len(E2_BEST)
    for (meth, L), b in E2_BEST.items():
        row = best[(best["method"] == meth) & (best["L"] == L)].iloc[0]
        assert row["alpha"] == ALPHAS[b]
        assert row["test_errors"] == pytest.approx(20.0)  # mean over subsets at the best alpha
        assert row["n_subsets"] == 3 and row["n_alphas"] == len(ALPHAS)
        assert row["at_grid_edge"] == (b in (0, len(ALPHAS) - 1))
    assert (best["rule"] == aggregate.BEST_ALPHA_RULE).all()
    assert "trial-and-error" in aggregate.BEST_ALPHA_RULE


def test_best_alpha_ties_go_to_sparser_then_larger_alpha():
    recs = [
        # equal errors, sparser model at the smaller alpha -> sparser wins
        _record("hinge-reg", "l1", 0.1, errors=2, nnz_per_class=[1, 1, 1]),
        _record("hinge-reg", "l1", 1.0, errors=2, nnz_per_class=[2, 2, 2]),
        _record("hinge-reg", "l1", 10.0, errors=5, nnz_per_class=[0, 0, 0]),
        # equal errors and sparsity -> larger alpha
        _record("square", "l2", 0.1, errors=3, nnz_per_class=[M] * 3),
        _record("square", "l2", 1.0, errors=3, nnz_per_class=[M] * 3),
        _record("square", "l2", 0.01, errors=4, nnz_per_class=[M] * 3),
    ]
    best = aggregate.best_alpha(aggregate.records_to_frame(recs), by=["method"])
    assert best.set_index("method")["alpha"].to_dict() == {"hinge-reg": 0.1, "square": 1.0}
    with pytest.raises(ValueError, match="missing column"):
        aggregate.best_alpha(aggregate.records_to_frame(recs), by=["nope"])


def test_method_label():
    assert aggregate.method_label("hinge-reg", "paper") == "hinge-reg"
    assert aggregate.method_label("liblinear-cs", "liblinear") == "liblinear-cs"
    assert aggregate.method_label("hinge-con", "accelerated") == "hinge-con [accelerated]"


# --------------------------------------------------------------------------- Table 1

def test_table1_cells_exact():
    df = aggregate.records_to_frame(_e1_records())
    t = tables.table1(df)
    assert list(t.index) == E1_PENALTIES
    assert list(t.columns) == E1_METHODS
    for pen in E1_PENALTIES:
        for meth in E1_METHODS:
            assert t.loc[pen, meth] == _expected_cell(pen, meth), (pen, meth)


def test_table1_uses_n_test_from_data_and_marks_missing():
    recs = [r for r in _e1_records(n_test=30) if not (r["penalty"] == "l12" and r["method"] == "ova")]
    t = tables.table1(aggregate.records_to_frame(recs))
    assert t.loc["l1", "hinge-reg"] == _expected_cell("l1", "hinge-reg", n_test=30)
    assert t.loc["l12", "ova"] == tables.MISSING


def test_table1_means_over_subsets():
    recs = [_record("hinge-reg", "l1", 1.0, errors=e, nnz_per_class=n, subset=s)
            for s, (e, n) in enumerate([(1, [3, 4, 5]), (2, [4, 4, 6])])]
    t = tables.table1(aggregate.records_to_frame(recs))
    assert t.loc["l1", "hinge-reg"] == "1.5/34 (3.5+4+5.5)"


def test_table1_notes_cells_not_solved_to_their_stopping_rule(tmp_path):
    recs = _e1_records()
    b = E1_BEST[("l1", "logit")]
    for r in recs:
        r["rel_gap"] = 1e-7
        if (r["penalty"], r["method"], r["alpha"]) == ("l1", "logit", ALPHAS[b]):
            r.update(converged=False, rel_gap=2.8)
    df = aggregate.records_to_frame(recs)
    long = tables.table1_long(df).set_index(["regulariser", "method"])
    assert not long.loc[("l1", "logit"), "converged"] and long.loc[("l1", "logit"), "rel_gap"] == 2.8
    assert long["converged"].sum() == len(long) - 1
    paths = [tmp_path / f"table1.{ext}" for ext in ("csv", "md", "tex")]
    tables.write_table1(df, *paths)
    md = paths[1].read_text()
    assert "Not solved to the stopping rule" in md and "l1/logit (certified relative gap 2.8)" in md
    assert md.count("certified relative gap") == 1
    # every cell solved: no such note
    tables.write_table1(aggregate.records_to_frame(_e1_records()), *paths)
    assert "Not solved" not in paths[1].read_text()


def test_table1_rejects_mixed_datasets_and_n_test():
    recs = _e1_records()
    recs[0] = dict(recs[0], dataset="other")
    with pytest.raises(ValueError, match="several datasets"):
        tables.table1(aggregate.records_to_frame(recs))
    recs = _e1_records()
    recs = [dict(r, n_test=30) if r["method"] == "ova" else r for r in recs]
    with pytest.raises(ValueError, match="test-set size"):
        tables.table1(aggregate.records_to_frame(recs))


def test_write_table1_formats(tmp_path):
    df = aggregate.records_to_frame(_e1_records())
    paths = [tmp_path / "t" / f"table1.{ext}" for ext in ("csv", "md", "tex")]
    tables.write_table1(df, *paths)
    back = pd.read_csv(paths[0], index_col=0)
    assert back.loc["l1inf", "logit"] == _expected_cell("l1inf", "logit")
    md = paths[1].read_text().splitlines()
    header = next(line for line in md if line.startswith("| regulariser"))
    assert header == "| regulariser | " + " | ".join(E1_METHODS) + " |"
    row = next(line for line in md if line.startswith("| l12 "))
    assert row.split(" | ")[3] == _expected_cell("l12", "square")
    assert any("trial-and-error" in line for line in md)
    tex = paths[2].read_text()
    assert r"\toprule" in tex and r"\bottomrule" in tex
    assert "l1inf & " + " & ".join(_expected_cell("l1inf", m) for m in E1_METHODS) + r" \\" in tex


# --------------------------------------------------------------------------- figures

def _gids(ax, kind):
    arts = list(ax.lines) + list(ax.collections) + list(ax.patches)
    return sorted(a.get_gid() for a in arts if a.get_gid() and a.get_gid().startswith(kind + ":"))


def _circle_x(ax, curve):
    (col,) = [c for c in ax.collections if c.get_gid() == f"best:{curve}"]
    return float(col.get_offsets()[0][0])


def _check_files(png, pdf):
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000


@pytest.mark.parametrize("band", ["sd", "iqr"])
def test_accuracy_sparsity_figure_structure(band):
    df = aggregate.records_to_frame(_e2_records())
    fig = figures.make_accuracy_sparsity_figure(df, title="Figure 1", band=band)
    axes = [ax for ax in fig.axes if ax.get_xscale() == "log"]
    assert len(axes) == 2 * len(E2_LS) == len(fig.axes)
    for j, L in enumerate(E2_LS):
        top, bottom = axes[j], axes[len(E2_LS) + j]
        assert top.get_title().startswith(f"L = {L}")
        assert top.get_ylabel() == "test error (%)" and bottom.get_ylabel() == "zero weights (%)"
        assert "alpha" in bottom.get_xlabel()
        for ax in (top, bottom):
            assert len(ax.lines) == len(E2_METHODS)
            assert _gids(ax, "line") == sorted(f"line:{m}" for m in E2_METHODS)
            assert _gids(ax, "band") == sorted(f"band:{m}" for m in E2_METHODS)
            for m in E2_METHODS:
                assert _circle_x(ax, m) == ALPHAS[E2_BEST[(m, L)]]
        # mean line values: test error (%) of hinge-reg = mean over subsets
        (line,) = [ln for ln in top.lines if ln.get_gid() == "line:hinge-reg"]
        b = E2_BEST[("hinge-reg", L)]
        expected = [(20 + 4 * abs(i - b)) for i in range(len(ALPHAS))]  # % with n_test = 100
        assert np.allclose(line.get_ydata(), expected)
    legend_text = " ".join(t.get_text() for leg in fig.legends for t in leg.get_texts())
    assert figures.BANDS[band] in legend_text and "best" in legend_text
    assert all(m in legend_text for m in E2_METHODS)


def test_accuracy_sparsity_figure_bad_band():
    df = aggregate.records_to_frame(_e2_records())
    with pytest.raises(ValueError, match="band"):
        figures.make_accuracy_sparsity_figure(df, band="minmax")


# CV alpha of each (method, L) per subset (indices into ALPHAS; 3 subsets as E2_NOISE)
E2_CV = {("hinge-reg", 30): [0, 0, 0], ("hinge-con", 30): [1, 3, 1], ("square", 30): [2, 2, 2],
         ("hinge-reg", 50): [3, 1, 2], ("hinge-con", 50): [2, 2, 2], ("square", 50): [0, 0, 1]}


def _e2_cv_alpha():
    """A hand-made ``cv.cv_alpha`` table for the E2 records (2 folds)."""
    return pd.DataFrame([{"dataset": "mnist", "experiment": "E2", "method": m, "solver": "paper",
                          "stopping": "rel_change", "penalty": "l1inf", "groups": "none", "L": L, "subset": s,
                          "cv_alpha": ALPHAS[i], "cv_errors": 3, "n_val": 30, "n_folds": 2}
                         for (m, L), picks in E2_CV.items() for s, i in enumerate(picks)])


def _cv_marks(ax, curve):
    """(x, y) of the CV triangles of ``curve`` in ``ax`` and the texts of their subset counts."""
    (col,) = [c for c in ax.collections if c.get_gid() == f"cv:{curve}"]
    texts = sorted(t.get_text() for t in ax.texts if t.get_gid() == f"cvcount:{curve}")
    return [tuple(map(float, xy)) for xy in col.get_offsets()], texts


def test_accuracy_sparsity_figure_marks_the_cv_alphas():
    """Triangles at the distinct CV alphas of each curve and L on its mean test-error line, "n/N" when the
    subsets disagree; none on the zero-weights panels; the legend names the folds; no table, no mark."""
    df = aggregate.records_to_frame(_e2_records())
    fig = figures.make_accuracy_sparsity_figure(df, band="sd", cv_alpha=_e2_cv_alpha())
    n_L = len(E2_LS)
    for j, L in enumerate(E2_LS):
        top, bottom = fig.axes[j], fig.axes[n_L + j]
        assert _gids(top, "cv") == sorted(f"cv:{m}" for m in E2_METHODS)
        assert _gids(bottom, "cv") == [] and len(bottom.texts) == 0
        for m in E2_METHODS:
            picks = E2_CV[(m, L)]
            b = E2_BEST[(m, L)]
            marks, texts = _cv_marks(top, m)
            want = sorted(set(picks))
            # on the mean line: 20 + 4 |i - best| % (the subsets' noise has zero mean)
            assert marks == [(ALPHAS[i], 20.0 + 4 * abs(i - b)) for i in want]
            assert texts == ([] if len(want) == 1 else sorted(f"{picks.count(i)}/3" for i in want))
            assert _circle_x(top, m) == ALPHAS[b]  # the best-alpha circle is still there
    legend_text = " ".join(t.get_text() for leg in fig.legends for t in leg.get_texts())
    assert figures.CV_LEGEND.format(folds=2) in legend_text and figures.BEST_LEGEND in legend_text
    plain = figures.make_accuracy_sparsity_figure(df, band="sd")
    assert all(_gids(ax, "cv") == [] and len(ax.texts) == 0 for ax in plain.axes)
    assert "CV" not in " ".join(t.get_text() for leg in plain.legends for t in leg.get_texts())


def test_accuracy_sparsity_figure_rejects_a_cv_table_that_does_not_fit():
    df = aggregate.records_to_frame(_e2_records())
    cv_alpha = _e2_cv_alpha()
    with pytest.raises(ValueError, match=r"no CV alpha for \(curve, L\) \[\('square', 50\)\]"):
        figures.make_accuracy_sparsity_figure(df, cv_alpha=cv_alpha[~((cv_alpha["method"] == "square")
                                                                      & (cv_alpha["L"] == 50))])
    off_grid = cv_alpha.assign(cv_alpha=cv_alpha["cv_alpha"].where(cv_alpha["method"] != "square", 0.5))
    with pytest.raises(ValueError, match=r"CV alpha 0.5 of 'square' at L=30 is not on its grid"):
        figures.make_accuracy_sparsity_figure(df, cv_alpha=off_grid)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['n_folds'\]"):
        figures.make_accuracy_sparsity_figure(df, cv_alpha=cv_alpha.drop(columns="n_folds"))


def _traces(df, best, extra_alpha=True):
    rows = []
    for (meth, solver, L), _part in df.groupby(["method", "solver", "L"]):
        if meth == "square":
            continue  # a method without trace: no line
        curve = aggregate.method_label(meth, solver)
        a_best = best[(best["curve"] == curve) & (best["L"] == L)]["alpha"].iloc[0]
        alphas = [a_best] + ([a for a in ALPHAS if a != a_best][:1] if extra_alpha else [])
        for a in alphas:
            for s in (0, 1):
                t = np.linspace(0.01, 1.0, 6)
                d = np.concatenate([np.geomspace(1, 1e-4, 5), [0.0]])  # last point 0: not plottable on log
                rows.append(pd.DataFrame({"method": meth, "solver": solver, "penalty": "l1inf", "L": L,
                                          "subset": s, "alpha": a, "time": t, "rel_dist": d}))
    return pd.concat(rows, ignore_index=True)


def _e4_frame():
    return aggregate.add_labels(aggregate.records_to_frame(_e2_records(experiment="E4", extra_solver="accelerated")))


def test_timing_figure_structure_with_accelerated_lines():
    df = _e4_frame()
    curves = sorted(df["label"].unique())
    assert "hinge-reg [accelerated]" in curves and len(curves) == 5
    best = aggregate.best_alpha(df.rename(columns={"label": "curve"}), by=["curve", "L"])
    traces = _traces(df, best)
    fig = figures.make_timing_figure(df, traces, title="Figure 3")
    assert len(fig.axes) == 2 * len(E2_LS)
    for j, L in enumerate(E2_LS):
        top, bottom = fig.axes[j], fig.axes[len(E2_LS) + j]
        assert top.get_xscale() == top.get_yscale() == "log"
        assert top.get_ylabel() == "mean fit time (s)"
        assert _gids(top, "line") == sorted(f"line:{c}" for c in curves)
        for c in curves:
            meth = c.split(" ")[0]
            assert _circle_x(top, c) == ALPHAS[E2_BEST[(meth, L)]]
        (acc,) = [ln for ln in top.lines if ln.get_gid() == "line:hinge-reg [accelerated]"]
        (pap,) = [ln for ln in top.lines if ln.get_gid() == "line:hinge-reg"]
        assert acc.get_color() == pap.get_color() and acc.get_linestyle() != pap.get_linestyle()
        assert np.allclose(acc.get_ydata(), 0.5 * np.asarray(pap.get_ydata()))
        # traces: only the best alpha (2 subsets per traced curve), zero distance dropped
        traced = [c for c in curves if not c.startswith("square")]
        assert _gids(bottom, "trace") == sorted(f"trace:{c}:{s}" for c in traced for s in (0, 1))
        assert all(len(ln.get_xdata()) == 5 for ln in bottom.lines)
        assert bottom.get_xlabel() == "time (s)" and bottom.get_yscale() == "log"
    # without traces: the timing row only
    assert len(figures.make_timing_figure(df, None).axes) == len(E2_LS)


E5_LS = [30, 50, 100]


def _e5_frames():
    Ls = E5_LS
    best_idx = {"hinge-reg": 1, "hinge-con": 2, "liblinear-cs": 1}
    recs = []
    for L in Ls:
        for meth, b in best_idx.items():
            solver = "liblinear" if meth == "liblinear-cs" else "paper"
            for i, a in enumerate(ALPHAS):
                for s in range(2):
                    recs.append(_record(meth, "l2", a, errors=10 + 2 * abs(i - b), nnz_per_class=[40] * 10,
                                        L=L, subset=s, n_test=100, fit_time=0.1 * L * (i + 1), solver=solver,
                                        dataset="mnist", experiment="E5", n_features=40,
                                        above=390 - 10 * i - s))
    sparse = []
    for meth in ("hinge-reg", "hinge-con"):
        for i, a in enumerate(ALPHAS):
            sparse.append(_record(meth, "l1inf", a, errors=10 + abs(i - 2), nnz_per_class=[5] * 10, L=100,
                                  n_test=100, dataset="mnist", experiment="E5", n_features=40,
                                  above=50 - 10 * i))
    return aggregate.records_to_frame(recs), aggregate.records_to_frame(sparse)


def test_l2_timing_figure_structure():
    Ls = E5_LS
    best_idx = {"hinge-reg": 1, "hinge-con": 2, "liblinear-cs": 1}
    df, sdf = _e5_frames()
    fig = figures.make_l2_timing_figure(df, sparse_df=sdf, title="Figure 4")
    assert len(fig.axes) == len(Ls) + 1
    for j in range(len(Ls)):
        ax = fig.axes[j]
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert _gids(ax, "line") == sorted(f"line:{m}" for m in best_idx)
        for m, b in best_idx.items():
            assert _circle_x(ax, m) == ALPHAS[b]
    bar_ax = fig.axes[-1]
    bars = {p.get_gid(): p.get_height() for p in bar_ax.patches if p.get_gid()}
    # mean over the 2 subsets at the best alpha: 390 - 10*b - 0.5 ; l1inf best alpha index 2 -> 50 - 20
    assert bars == {"bar:hinge-reg:l2": 379.5, "bar:hinge-con:l2": 369.5, "bar:liblinear-cs:l2": 379.5,
                    "bar:hinge-reg:l1inf": 30.0, "bar:hinge-con:l1inf": 30.0}
    assert "L = 100" in bar_ax.get_title()


def test_timing_panels_leave_out_zero_fit_times():
    """hinge-con solved by X = 0 before any iteration (fit time 0) at its largest alpha: not drawn on
    the log axis, the other alphas are."""
    df, sdf = _e5_frames()
    zero = (df["method"] == "hinge-con") & np.isclose(df["alpha"], ALPHAS[-1])
    df.loc[zero, "fit_time_s"] = 0.0
    fig = figures.make_l2_timing_figure(df, sparse_df=sdf)
    for ax in fig.axes[:len(E5_LS)]:
        (line,) = [ln for ln in ax.lines if ln.get_gid() == "line:hinge-con"]
        assert list(line.get_xdata()) == list(ALPHAS[:-1]) and min(line.get_ydata()) > 0
        assert _circle_x(ax, "hinge-con") == ALPHAS[2]


def _accuracy_rows():
    """Equal-accuracy rows for E5_LS: hinge-con misses 1e-4 at the largest L, liblinear uncertified."""
    rows = []
    for L in E5_LS:
        for label, (method, solver) in accuracy.SOLVERS.items():
            for eps in (1e-3, 1e-4):
                miss = method == "hinge-con" and eps == 1e-4 and L == E5_LS[-1]
                sec = 0.01 * L * (2 if eps == 1e-4 else 1)
                rows.append(dict(L=L, label=label, method=method, solver=solver, alpha=1.0, eps=eps,
                                 reached=not miss, seconds=np.nan if miss else sec, gap=2 * eps if miss else eps / 2,
                                 certified=solver != "liblinear", n_iter=10, run_seconds=7.0 if miss else sec,
                                 cap_seconds=5.0))
    return pd.DataFrame(rows)


def test_l2_timing_figure_equal_accuracy_row():
    """With accuracy_df, a last row: one panel per eps (largest first), seconds vs L per solver,
    an open triangle where the gap was not reached, liblinear dotted (not certified)."""
    df, sdf = _e5_frames()
    fig = figures.make_l2_timing_figure(df, sparse_df=sdf, accuracy_df=_accuracy_rows())
    assert len(fig.axes) == len(E5_LS) + 1 + 2
    labels = ["hinge-reg", "hinge-con", "hinge-reg [accelerated]", "liblinear-cs", "ocas-cs"]
    for ax, eps in zip(fig.axes[-2:], (1e-3, 1e-4)):
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert f"gap {eps:g}" in ax.get_title() and "L" in ax.get_xlabel()
        lines = {ln.get_gid(): ln for ln in ax.lines}
        assert sorted(g for g in lines if g.startswith("eps:")) == sorted(f"eps:{eps:g}:{c}" for c in labels)
        assert lines[f"eps:{eps:g}:liblinear-cs"].get_linestyle() == ":"
        assert lines[f"eps:{eps:g}:hinge-reg"].get_linestyle() == lines[f"eps:{eps:g}:ocas-cs"].get_linestyle() == "-"
        reg = lines[f"eps:{eps:g}:hinge-reg"]
        assert list(reg.get_xdata()) == E5_LS
        assert np.allclose(reg.get_ydata(), [0.01 * L * (2 if eps == 1e-4 else 1) for L in E5_LS])
    # the miss: hinge-con at 1e-4 has no point at the largest L on its line, a triangle there
    last = {ln.get_gid(): ln for ln in fig.axes[-1].lines}
    assert list(last["eps:0.0001:hinge-con"].get_xdata()) == E5_LS[:-1]
    assert list(last["miss:0.0001:hinge-con"].get_xdata()) == [E5_LS[-1]]
    assert list(last["miss:0.0001:hinge-con"].get_ydata()) == [7.0]
    assert not any(g.startswith("miss:") for g in (ln.get_gid() for ln in fig.axes[-2].lines))
    # the same colour for a method in the two rows
    top = {ln.get_gid(): ln for ln in fig.axes[0].lines}
    assert top["line:hinge-con"].get_color() == last["eps:0.0001:hinge-con"].get_color()


def test_equal_accuracy_labels_follow_the_training_curves():
    """When the training curves' labels carry the stopping rule (the workflow's E5: paper rule and
    liblinear's), the equal-accuracy curves carry theirs: the paper's algorithms stopped on the
    gap are not labelled as their relative-change runs, and liblinear shares its label."""
    df, sdf = _e5_frames()
    df["stopping"] = np.where(df["solver"] == "liblinear", "liblinear", "rel_change")
    sdf["stopping"] = "rel_change"
    fig = figures.make_l2_timing_figure(df, sparse_df=sdf, accuracy_df=_accuracy_rows())
    gids = {ln.get_gid() for ln in fig.axes[-1].lines if (ln.get_gid() or "").startswith("eps:")}
    assert gids == {f"eps:0.0001:{c}" for c in ("hinge-reg / stopping=gap", "hinge-con / stopping=gap",
                                               "hinge-reg [accelerated] / stopping=gap",
                                               "liblinear-cs / stopping=liblinear", "ocas-cs / stopping=gap")}
    top = {ln.get_gid() for ln in fig.axes[0].lines}
    assert "line:liblinear-cs / stopping=liblinear" in top and "line:hinge-reg / stopping=rel_change" in top
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert legend.count("liblinear-cs / stopping=liblinear") == 1 and "hinge-reg / stopping=gap" in legend


@pytest.mark.slow
def test_figures_saved_as_png_and_pdf(tmp_path):
    """The public wrappers write valid PNG and PDF files (one L each, to keep rendering short)."""
    df2 = aggregate.records_to_frame(_e2_records())
    df2 = df2[df2["L"] == E2_LS[0]]
    paths = figures.accuracy_sparsity_figure(df2, tmp_path / "f1.png", tmp_path / "f1.pdf", title="F1", dpi=60)
    assert paths == (tmp_path / "f1.png", tmp_path / "f1.pdf")
    _check_files(*paths)
    df4 = _e4_frame()
    df4 = df4[df4["L"] == E2_LS[0]]
    best = aggregate.best_alpha(df4.rename(columns={"label": "curve"}), by=["curve", "L"])
    _check_files(*figures.timing_figure(df4, _traces(df4, best), tmp_path / "f3.png", tmp_path / "f3.pdf",
                                        dpi=60))
    df5, sdf5 = _e5_frames()
    df5 = df5[df5["L"] == E5_LS[-1]]
    _check_files(*figures.l2_timing_figure(df5, tmp_path / "f4.png", tmp_path / "f4.pdf", sparse_df=sdf5,
                                           dpi=60))


# --------------------------------------------------------------------------- run_job end to end

@pytest.fixture(scope="module")
def tiny_features(tmp_path_factory):
    return save_blob_features(tmp_path_factory.mktemp("features"), 0)


def _check_record(rec, coef_full, Xte, yte, n_train):
    json.dumps(rec, allow_nan=False)  # strict JSON
    for key in runner.RECORD_FIELDS:
        assert key in rec, key
    K_, Mp1 = coef_full.shape
    assert (K_, Mp1) == (3, Xte.shape[1] + 1)
    W, b = coef_full[:, :-1], coef_full[:, -1]
    errors = int(np.count_nonzero(np.argmax(Xte @ W.T + b, axis=1) != yte))
    assert rec["test_errors"] == errors
    assert rec["n_test"] == len(yte) and rec["test_error_pct"] == pytest.approx(100 * errors / len(yte))
    assert rec["nnz_per_class"] == [int(np.count_nonzero(w)) for w in W]
    assert rec["n_weights"] == W.size
    assert rec["zero_weights_pct"] == pytest.approx(100 * (W.size - np.count_nonzero(W)) / W.size)
    assert rec["n_weights_above_1e-5"] == int(np.count_nonzero(np.abs(W) > 1e-5))
    assert rec["L"] == n_train and rec["n_classes"] == 3 and rec["n_features"] == Xte.shape[1]
    assert 0 < rec["fit_time_s"] <= rec["fit_wall_time_s"] + 1e-9
    assert 0 < rec["fit_cpu_time_s"]


def test_run_job_subset_end_to_end(tiny_features, tmp_path):
    d, Xtr, ytr, Xte, yte = tiny_features
    subset = np.array([0, 2, 6, 8, 12, 14])  # 2 per class
    rec, coef_full = runner.run_job(d, subset, "hinge-reg", "l1", None, 1.0, 1e-4, 2000,
                                    dataset="blobs", experiment="T", subset=3, L=6, seed=7)
    _check_record(rec, coef_full, Xte, yte, n_train=6)
    assert (rec["method"], rec["penalty"], rec["groups"], rec["alpha"]) == ("hinge-reg", "l1", None, 1.0)
    assert (rec["dataset"], rec["experiment"], rec["subset"], rec["seed"]) == ("blobs", "T", 3, 7)
    assert rec["solver"] == "paper" and rec["stopping"] == "rel_change" and "trace" not in rec
    import sparsesvm

    assert rec["source_hash"] == sparsesvm.source_hash() and rec["sparsesvm_version"] == sparsesvm.__version__
    # written atomically and read back into a table
    path = runner.write_json_atomic(tmp_path / "r.json", rec)
    df = aggregate.collect([path])
    assert df.loc[0, "nnz_per_class"] == "+".join(map(str, rec["nnz_per_class"]))


@pytest.mark.parametrize("method, penalty, groups, stopping", [
    ("hinge-reg", "l1", None, "rel_change"),
    ("hinge-reg", "l1inf", 4, "gap"),
    ("hinge-con", "l12", "features", "rel_change"),
    ("square", "l1", None, "rel_change"),
])
def test_run_job_is_sparsesvc_fit_on_the_subset(tiny_features, method, penalty, groups, stopping):
    """The job's fit is SparseSVC's fit on the subset rows: same coefficients bit for bit, iterations,
    objective, gap, errors."""
    from sparsesvm import SparseSVC

    d, Xtr, ytr, Xte, yte = tiny_features
    subset = np.array([0, 1, 2, 6, 7, 8, 12, 13, 14])
    rec, coef_full = runner.run_job(d, subset, method, penalty, groups, 0.5, 1e-4, 300, stopping=stopping)
    est = SparseSVC(method=method, penalty=penalty, groups=groups, alpha=0.5, tol=1e-4, max_iter=300,
                    stopping=stopping).fit(Xtr[subset], ytr[subset])
    np.testing.assert_array_equal(coef_full[:, :-1], est.coef_)
    np.testing.assert_array_equal(coef_full[:, -1], est.intercept_)
    assert rec["n_iter"] == est.n_iter_ and rec["objective"] == est.objective_
    assert rec["converged"] == est.converged_ and rec["stopping"] == est.stopping_
    assert (rec["rel_gap"] is None) == np.isnan(est.rel_gap_)
    assert rec["test_errors"] == int(np.count_nonzero(est.predict(Xte) != yte))


@pytest.mark.parametrize("method, penalty, groups", [
    ("hinge-reg", "l1inf", 4), ("hinge-con", "l12", "features"), ("logit", "l1", None),
])
def test_run_grid_job_is_run_job_at_each_alpha(tiny_features, tmp_path, method, penalty, groups):
    """A grid job's records are run_job's at each alpha (the fits side by side: the same
    iterations and errors, weights and objective to the rounding of the shared products);
    the file of the records reads back as one row per alpha."""
    d, Xtr, ytr, Xte, yte = tiny_features
    subset = np.array([0, 1, 2, 6, 7, 8, 12, 13, 14])
    alphas = [0.05, 0.5, 5.0]
    recs = runner.run_grid_job(d, subset, method, penalty, groups, alphas, 1e-4, 400,
                               dataset="blobs", experiment="T", subset=2, L=9)
    assert [r["alpha"] for r in recs] == alphas
    for alpha, rec in zip(alphas, recs):
        one, coef_full = runner.run_job(d, subset, method, penalty, groups, alpha, 1e-4, 400,
                                        dataset="blobs", experiment="T", subset=2, L=9)
        for key in runner.RECORD_FIELDS:
            assert key in rec, key
        assert rec["side_by_side"] == 3 and "side_by_side" not in one
        assert abs(rec["n_iter"] - one["n_iter"]) <= 1 and rec["converged"] == one["converged"]
        for key in ("test_errors", "train_errors", "nnz", "nnz_per_class", "L", "n_test", "subset",
                    "dataset", "experiment", "method", "penalty", "groups", "solver", "stopping"):
            assert rec[key] == one[key], key
        assert rec["objective"] == pytest.approx(one["objective"], rel=1e-9, abs=1e-12)
        assert 0 <= rec["fit_time_s"] <= rec["fit_wall_time_s"] + 1e-9
        assert (rec["fit_time_s"] == 0) == (one["fit_time_s"] == 0)  # X = 0 solves it: no loop
    path = runner.write_json_atomic(tmp_path / "grid.json", recs)
    df = aggregate.collect([path], experiment="T")
    assert len(df) == 3 and sorted(df["alpha"]) == alphas and set(df["result_path"]) == {str(path)}


@pytest.mark.parametrize("method, penalty, groups, solver, L", [
    ("ova", "l1", None, "paper", 9), ("hinge-reg", "l1inf", 4, "accelerated", 9),
    ("liblinear-cs", "l2", None, "paper", 9), ("square", "l12", 2, "paper", None),
])
def test_run_grid_job_in_turn_is_run_job_at_each_alpha(tiny_features, method, penalty, groups, solver, L):
    """Alphas one after another (side_by_side=False): each record is run_job's at that alpha,
    field by field but the clocks, for any method and solver (here three that the side-by-side
    fits refuse) and for the whole training split (L = None)."""
    d = tiny_features[0]
    subset = None if L is None else np.array([0, 1, 2, 6, 7, 8, 12, 13, 14])
    alphas = [0.05, 0.5, 5.0]
    stopping = "gap" if solver == "accelerated" else "rel_change"
    meta = dict(dataset="blobs", experiment="T", subset=2, **({} if L is None else {"L": L}))
    recs = runner.run_grid_job(d, subset, method, penalty, groups, alphas, 1e-4, 400, solver=solver,
                               stopping=stopping, side_by_side=False, **meta)
    clocks = {"fit_time_s", "fit_wall_time_s", "fit_cpu_time_s"}
    assert [r["alpha"] for r in recs] == alphas
    for alpha, rec in zip(alphas, recs):
        one, _ = runner.run_job(d, subset, method, penalty, groups, alpha, 1e-4, 400, solver=solver,
                                stopping=stopping, **meta)
        assert set(rec) == set(one) and "side_by_side" not in rec
        assert {k: v for k, v in rec.items() if k not in clocks} == {k: v for k, v in one.items() if k not in clocks}
        assert 0 <= rec["fit_time_s"] <= rec["fit_wall_time_s"] + 1e-9


def test_run_grid_job_in_turn_checks_every_alpha_first(tiny_features, monkeypatch):
    """A bad alpha anywhere in the grid is refused before the features are read."""
    d = tiny_features[0]
    monkeypatch.setattr(runner, "_train_split", lambda *a, **k: pytest.fail("features read"))
    with pytest.raises(ValueError, match="alpha"):
        runner.run_grid_job(d, None, "ova", "l1", None, [0.1, 1.0, float("nan")], 1e-4, 10,
                            side_by_side=False)


def test_run_grid_job_in_turn_resumes_after_an_interruption(tmp_path, monkeypatch):
    """resume: the records done before an interruption are kept (rewritten after each fit) and
    taken by the next run of the same job, which fits only the other alphas; a file written
    for another job (settings, training rows, features or a garbled file) is ignored."""
    d = save_blob_features(tmp_path / "features", 0)[0]  # its own: the test edits the features
    subset = np.array([0, 1, 2, 6, 7, 8, 12, 13, 14])
    alphas = [0.05, 0.5, 5.0]
    args = (d, subset, "hinge-con", "l1inf", 4, alphas, 1e-4, 400)
    meta = dict(dataset="blobs", experiment="T", subset=2, L=9, side_by_side=False)
    clocks = ("fit_time_s", "fit_wall_time_s", "fit_cpu_time_s")
    fresh = runner.run_grid_job(*args, **meta)
    real, fits = runner._fit_and_evaluate, []

    def fit(*a, **k):
        fits.append(k["alpha"])
        if len(fits) == 3 and k.get("alpha") == alphas[2] and fail:
            raise KeyboardInterrupt  # the job killed during its third fit
        return real(*a, **k)

    monkeypatch.setattr(runner, "_fit_and_evaluate", fit)
    part = tmp_path / "grid.json.partial"
    fail = True
    with pytest.raises(KeyboardInterrupt):
        runner.run_grid_job(*args, resume=part, **meta)
    kept = json.loads(part.read_text())["records"]
    assert [r["alpha"] for r in kept] == alphas[:2]
    fail, fits[:] = False, []
    recs = runner.run_grid_job(*args, resume=part, **meta)
    assert fits == [alphas[2]] and recs[:2] == kept  # the first two as they were, clocks included
    for rec, one in zip(recs, fresh, strict=True):
        assert {k: v for k, v in rec.items() if k not in clocks} == {k: v for k, v in one.items() if k not in clocks}
    # the same file for another job: ignored, every alpha fitted (and the file rewritten)
    for change in (dict(args=(d, subset, "hinge-con", "l1inf", 4, alphas, 1e-3, 400)),
                   dict(args=(d, subset[:-1], "hinge-con", "l1inf", 4, alphas, 1e-4, 400), L=8),
                   dict(subset=3)):
        runner.write_json_atomic(part, {"key": json.loads(part.read_text())["key"], "records": kept})
        fits[:] = []
        runner.run_grid_job(*change.pop("args", args), resume=part, **{**meta, **change})
        assert fits == alphas, change
    features_meta = tmp_path / "features" / "meta.json"
    runner.run_grid_job(*args, resume=part, **meta)
    features_meta.write_text(features_meta.read_text() + " ")  # the features changed
    fits[:] = []
    runner.run_grid_job(*args, resume=part, **meta)
    assert fits == alphas
    part.write_text('{"key": "cut sho')
    fits[:] = []
    assert runner.run_grid_job(*args, resume=part, **meta) == runner.run_grid_job(*args, resume=part, **meta)
    assert fits == alphas  # the second call took all three from the file


def test_run_grid_job_refuses_what_it_cannot_fit_side_by_side(tiny_features):
    d = tiny_features[0]
    with pytest.raises(ValueError, match="alphas is empty"):
        runner.run_grid_job(d, None, "hinge-reg", "l1", None, [], 1e-4, 10)
    with pytest.raises(ValueError, match="alpha"):
        runner.run_grid_job(d, None, "hinge-reg", "l1", None, [0.1, -1.0], 1e-4, 10)
    with pytest.raises(ValueError, match="side by side take"):
        runner.run_grid_job(d, None, "ova", "l1", None, [0.1, 1.0], 1e-4, 10)
    with pytest.raises(ValueError, match="side by side take"):
        runner.run_grid_job(d, None, "hinge-reg", "l1", None, [0.1, 1.0], 1e-4, 10, stopping="gap")


def test_collect_refuses_a_file_of_other_json(tmp_path):
    bad = runner.write_json_atomic(tmp_path / "bad.json", [1, 2])
    with pytest.raises(ValueError, match="array of them"):
        aggregate.collect([bad])
    empty = runner.write_json_atomic(tmp_path / "empty.json", [])
    with pytest.raises(ValueError, match="expected a JSON object"):
        aggregate.collect([empty])


def test_run_job_trace_with_reference(tiny_features):
    d, Xtr, ytr, Xte, yte = tiny_features
    _, ref = runner.run_job(d, None, "hinge-con", "l1inf", 2, 0.5, 1e-4, 600)
    rec, coef_full = runner.run_job(d, None, "hinge-con", "l1inf", 2, 0.5, 1e-3, 200, trace=True,
                                    reference_coef=ref)
    _check_record(rec, coef_full, Xte, yte, n_train=len(ytr))
    tr = rec["trace"]
    assert {"iteration", "time", "rel_change", "objective", "rel_dist"} <= set(tr)
    assert len({len(v) for v in tr.values()}) == 1 and len(tr["time"]) >= 1
    # the last distance is the distance of the returned solution to the reference
    expected = np.linalg.norm(coef_full - ref) / np.linalg.norm(ref)
    assert tr["rel_dist"][-1] == pytest.approx(expected, rel=1e-6, abs=1e-12)
    # every n iterations: the same run, thinned
    rec3, _ = runner.run_job(d, None, "hinge-con", "l1inf", 2, 0.5, 1e-3, 200, trace=10, reference_coef=ref)
    it = np.asarray(rec3["trace"]["iteration"])
    assert len(it) < len(tr["iteration"]) and np.all(np.diff(it) > 0)
    assert rec3["n_iter"] == rec["n_iter"] and rec3["test_errors"] == rec["test_errors"]


def test_run_job_liblinear_peer(tiny_features):
    d, Xtr, ytr, Xte, yte = tiny_features
    rec, coef_full = runner.run_job(d, None, "liblinear-cs", "l2", None, 0.1, 1e-3, 1000)
    _check_record(rec, coef_full, Xte, yte, n_train=len(ytr))
    assert rec["solver"] == "liblinear" and rec["nnz"] == coef_full[:, :-1].size  # l2: dense
    with pytest.raises(ValueError, match="l2"):
        runner.run_job(d, None, "liblinear-cs", "l1", None, 0.1, 1e-3, 1000)


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "svm"}, "unknown method"),
    ({"penalty": "l3"}, "unknown penalty"),
    ({"alpha": 0.0}, "alpha"),
    ({"alpha": float("nan")}, "alpha"),
    ({"alpha": "big"}, "alpha"),
    ({"tol": -1.0}, "tol"),
    ({"max_iter": 0}, "max_iter"),
    ({"trace": -2}, "trace"),
    ({"trace": 0}, "trace"),
    ({"groups": 0}, "groups"),
    ({"groups": 4}, "takes groups=None"),
    ({"penalty": "l1inf"}, "needs groups"),
    ({"method": "ova", "penalty": "l12", "groups": "features"}, "across-class"),
    ({"solver": "magic"}, "unknown solver"),
    ({"stopping": "never"}, "stopping"),
    ({"precision": "half"}, "unknown precision"),
    ({"method": "ova", "precision": "single"}, "precision='single' is not available for method 'ova'"),
    ({"method": "liblinear-cs", "penalty": "l2", "precision": "single"},
     "precision='single' is not available for method 'hinge-reg' with solver 'liblinear'"),
    ({"method": "liblinear-cs", "penalty": "l1"}, "l2 problem only"),
    ({"subset_indices": np.array([0.5, 1.5])}, "integers"),
    ({"subset_indices": np.array([1, 1, 2])}, "repeated"),
    ({"coef_full": 1}, "reserved"),
])
def test_run_job_checks_parameters_before_reading(tmp_path, kwargs, match):
    """SparseSVC's parameter checks (and the job's own) run before the features are read."""
    missing = tmp_path / "no-features"
    args = dict(features_dir=missing, subset_indices=np.arange(6), method="hinge-reg", penalty="l1", groups=None,
                alpha=1.0, tol=1e-3, max_iter=10)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        runner.run_job(**args)
    assert not missing.exists()


def test_run_job_single_precision(tiny_features):
    """precision="single" is recorded and gives the float64 job's model to float32 accuracy."""
    d, _, _, Xte, yte = tiny_features
    args = (d, None, "hinge-reg", "l1", None, 0.5, 1e-6, 3000)
    a, ca = runner.run_job(*args)
    b, cb = runner.run_job(*args, precision="single")
    _check_record(b, cb, Xte, yte, 18)
    assert (a["precision"], b["precision"]) == ("double", "single")
    assert b["objective"] == pytest.approx(a["objective"], rel=1e-5)
    assert b["test_errors"] == a["test_errors"] and b["nnz"] == a["nnz"]
    np.testing.assert_allclose(cb, ca, atol=1e-4 * np.abs(ca).max())


def test_run_job_checks_against_the_features(tiny_features):
    """What only the data can tell: the rows of L, the group size against the features."""
    d = tiny_features[0]
    with pytest.raises(ValueError, match="L=5 given but the training subset has 6 rows"):
        runner.run_job(d, np.arange(6), "hinge-reg", "l1", None, 1.0, 1e-3, 10, L=5)
    n_features = tiny_features[3].shape[1]
    with pytest.raises(ValueError, match=rf"group size must be in 1..n_features={n_features}, "
                                         rf"got groups={n_features + 1}"):
        runner.run_job(d, None, "hinge-reg", "l1inf", n_features + 1, 1.0, 1e-3, 10)


def test_training_job_imports_nothing_heavy(tiny_features, tmp_path):
    """A training job as train.py runs it, every method of the paper, in a fresh process: importing the
    runner adds no third-party module, and the jobs import no scikit-learn, pandas, matplotlib,
    scipy.optimize nor the accelerated solvers (training-job start-up time)."""
    import subprocess
    import sys

    code = """
import json, sys
import numpy as np
import sparsesvm, sparsesvm.data.features
before = set(sys.modules)
from sparsesvm.experiments.runner import run_job, write_json_atomic
new = {m.split('.')[0] for m in set(sys.modules) - before}
third_party = sorted(n for n in new if n not in sys.stdlib_module_names and n != 'sparsesvm')
d, out = sys.argv[1], sys.argv[2]
jobs = [("hinge-reg", "l1inf", 4, "rel_change"), ("hinge-reg", "l1", None, "gap"),
        ("hinge-con", "l12", 2, "rel_change"), ("hinge-lin", "l1inf", "features", "rel_change"),
        ("square", "l2", None, "rel_change"), ("logit", "l1inf", 4, "rel_change"),
        ("ova", "l1inf", 4, "rel_change")]
recs = [run_job(d, np.arange(0, 18, 2), m, p, g, 0.5, 1e-3, 50, stopping=s, dataset="blobs")[0]
        for m, p, g, s in jobs]
write_json_atomic(out, recs)
heavy = ("sklearn", "pandas", "matplotlib", "seaborn", "scipy.optimize", "sparsesvm.estimators",
         "sparsesvm.solvers.accelerated.hinge")
print(json.dumps([third_party, [m for m in heavy if m in sys.modules]]))
"""
    out = subprocess.run([sys.executable, "-c", code, str(tiny_features[0]), str(tmp_path / "recs.json")],
                         capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[], []]
    recs = runner.read_json(tmp_path / "recs.json")
    assert [r["method"] for r in recs] == ["hinge-reg", "hinge-reg", "hinge-con", "hinge-lin", "square", "logit",
                                          "ova"]
    assert all(r["L"] == 9 and r["n_iter"] >= 1 for r in recs)
    assert recs[1]["stopping"] == "gap" and recs[1]["rel_gap"] is not None


def test_method_order_keeps_solver_variants_next_to_their_method():
    from sparsesvm.experiments.aggregate import METHOD_ORDER, ordered

    labels = ["ova", "zeta", "hinge-con [accelerated]", "square", "hinge-reg", "hinge-reg [accelerated]",
              "hinge-con", "ova"]
    assert ordered(labels, METHOD_ORDER) == [
        "hinge-reg", "hinge-reg [accelerated]", "hinge-con", "hinge-con [accelerated]", "square", "ova", "zeta"]
