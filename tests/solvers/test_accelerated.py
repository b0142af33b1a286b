"""Tests of sparsesvm.solvers.accelerated.hinge against CVXPY/Clarabel (tests/cvx_reference.py)."""

import time

import cvx_reference as cr
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import stall_warm_starts

from sparsesvm.estimators import SparseSVC
from sparsesvm.model.penalties import make_penalty
from sparsesvm.solvers.accelerated import colgen, highs, hinge_ipm
from sparsesvm.solvers.accelerated import hinge as acc

PENALTIES = [("l1", None), ("l2", None), ("l12", 3), ("l12", "features"),
             ("l1inf", 3), ("l1inf", "features")]


def _run(method, Phi, y, K, pen, grp, par, **kw):
    if method == "hinge-reg":
        return acc.hinge_reg(Phi, y, K, pen, grp, lam=par, **kw)
    return acc.hinge_con(Phi, y, K, pen, grp, eta=par, **kw)


def _check_against_cvx(problem, method, pen, grp, inner, seed=1, **shape):
    Phi, y, K = problem(seed, **shape)
    L = len(y)
    par = 2.0 if method == "hinge-reg" else 0.3 * L
    kw = dict(lam=par) if method == "hinge-reg" else dict(eta=par)
    pstar, _ = cr.solve(method, Phi, y, K, pen, grp, **kw)
    r = _run(method, Phi, y, K, pen, grp, par, tol=2e-7, max_iter=200000, inner=inner)
    assert r.converged and r.rel_gap <= 2e-7
    X = r.X
    g = cr.regulariser_value(X[:-1], pen, grp)
    loss = cr.hinge_loss_np(Phi, y, X)
    if method == "hinge-reg":
        obj = g + par * loss
    else:
        obj = g
        assert loss <= par * (1 + 1e-9)  # the returned point is feasible
        assert r.constraint_violation == 0.0
    assert obj == pytest.approx(r.objective, rel=1e-9, abs=1e-12)
    # reaches the optimum to 1e-6 relative (Clarabel itself is ~1e-8 accurate)
    assert abs(obj - pstar) <= 1e-6 * abs(pstar)
    # the certified lower bound is below the optimum
    assert r.dual_objective <= pstar * (1 + 1e-7)
    return r


@pytest.mark.parametrize("pen,grp", [p for p in PENALTIES if p[0] != "l2"])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_column_generation_reaches_cvx_optimum(random_problem, method, pen, grp):
    _check_against_cvx(random_problem, method, pen, grp, "cg")


@pytest.mark.parametrize("seed,M", [(1, 8), (3, 16), (5, 40)])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_dual_qp_reaches_cvx_optimum(random_problem, method, seed, M):
    # M < L (12): regularised QP, then PDHG; M >= L: the QP alone
    _check_against_cvx(random_problem, method, "l2", None, "qp", seed=seed, M=M)


def test_dual_qp_with_fewer_features_than_samples(random_problem):
    # rank-deficient Gram matrix: the regularised QP and PDHG still give the optimum
    Phi, y, K = random_problem(8, L=30, M=5)
    pstar, _ = cr.solve("hinge-reg", Phi, y, K, "l2", None, lam=2.0)
    r = acc.hinge_reg(Phi, y, K, "l2", lam=2.0, tol=1e-7, inner="qp")
    assert r.converged and abs(r.objective - pstar) <= 1e-6 * pstar


def test_auto_engine_per_penalty(random_problem):
    Phi, y, K = random_problem(1, M=16)
    expect = {("l1", None): "portfolio", ("l1inf", 3): "portfolio", ("l12", 3): "cg",
              ("l2", None): "qp"}
    for (pen, grp), inner in expect.items():
        r = acc.hinge_reg(Phi, y, K, pen, grp, lam=2.0, tol=1e-6)
        assert r.converged and r.settings["inner"] == inner
        if inner == "portfolio":  # a small problem: column generation's first turn solves it
            assert r.settings["engine"] == "cg"
            assert all(t == 0.0 for e, t in r.settings["engine_seconds"].items() if e != "cg")
    # l12 with groups of at most L12_CG_MAX_GROUP entries and more than L12_CG_MAX_ROWS
    # hinge rows (2700 here, the News20-like problem of bench_family): both engines in turns
    geo5 = make_penalty("l12", acc.L12_CG_MAX_GROUP, 5000, 10)
    assert acc._choose_inner("auto", geo5, 300, 5000, 10) == "portfolio"
    assert acc._choose_inner("auto", geo5, 100, 5000, 10) == "cg"  # 900 rows
    # ... and with groups of up to L12_CG_MAX_GROUP_WIDE entries not many against the rows
    # (PDHG first, see test_portfolio_gives_pdhg_the_first_turn...), PDHG alone above
    geo6 = make_penalty("l12", acc.L12_CG_MAX_GROUP + 1, 5000, 10)
    assert acc._choose_inner("auto", geo6, 300, 5000, 10) == "portfolio"
    geo_wide = make_penalty("l12", acc.L12_CG_MAX_GROUP_WIDE, 5000, 10)
    assert acc._choose_inner("auto", geo_wide, 300, 5000, 10) == "portfolio"
    geo11 = make_penalty("l12", acc.L12_CG_MAX_GROUP_WIDE + 1, 5000, 10)
    assert acc._choose_inner("auto", geo11, 300, 5000, 10) == "pdhg"
    # l12 with groups larger than L12_CG_MAX_GROUP_WIDE: PDHG
    Phi6, y6, K6 = random_problem(1, L=24, M=16, K=acc.L12_CG_MAX_GROUP_WIDE + 1)
    r = acc.hinge_reg(Phi6, y6, K6, "l12", "features", lam=2.0, tol=1e-3)
    assert r.converged and r.settings["inner"] == "pdhg"
    # ... unless they are at most L12_CG_MAX_GROUP_WIDE entries and many against the rows
    b = acc.L12_CG_MAX_GROUP_WIDE
    Phi9, y9, K9 = random_problem(2, L=6, M=b * acc.L12_CG_GROUPS_PER_ROW * 4, K=3)   # 96 groups, 12 rows
    r = acc.hinge_reg(Phi9, y9, K9, "l12", b, lam=2.0, tol=1e-4)
    assert r.converged and r.settings["inner"] == "cg"
    pstar, _ = cr.solve("hinge-reg", Phi9, y9, K9, "l12", b, lam=2.0)
    assert r.objective - pstar <= 1e-4 * pstar + 1e-9
    Phi9, y9, K9 = random_problem(2, L=6, M=b * acc.L12_CG_GROUPS_PER_ROW * 4 - b, K=3)  # 93 groups
    r = acc.hinge_reg(Phi9, y9, K9, "l12", b, lam=2.0, tol=1e-3)
    assert r.converged and r.settings["inner"] == "portfolio"
    with pytest.raises(ValueError, match="norm penalty"):
        acc.hinge_reg(Phi, y, K, "l2", lam=1.0, inner="cg")
    with pytest.raises(ValueError, match="for penalty 'l2' only"):
        acc.hinge_reg(Phi, y, K, "l1", lam=1.0, inner="qp")
    with pytest.raises(ValueError, match="for penalty 'l2' only"):
        acc.hinge_reg(Phi, y, K, "l1", lam=1.0, inner="dcd")


def test_l2_without_qp_falls_back_to_pdhg(random_problem, monkeypatch):
    Phi, y, K = random_problem(4, L=12, M=16)
    L = len(y)
    ref = acc.hinge_con(Phi, y, K, "l2", eta=0.3 * L, tol=1e-9)
    assert ref.settings["inner"] == "qp" and ref.n_iter == 1 and ref.converged
    # fewer features than samples: "auto" does not build the (singular) dual QP
    Phi2, y2, _ = random_problem(4, L=15, M=9)
    assert acc.hinge_reg(Phi2, y2, K, "l2", lam=1.0, tol=1e-3).settings["inner"] == "dcd"
    # HiGHS reports no optimum: PDHG continues from zero
    monkeypatch.setattr(acc, "_l2_dual_qp", lambda *args, **kw: None)
    r = acc.hinge_con(Phi, y, K, "l2", eta=0.3 * L, tol=1e-6, max_iter=300000)
    assert r.converged and r.n_iter > 1
    assert r.objective == pytest.approx(ref.objective, rel=2e-6)
    # no incremental HiGHS: "auto" takes the coordinate descent, "qp" is refused
    monkeypatch.setattr(highs, "highspy", None)
    r = acc.hinge_reg(Phi, y, K, "l2", lam=2.0, tol=1e-6, max_iter=300000)
    assert r.converged and r.settings["inner"] == "dcd"
    with pytest.raises(ValueError, match="HiGHS"):
        acc.hinge_reg(Phi, y, K, "l2", lam=2.0, inner="qp")


def test_dual_qp_point_is_the_kkt_pair(random_problem):
    # W = -Phi^T G(Y) and biases minimising the hinge at W: the certificate closes
    Phi, y, K = random_problem(6, L=18, M=25)
    r = acc.hinge_reg(Phi, y, K, "l2", lam=0.7, tol=1e-9)
    G = r.Y.copy()
    G[np.arange(len(y)), y] -= r.Y.sum(axis=1)
    assert np.allclose(r.X[:-1], -Phi.T @ G, atol=1e-8)
    assert r.rel_gap <= 1e-9 and r.n_iter == 1
    for d in (1e-3, -1e-3):  # moving one bias does not lower the objective
        X = r.X.copy()
        X[-1, 0] += d
        obj = 0.5 * (X[:-1] ** 2).sum() + 0.7 * cr.hinge_loss_np(Phi, y, X)
        assert obj >= r.objective - 1e-12


@pytest.mark.parametrize("pen,grp", PENALTIES)
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_pdhg_reaches_cvx_optimum(random_problem, method, pen, grp):
    _check_against_cvx(random_problem, method, pen, grp, "pdhg", seed=2)


def test_ingredients_each_reach_the_optimum(random_problem):
    Phi, y, K = random_problem(seed=4, L=10, M=6)
    pstar, _ = cr.solve("hinge-reg", Phi, y, K, "l12", 2, lam=1.5)
    for opts in (dict(restart="none", primal_weight=False, working_set=False),
                 dict(precondition="diag"), dict(reflection=0.0), dict(working_set=False)):
        r = acc.hinge_reg(Phi, y, K, "l12", 2, lam=1.5, tol=1e-6, max_iter=300000,
                          inner="pdhg", **opts)
        assert r.converged, opts
        assert r.objective == pytest.approx(pstar, rel=2e-6)


def test_sparse_input_and_trace(random_problem):
    Phi, y, K = random_problem(seed=3, L=15, M=20)
    Phis = sp.csr_matrix(np.where(np.abs(Phi) > 0.8, Phi, 0.0))
    r1 = acc.hinge_reg(Phis, y, K, "l1", lam=1.0, tol=1e-8, trace=True)
    r2 = acc.hinge_reg(Phis.toarray(), y, K, "l1", lam=1.0, tol=1e-8)
    assert r1.objective == pytest.approx(r2.objective, rel=1e-7)
    tr = r1.trace
    assert set(tr) == {"iteration", "time", "objective", "dual_objective", "rel_gap", "rel_change"}
    n = len(tr["time"])
    assert n >= 1 and all(len(v) == n for v in tr.values())
    assert np.all(np.diff(tr["time"]) >= 0)
    assert tr["rel_gap"][-1] <= 1e-8
    assert acc.hinge_reg(Phis, y, K, "l1", lam=1.0).trace is None
    # PDHG's checks on one working set are numbered by the iterations done, not by the run's start
    tp = acc.hinge_reg(Phis, y, K, "l1", lam=1.0, tol=1e-8, trace=True, inner="pdhg",
                       working_set=False, check_every=8).trace
    assert len(tp["iteration"]) > 2 and np.all(np.diff(tp["iteration"]) > 0)
    assert np.all(tp["iteration"][:-1] % 8 == 0)


def test_certified_rel_gap_bounds_true_gap(random_problem):
    Phi, y, K = random_problem(seed=6, L=20, M=15)
    pstar, _ = cr.solve("hinge-reg", Phi, y, K, "l1inf", 5, lam=3.0)
    for tol in (1e-1, 1e-2, 1e-3):
        r = acc.hinge_reg(Phi, y, K, "l1inf", 5, lam=3.0, tol=tol, inner="pdhg")
        assert r.rel_gap <= tol
        assert (r.objective - pstar) / pstar <= r.rel_gap + 1e-7


def test_bad_input_raises(random_problem):
    Phi, y, K = random_problem(1)
    with pytest.raises(ValueError, match="lam"):
        acc.hinge_reg(Phi, y, K, "l1", lam=-1.0)
    with pytest.raises(ValueError, match="eta"):
        acc.hinge_con(Phi, y, K, "l1", eta=0.0)
    with pytest.raises(ValueError, match="y_idx"):
        acc.hinge_reg(Phi, y[:-1], K, "l1")
    with pytest.raises(ValueError, match="n_classes"):
        acc.hinge_reg(Phi, y, 2, "l1")
    with pytest.raises(ValueError, match="unknown option"):
        acc.hinge_reg(Phi, y, K, "l1", bogus=1)
    with pytest.raises(ValueError, match="inner"):
        acc.hinge_reg(Phi, y, K, "l1", inner="newton")
    with pytest.raises(ValueError, match="tol"):
        acc.hinge_reg(Phi, y, K, "l1", tol=0)
    with pytest.raises(ValueError, match="Phi"):
        acc.hinge_reg([[1.0, 2.0]], [0], 2, "l1")


def test_linprog_fallback_gives_the_same_optimum(random_problem, monkeypatch):
    Phi, y, K = random_problem(seed=8, L=15, M=12)
    r1 = acc.hinge_con(Phi, y, K, "l1inf", 4, eta=4.0, tol=1e-9)
    monkeypatch.setattr(highs, "highspy", None)  # no incremental HiGHS: scipy.optimize.linprog
    r2 = acc.hinge_con(Phi, y, K, "l1inf", 4, eta=4.0, tol=1e-9)
    assert r1.converged and r2.converged
    assert r2.objective == pytest.approx(r1.objective, rel=1e-8)


def test_sparsesvc_accelerated_matches_cvx(random_problem):
    Phi, y, K = random_problem(seed=9, L=15, M=10)
    L = len(y)
    for method, kw in (("hinge-reg", dict(lam=1 / 0.5)), ("hinge-con", dict(eta=0.5 * L))):
        pstar, _ = cr.solve(method, Phi, y, K, "l1", None, **kw)
        clf = SparseSVC(method=method, penalty="l1", alpha=0.5, solver="accelerated",
                            stopping="gap", tol=1e-8, trace=True).fit(Phi, y)
        assert clf.converged_
        assert clf.objective_ == pytest.approx(pstar, rel=1e-6)
        assert clf.coef_.shape == (K, Phi.shape[1]) and clf.intercept_.shape == (K,)
        assert clf.constraint_violation_ == 0.0
        assert clf.trace_["rel_gap"][-1] <= 1e-8
        assert {"iteration", "time", "rel_change", "objective"} <= set(clf.trace_)
    with pytest.raises(ValueError, match="stopping"):
        SparseSVC(method="hinge-reg", solver="accelerated", stopping="rel_change").fit(Phi, y)
    with pytest.raises(ValueError, match="does not support method 'hinge-lin'"):
        SparseSVC(method="hinge-lin", solver="accelerated", stopping="gap").fit(Phi, y)


def test_elastic_slack_of_hinge_con_is_priced_out(random_problem, monkeypatch):
    # a tiny slack penalty forces the master to raise it (phase-1 logic)
    class SmallBig(colgen._Master):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs, big=1e-2)

    Phi, y, K = random_problem(seed=12, L=15, M=10)
    ref = acc.hinge_con(Phi, y, K, "l1", eta=3.0, tol=1e-9)
    monkeypatch.setattr(colgen, "_Master", SmallBig)
    r = acc.hinge_con(Phi, y, K, "l1", eta=3.0, tol=1e-9)
    assert r.converged
    assert r.objective == pytest.approx(ref.objective, rel=1e-8)


def _spy_masters(monkeypatch):
    """Record the column generation's masters (to read their hinge rows)."""
    masters = []

    class Spy(colgen._Master):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.n_dropped = self.n_dropped_initial = 0
            self.n_initial = self.nh0  # nh0 shrinks as initial rows are dropped
            masters.append(self)

        def drop_rows(self, drop):
            self.n_dropped += int(drop.sum())
            self.n_dropped_initial += int(drop[:self.nh0].sum())
            super().drop_rows(drop)

    monkeypatch.setattr(colgen, "_Master", Spy)
    return masters


@pytest.mark.parametrize("pen,grp", [("l1", None), ("l1inf", 3)])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_row_generation_reaches_cvx_optimum(random_problem, monkeypatch, method, pen, grp):
    # forced on a small problem: the master starts from one hinge row per sample
    monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
    masters = _spy_masters(monkeypatch)
    _check_against_cvx(random_problem, method, pen, grp, "cg", L=24, M=10, K=4)
    L, K = 24, 4
    assert masters[0].n_initial == L < L * (K - 1)
    assert masters[0].nh > masters[0].nh0  # rows were generated
    assert masters[0].n_dropped > 0  # and stale ones dropped
    assert len(masters[0].atom_cols[0]) == masters[0].nh  # the atoms' columns follow the rows


@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_row_generation_capped_per_round_reaches_cvx_optimum(random_problem, monkeypatch, method):
    # at most two rows a round, the most violated: more rounds, the same optimum
    monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
    monkeypatch.setattr(colgen, "ROWGEN_MAX_ADD", 2)
    added = []
    orig = colgen._RowGeneration.violated

    def spy(self, TX, xi):
        V = np.where(self.has, -np.inf, TX)
        excess = 1.0 + V.max(axis=1) - xi  # each sample's most violated missing row
        l, k = orig(self, TX, xi)
        added.append(len(l))
        if len(l):  # the rows taken are the most violated ones
            rest = np.setdiff1d(np.arange(len(xi)), l)
            assert excess[l].min() >= (excess[rest].max() if len(rest) else -np.inf)
        return l, k

    monkeypatch.setattr(colgen._RowGeneration, "violated", spy)
    _check_against_cvx(random_problem, method, "l1inf", 3, "cg", L=24, M=10, K=4)
    assert max(added) == 2 and sum(added) > 2


def test_row_generation_with_duplicates_and_a_zero_feature(random_problem, monkeypatch):
    # a sample repeated with another label (its hinge cannot vanish) and an all-zero feature
    Phi, y, K = random_problem(seed=13, L=20, M=9, K=4)
    Phi[:, 4] = 0.0
    Phi = np.vstack([Phi, Phi[:3]])
    y = np.concatenate([y, (y[:3] + 1) % K])
    L = len(y)
    for method, par in (("hinge-reg", 2.0), ("hinge-con", 0.6 * L)):
        ref = _run(method, Phi, y, K, "l1inf", 3, par, tol=1e-10)
        monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
        r = _run(method, Phi, y, K, "l1inf", 3, par, tol=1e-10)
        monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", L * (K - 1))
        assert ref.converged and r.converged
        assert r.objective == pytest.approx(ref.objective, rel=1e-6)
        # the whole certificate: the primal value is the loss over all L samples
        g = cr.regulariser_value(r.X[:-1], "l1inf", 3)
        loss = cr.hinge_loss_np(Phi, y, r.X)
        obj = g + par * loss if method == "hinge-reg" else g
        assert obj == pytest.approx(r.objective, rel=1e-9, abs=1e-12)


def test_row_generation_gap_bounds_true_suboptimality(random_problem, monkeypatch):
    Phi, y, K = random_problem(seed=6, L=30, M=15, K=4)
    monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
    masters = _spy_masters(monkeypatch)
    for method, par in (("hinge-reg", 3.0), ("hinge-con", 0.5 * len(y))):
        kw = dict(lam=par) if method == "hinge-reg" else dict(eta=par)
        pstar, _ = cr.solve(method, Phi, y, K, "l1inf", 5, **kw)
        for tol in (1e-1, 1e-2, 1e-3):
            r = _run(method, Phi, y, K, "l1inf", 5, par, tol=tol, inner="cg")
            assert masters[-1].nh < len(y) * (K - 1) or r.n_iter > 1
            assert r.rel_gap <= tol
            assert (r.objective - pstar) / pstar <= r.rel_gap + 1e-7
            assert r.dual_objective <= pstar * (1 + 1e-7)
        # initial rows that stay loose go too (for hinge-con the constraint row of HiGHS'
        # model sits after them: the deletion indices shift past it)
        assert masters[-1].n_dropped_initial > 0


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
@pytest.mark.parametrize("pen,grp", [("l1", None), ("l1inf", 3), ("l12", 2)])
def test_idle_atoms_are_deleted_and_the_optimum_kept(random_problem, monkeypatch, pen, grp):
    # every atom nonbasic at 0 after one solve is deleted (and may be priced again)
    monkeypatch.setattr(colgen, "ATOM_DROP_AFTER", 1)
    dropped = []
    drop_atoms = colgen._Master.drop_atoms
    monkeypatch.setattr(colgen._Master, "drop_atoms",
                        lambda self, drop: dropped.append(int(drop.sum())) or drop_atoms(self, drop))
    for method in ("hinge-reg", "hinge-con"):
        r = _check_against_cvx(random_problem, method, pen, grp, "cg", seed=4, L=30, M=12, K=4)
        # the master point is rebuilt from the remaining atoms: its objective is the certificate's
        assert r.n_iter > 1
    assert sum(dropped) > 0


@pytest.mark.parametrize("pen,grp", [("l1", None), ("l12", 2)])
def test_l12_atoms_wait_longer_for_deletion_while_the_gap_stalls(random_problem, pen, grp):
    """l12's atoms (directions, never priced twice exactly: deleting them can make the rounds
    cycle) are deleted after ATOM_DROP_AFTER idle solves, twice as many after each
    ATOM_STALL_ROUNDS rounds without a smaller certified gap, at most ATOM_PATIENCE_MAX times;
    l1's (finitely many) always after ATOM_DROP_AFTER."""
    from sparsesvm.model.operator import MulticlassOperator

    Phi, y, K = random_problem(1, L=12, M=8, K=3)
    op = MulticlassOperator(Phi, y, K)
    cg = colgen._ColumnGeneration(op, make_penalty(pen, grp, 8, K), "reg", 1.0, 1e-6, 100, None,
                                  lambda *a: None)
    base, stall = colgen.ATOM_DROP_AFTER, colgen.ATOM_STALL_ROUNDS
    seen = []
    for gap in [1.0, 0.5] + [0.6] * stall + [0.4] + [0.4] * (stall * (colgen.ATOM_PATIENCE_MAX + 2)):
        cg._watch(gap)
        seen.append(cg.patience)
    if pen == "l1":
        assert set(seen) == {base}
        return
    assert seen[:1 + stall] == [base] * (1 + stall) and seen[1 + stall] == 2 * base
    assert seen[2 + stall] == 2 * base  # a smaller gap: the count starts again
    assert max(seen) == base * 2 ** colgen.ATOM_PATIENCE_MAX == seen[-1]
    assert all(b in (a, 2 * a) for a, b in zip(seen, seen[1:]))


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_atoms_are_deleted_after_the_engines_patience(random_problem, monkeypatch):
    """No atom is deleted before it has been idle (nonbasic at 0) at the engine's ``patience``
    solves, and with the patience raised at every round (as after stalls) the optimum is
    CVXPY's."""
    monkeypatch.setattr(colgen._ColumnGeneration, "_watch",
                        lambda self, gap: setattr(self, "patience", min(2 * self.patience, 12)))
    ages = []
    stale_atoms = colgen._Master.stale_atoms

    def spy(self, patience=colgen.ATOM_DROP_AFTER):
        drop = stale_atoms(self, patience)
        ages.append((patience, self._atom_age[drop]))
        return drop

    monkeypatch.setattr(colgen._Master, "stale_atoms", spy)
    _check_against_cvx(random_problem, "hinge-reg", "l12", 2, "cg", seed=4, L=30, M=12, K=4)
    assert ages and all((age >= patience).all() for patience, age in ages)
    assert any(patience > colgen.ATOM_DROP_AFTER for patience, _ in ages)


def _spy(monkeypatch, name, calls, tag):
    """Append ``tag`` (or ``(tag, *arguments)``) to ``calls`` at each call of ``_Master.<name>``."""
    run = getattr(colgen._Master, name)

    def spy(self, *args, **kw):
        calls.append((tag, *args, *kw.values()) if args or kw else tag)
        return run(self, *args, **kw)

    monkeypatch.setattr(colgen._Master, name, spy)


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
@pytest.mark.parametrize("row_generation", [False, True])
def test_stalled_warm_start_is_solved_cold(random_problem, monkeypatch, row_generation):
    # without row generation the cold dual simplex takes over; with it, when the
    # interior-point method does nothing, too
    stall_warm_starts(monkeypatch, row_generation)
    cold = []
    _spy(monkeypatch, "_run_cold", cold, "cold")
    if row_generation:
        monkeypatch.setattr(colgen._Master, "_run_ipm", lambda self: None)
    else:
        monkeypatch.setattr(colgen._Master, "_run_ipm", lambda self: pytest.fail("interior point"))
    for method in ("hinge-reg", "hinge-con"):
        _check_against_cvx(random_problem, method, "l1inf", 3, "cg", L=24, M=10, K=4)
    assert len(cold) > 4


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_stalled_warm_start_is_solved_by_interior_point(random_problem, monkeypatch):
    # with row generation: interior point with crossover takes over, for IPM_BEFORE_WARM
    # solves, then a warm start is tried again; a solve that prices nothing is confirmed
    # by an uncapped simplex
    stall_warm_starts(monkeypatch, True)
    monkeypatch.setattr(colgen, "IPM_WARM_MAX_NEW", np.inf)  # however many new atoms
    calls = []
    _spy(monkeypatch, "_run_ipm", calls, "ipm")
    _spy(monkeypatch, "_run_warm", calls, "warm")
    for method in ("hinge-reg", "hinge-con"):
        for seed in (1, 4):
            _check_against_cvx(random_problem, method, "l1inf", 3, "cg", seed=seed, L=24, M=10, K=4)
    assert calls.count("ipm") > 8 and calls.count(("warm", False)) >= 1
    # after a stalled warm start (always followed by "ipm"): IPM_BEFORE_WARM - 1 more interior
    # point solves before the next capped warm start
    runs = "".join("i" if c == "ipm" else "w" if c == ("warm", True) else "x" for c in calls)
    assert "wi" + "i" * (colgen.IPM_BEFORE_WARM - 1) + "w" in runs


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
@pytest.mark.parametrize("pen,grp,expect_ipm", [("l12", 2, True), ("l1inf", 3, False), ("l1", None, False)])
@pytest.mark.parametrize("sparse_masters", [False, True])
def test_slow_l12_warm_start_puts_small_masters_on_the_interior_point_path(random_problem, monkeypatch,
                                                                          pen, grp, expect_ipm,
                                                                          sparse_masters):
    # row generation on, masters never large by their non-zeros, every warm start of at least
    # one iteration "slow" (WARM_SLOW_PER_ROW 0) and the interior-point path's warm starts cut
    # at their first iteration: l12's masters go to the interior-point method after the first
    # slow warm start; l1's and l1,inf's never do; both reach CVXPY's optimum. Masters below
    # WARM_SLOW_DENSITY (``sparse_masters``: every master, by a density above 1) take that path
    # for hinge-reg only
    for name, value in (("ROWGEN_MIN_ROWS", 0), ("IPM_MIN_NNZ", 10**12), ("WARM_SLOW_PER_ROW", 0.0),
                        ("IPM_WARM_ITER_MIN", 1), ("IPM_WARM_ITER_PER_ROW", 0)):
        monkeypatch.setattr(colgen, name, value)
    if sparse_masters:
        monkeypatch.setattr(colgen, "WARM_SLOW_DENSITY", 2.0)
    for method in ("hinge-reg", "hinge-con"):
        calls = []
        _spy(monkeypatch, "_run_ipm", calls, "ipm")
        _check_against_cvx(random_problem, method, pen, grp, "cg", seed=1, L=24, M=10, K=4)
        expect = expect_ipm and not (sparse_masters and method == "hinge-con")
        assert (calls.count("ipm") > 2) == expect and (not calls) == (not expect), method


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
@pytest.mark.parametrize("pen,grp,shrink,sparse", [("l1", None, False, False), ("l1inf", 3, False, False),
                                                   ("l12", 2, False, False), ("l1inf", 3, True, False),
                                                   ("l1", None, False, True), ("l12", 2, False, True)])
def test_dense_interior_point_masters_reach_the_optimum(random_problem, monkeypatch, pen, grp, shrink,
                                                        sparse):
    # on the interior-point path the dense interior-point method solves the masters; HiGHS
    # then has no basis of them, so no warm start is tried until a crossover made one (the
    # confirmation of a point at which nothing is priced), even where the master has become
    # too small for the interior-point path (``shrink``: below IPM_MIN_NNZ after the first
    # dense solve); idle atoms are still dropped. ``sparse``: the atom columns passed as sparse
    # ones (every master below DENSE_IPM_SPARSE_ATOMS), the same optimum
    stall_warm_starts(monkeypatch, True, dense=True)
    monkeypatch.setattr(colgen, "IPM_WARM_MAX_NEW", np.inf)
    monkeypatch.setattr(colgen, "DENSE_IPM_SPARSE_ATOMS", 2.0 if sparse else 0.0)
    layouts, charged, bases = [], [], []
    interior_point, solve_dense = colgen.interior_point, colgen._Master._run_dense

    def spy_layout(A_sparse, A_dense, *args, **kw):
        atoms = np.diff(sp.csc_matrix(A_sparse).indptr)[bases[-1]:]  # non-zeros of the atoms
        layouts.append((A_sparse.shape[1], A_dense.shape[1], float(np.sum(atoms ** 2))))
        return interior_point(A_sparse, A_dense, *args, **kw)

    monkeypatch.setattr(colgen, "interior_point", spy_layout)
    monkeypatch.setattr(colgen._Master, "_run_dense",
                        lambda self: bases.append(self.nbase) or solve_dense(self))
    monkeypatch.setattr(type(colgen.WALL), "interior",
                        lambda self, it, rows, dense_cols, pairs=0: charged.append((dense_cols, pairs)))
    calls, dropped = [], []
    if shrink:
        run_dense = colgen._Master._run_dense

        def shrinking(self):
            monkeypatch.setattr(colgen, "IPM_MIN_NNZ", 10**12)
            return run_dense(self)

        monkeypatch.setattr(colgen._Master, "_run_dense", shrinking)
    _spy(monkeypatch, "_run_dense", calls, "dense")
    _spy(monkeypatch, "_run_crossover", calls, "crossover")
    _spy(monkeypatch, "_run_warm", calls, "warm")
    drop_atoms = colgen._Master.drop_atoms
    monkeypatch.setattr(colgen._Master, "drop_atoms",
                        lambda self, drop: dropped.append(int(drop.sum())) or drop_atoms(self, drop))
    n_dense = 0
    for method in ("hinge-reg", "hinge-con"):
        for seed in (1, 4):
            calls.clear()
            if shrink:
                monkeypatch.setattr(colgen, "IPM_MIN_NNZ", 0)
            _check_against_cvx(random_problem, method, pen, grp, "cg", seed=seed, L=24, M=10, K=4)
            runs = "".join({"dense": "d", "crossover": "c"}.get(c, "w") for c in calls)
            n_dense += runs.count("d")
            for start in range(len(runs)):  # after a dense solve, a crossover before a warm start
                if runs[start] == "d":
                    assert not runs[start:].lstrip("d").startswith("w"), runs
    assert n_dense > 8 and sum(dropped) > 0
    # every master with atoms in the layout asked for (the base columns are sparse either way),
    # charged to the clock by its dense columns or its sparse atoms' product pairs
    assert all((dense == 0) == sparse for _, dense, _ in layouts if dense or sparse)
    assert sparse == any(n > 4 + 24 + 1 for n, _, _ in layouts)  # more than K + L (+ slack) sparse
    assert charged == [(dense, pairs) for _, dense, pairs in layouts]


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_dense_interior_point_not_used_below_its_reach(random_problem, monkeypatch):
    # a tolerance whose fraction for the master is below what the dense method reaches: HiGHS'
    # methods only (the certificate could not get below the master's accuracy)
    stall_warm_starts(monkeypatch, True, dense=True, dense_tol_factor=1e-3)  # 2e-7 -> 2e-10 < 1e-9
    calls = []
    _spy(monkeypatch, "_run_dense", calls, "dense")
    _spy(monkeypatch, "_run_crossover", calls, "crossover")
    for method in ("hinge-reg", "hinge-con"):
        _check_against_cvx(random_problem, method, "l1inf", 3, "cg", L=24, M=10, K=4)
    assert calls.count("crossover") > 4 and "dense" not in calls
    for tol, expect in ((1e-4, 1e-7), (1e-5, 1e-8), (1e-6, 1e-9), (1e-7, None)):
        master = colgen._Master(4, 2, np.array([0, 1, 0, 1]), np.arange(4), np.array([1, 0, 1, 0]),
                                "reg", 1.0, ipm=True, tol=tol)
        assert master.interior_tol == (None if expect is None else pytest.approx(expect))
    assert colgen._Master(4, 2, np.array([0, 1, 0, 1]), np.arange(4), np.array([1, 0, 1, 0]),
                          "reg", 1.0, ipm=False, tol=1e-4).interior_tol is None


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_dense_interior_point_that_fails_gives_way_to_crossover(random_problem, monkeypatch):
    # a dense interior-point solve that does not converge is redone by HiGHS' interior point
    # with crossover; its time limit ends the run with the last certified point
    stall_warm_starts(monkeypatch, True, dense=True)
    from sparsesvm.solvers.accelerated import ipm

    def failing(*args, **kw):
        res = ipm.interior_point(*args, **kw, max_iter=2)
        assert not res.converged
        return res

    monkeypatch.setattr(colgen, "interior_point", failing)
    calls = []
    _spy(monkeypatch, "_run_crossover", calls, "crossover")
    for method in ("hinge-reg", "hinge-con"):
        _check_against_cvx(random_problem, method, "l1inf", 3, "cg", L=24, M=10, K=4)
    assert calls.count("crossover") > 4


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_interior_point_goes_on_while_many_atoms_are_new(random_problem, monkeypatch):
    # after a stalled warm start, the next one is tried only after a round that added at most
    # IPM_WARM_MAX_NEW x rows atom columns: with 0, only after rounds that added none; without
    # the bound, also after rounds that added some
    stall_warm_starts(monkeypatch, True)
    run = colgen._Master._run_warm
    for max_new in (0.0, np.inf):
        monkeypatch.setattr(colgen, "IPM_WARM_MAX_NEW", max_new)
        retried = []  # new atom columns before each capped warm start tried on the IPM path

        def spy(self, capped, retried=retried):
            if capped and self._ipm_run > 0:
                retried.append(self._new_cols)
            return run(self, capped)

        monkeypatch.setattr(colgen._Master, "_run_warm", spy)
        for method in ("hinge-reg", "hinge-con"):
            for seed in (1, 4):
                _check_against_cvx(random_problem, method, "l1inf", 3, "cg", seed=seed, L=24, M=10, K=4)
        if max_new == 0.0:
            assert retried and retried.count(0) == len(retried)
        else:
            assert max(retried) > 0


def test_row_generation_linprog_fallback(random_problem, monkeypatch):
    Phi, y, K = random_problem(seed=8, L=15, M=12)
    r1 = acc.hinge_con(Phi, y, K, "l1inf", 4, eta=4.0, tol=1e-9)
    monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
    masters = _spy_masters(monkeypatch)
    monkeypatch.setattr(highs, "highspy", None)  # the master rebuilt by linprog, rows added
    r2 = acc.hinge_con(Phi, y, K, "l1inf", 4, eta=4.0, tol=1e-9)
    assert r1.converged and r2.converged
    assert masters[0].nh > masters[0].nh0 and masters[0].n_dropped > 0
    assert r2.objective == pytest.approx(r1.objective, rel=1e-8)


def test_small_problems_keep_all_hinge_rows(random_problem, monkeypatch):
    # below the gate the master carries every row from the start (the path of the record runs)
    masters = _spy_masters(monkeypatch)
    Phi, y, K = random_problem(seed=3, L=100, M=12, K=10)
    assert 100 * 9 <= colgen.ROWGEN_MIN_ROWS
    acc.hinge_reg(Phi, y, K, "l1", lam=1.0, tol=1e-6)
    assert masters[0].nh0 == masters[0].nh == 100 * 9


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_master_lp_time_limit_returns_the_last_certified_point(random_problem, monkeypatch):
    """With max_time, the master LP runs under HiGHS' time limit from its second solve on (with
    or without row generation); when it hits the limit, the last certified point is returned."""
    Phi, y, K = random_problem(seed=6, L=30, M=15, K=4)
    full = _run("hinge-reg", Phi, y, K, "l1inf", 5, 3.0, tol=1e-9, inner="cg")
    assert full.converged and full.n_iter > 2
    calls = []
    solve = colgen._Master._solve_incremental

    def limited(self):
        calls.append(self.deadline)
        if len(calls) == 3:
            raise TimeoutError("master LP: time limit")
        return solve(self)

    monkeypatch.setattr(colgen._Master, "_solve_incremental", limited)
    r = acc.hinge_reg(Phi, y, K, "l1inf", 5, lam=3.0, tol=1e-9, inner="cg", max_time=1e6)
    assert calls[0] is None and calls[1] is not None          # the first solve has no limit
    assert not r.converged and r.n_iter < full.n_iter and np.isfinite(r.rel_gap) and r.rel_gap > 1e-9
    pstar = full.objective
    assert (r.objective - pstar) / pstar <= r.rel_gap + 1e-9  # a certified point


def _second_engine(monkeypatch, second):
    """The portfolio's second engine: the interior point (where predicted cheap, as on the
    tests' small problems) or PDHG (its prediction limit set below any prediction); turns of a
    millisecond from the first on."""
    monkeypatch.setattr(acc, "PORTFOLIO_FIRST_SLICE", 1e-3)
    if second == "pdhg":
        monkeypatch.setattr(acc, "PORTFOLIO_IPM_MAX_S", -1.0)


@pytest.mark.parametrize("second", ["pdhg", "ipm"])
@pytest.mark.parametrize("pen,grp", [("l1", None), ("l1inf", 3)])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_portfolio_in_short_turns_reaches_cvx_optimum(random_problem, monkeypatch, method, pen, grp,
                                                       second):
    """Turns of a millisecond: both engines run, each resuming where it paused; the result is
    certified and optimal, and the trace follows the portfolio's best certificate."""
    _second_engine(monkeypatch, second)
    r = _check_against_cvx(random_problem, method, pen, grp, "portfolio", seed=3, M=16)
    assert r.settings["inner"] == "portfolio" and r.settings["engine"] in ("cg", second)
    assert set(r.settings["engine_seconds"]) == {"cg", second}
    assert all(t > 0 for t in r.settings["engine_seconds"].values())  # both had turns
    kw = dict(lam=2.0) if method == "hinge-reg" else dict(eta=0.3 * 12)
    Phi, y, K = random_problem(3, M=16)
    solve = acc.hinge_reg if method == "hinge-reg" else acc.hinge_con
    t = solve(Phi, y, K, pen, grp, tol=2e-7, inner="portfolio", trace=True, **kw).trace
    gaps = t["rel_gap"]
    assert len(gaps) > 1 and np.all(np.diff(gaps) < 0) and gaps[-1] <= 2e-7
    assert np.all(np.diff(t["time"]) >= 0)


def test_portfolio_keeps_the_smaller_gap_when_neither_engine_meets_tol(random_problem, monkeypatch):
    _second_engine(monkeypatch, "pdhg")
    Phi, y, K = random_problem(3, M=16)
    r = acc.hinge_reg(Phi, y, K, "l1inf", 3, lam=2.0, tol=1e-12, inner="portfolio", max_iter=2)
    cg = acc.hinge_reg(Phi, y, K, "l1inf", 3, lam=2.0, tol=1e-12, inner="cg", max_iter=2)
    pd = acc.hinge_reg(Phi, y, K, "l1inf", 3, lam=2.0, tol=1e-12, inner="pdhg", max_iter=2)
    assert not r.converged
    # PDHG paused inside its first turn: the same iterations, its gap equal up to rounding
    assert r.rel_gap == pytest.approx(min(cg.rel_gap, pd.rel_gap), rel=1e-9)
    assert r.settings["engine"] == ("cg" if cg.rel_gap <= pd.rel_gap else "pdhg")
    with pytest.raises(ValueError, match="inner='portfolio' needs a norm penalty"):
        acc.hinge_reg(Phi, y, K, "l2", lam=2.0, inner="portfolio")


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
def test_column_generation_resumed_after_every_round_reaches_the_same_optimum(random_problem):
    """advance() with a time already past: one round a call, and from the second solve on
    HiGHS stops at its smallest time limit and goes on from its basis at the next call."""
    Phi, y, K = random_problem(seed=6, L=30, M=15, K=4)
    op, geo = acc._operator(Phi, y, K), make_penalty("l1inf", 5, 15, K)
    _, _, full, rounds, ok = colgen._column_generation(op, geo, "reg", 3.0, 1e-9, 1000, None,
                                                       lambda *a: None)
    assert ok and rounds > 2
    cg = colgen._ColumnGeneration(op, geo, "reg", 3.0, 1e-9, 1000, None, lambda *a: None)
    calls = 0
    while not cg.finished and calls < 10000:
        cg.advance(time.perf_counter() - 1.0)
        calls += 1
    assert cg.converged and calls >= cg.rounds > 2
    assert cg.best.primal == pytest.approx(full.primal, rel=1e-8)


def test_working_set_pdhg_resumed_in_pieces_reaches_the_optimum(random_problem):
    Phi, y, K = random_problem(seed=4, L=20, M=30, K=3)
    pstar, _ = cr.solve("hinge-reg", Phi, y, K, "l1", None, lam=2.0)
    op, geo = acc._operator(Phi, y, K), make_penalty("l1", None, 30, K)
    ws = acc._WorkingSet(op, geo, "l1", None, "reg", 2.0, True)
    recorder = acc._Recorder(time.perf_counter(), False, None)
    ws.start(np.zeros((31, K)), np.zeros((20, K)), 1e-7, 10 ** 6, None, acc._checked_settings({}),
             recorder)
    calls = 0
    while not ws.finished and calls < 100000:
        ws.advance(time.perf_counter() - 1.0)  # one PDHG iteration a call
        calls += 1
    assert ws.converged and calls > 2 and ws.best.rel_gap <= 1e-7
    assert abs(ws.best.primal - pstar) <= 1e-6 * pstar


@pytest.mark.parametrize("kind,par", [("reg", 2.0), ("con", 6.0)])
def test_pdhg_paused_at_every_check_and_resumed_follows_the_same_iterates(random_problem, kind, par):
    """A deadline already past pauses PDHG after every iteration, between its certificate
    checks too; resumed from its stored state it makes the iterates of one uninterrupted run
    (restarts and the checks' schedule included)."""
    from sparsesvm.model.operator import MulticlassOperator
    from sparsesvm.solvers.accelerated.pdhg import _pdhg, _Problem

    Phi, y, K = random_problem(4, L=20, M=8, K=3)
    op = MulticlassOperator(Phi, y, K)
    prob = _Problem(op, make_penalty("l1inf", 2, 8, K), kind, par, "none")
    opts = dict(acc.DEFAULTS, check_every=16)
    X0, Y0 = np.zeros((9, K)), np.zeros((20, K))
    n = 16 * 40
    Xa, Ya, _, na, _, _ = _pdhg(prob, X0, Y0, 1.0, 0.0, n, None, opts)
    resume, done, pauses = {}, 0, 0
    X, Y = X0, Y0
    while done < n:
        X, Y, _, nit, gr, reason = _pdhg(prob, X, Y, 1.0, 0.0, n - done, 0.0, opts, resume=resume)
        done += nit
        pauses += reason == "time"
        if done % 7 == 0:  # each pause certifies the point it returns, between checks too
            assert gr.primal == pytest.approx(prob.certificate(X, Y).primal, rel=1e-12)
    assert na == n and pauses == n
    np.testing.assert_allclose(X, Xa, rtol=0, atol=1e-12)
    np.testing.assert_allclose(Y, Ya, rtol=0, atol=1e-12)
    # without the state each pause restarts PDHG at its output: other iterates
    X, Y, done = X0, Y0, 0
    while done < n:
        X, Y, _, nit, _, _ = _pdhg(prob, X, Y, 1.0, 0.0, n - done, 0.0, opts)
        done += nit
    assert np.abs(X - Xa).max() > 1e-8


@pytest.mark.parametrize("pen,grp", PENALTIES)
@pytest.mark.parametrize("kind,par", [("reg", 2.0), ("con", 6.0)])
def test_pdhg_compiled_steps_follow_the_numpy_steps(random_problem, kind, par, pen, grp):
    """Without preconditioning PDHG takes the compiled primal step and the compiled dual step
    (hinge-reg's simplex step, hinge-con's sublevel-set step): the iterates of the numpy
    steps, to rounding, restarts included."""
    from sparsesvm.model.operator import MulticlassOperator
    from sparsesvm.solvers.accelerated.pdhg import _pdhg, _Problem, load_kernels

    if not load_kernels():
        pytest.skip("numba not installed")
    Phi, y, K = random_problem(6, L=20, M=9, K=3)
    op = MulticlassOperator(Phi, y, K)
    geo = make_penalty(pen, grp, 9, K)
    opts = dict(acc.DEFAULTS, check_every=16)
    runs = {}
    for compiled in (False, True):
        prob = _Problem(op, geo, kind, par, "none", compiled)
        assert (prob.fused is not None) == compiled
        assert (prob.simplex is not None) == (compiled and kind == "reg")
        assert (prob.sublevel is not None) == (compiled and kind == "con")
        assert (prob.kernels is not None) == compiled
        X, Y, _, n, gr, _ = _pdhg(prob, np.zeros((10, K)), np.zeros((20, K)), 1.0, 0.0, 16 * 25,
                                  None, opts)
        runs[compiled] = X, Y, gr.rel_gap
        assert n == 16 * 25
    (Xn, Yn, gn), (Xc, Yc, gc) = runs[False], runs[True]
    scale = max(np.abs(Xn).max(), 1.0)
    np.testing.assert_allclose(Xc, Xn, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(Yc, Yn, rtol=0, atol=1e-9 * max(np.abs(Yn).max(), 1.0))
    assert gc == pytest.approx(gn, rel=1e-6, abs=1e-12)
    # preconditioned steps differ per group: the numpy step
    assert _Problem(op, geo, kind, par, "diag", True).fused is None


@pytest.mark.parametrize("seed,K", [(0, 2), (1, 3), (2, 7)])
def test_hinge_con_dual_step_is_the_projection(seed, K):
    """hinge-con's PDHG dual step, numpy and compiled: ``Y+ = sigma (V - P_C(V))`` with ``V =
    Yhat / sigma`` and ``C = {sum_l max_k (P_lk + R_lk) <= eta}`` (Moreau), against CVXPY's
    projection; a point already in C gives 0."""
    import cvxpy as cp

    from sparsesvm.solvers.accelerated.pdhg import _pdhg_kernels, _sublevel_dual_step

    rng = np.random.default_rng(seed)
    L, sigma = 9, 0.7
    y = rng.integers(0, K, L)
    R = np.ones((L, K))
    R[np.arange(L), y] = 0.0
    Y, TX, TXn = (rng.normal(size=(L, K)) for _ in range(3))
    Yhat = Y + sigma * (2.0 * TXn - TX)
    V = Yhat / sigma
    top = (V + R).max(axis=1).sum()
    compiled = _pdhg_kernels()
    kernel = compiled.sublevel_step if compiled is not None else None
    for eta in (0.5 * top, top - 1.0, top + 0.1):
        P = cp.Variable((L, K))
        cp.Problem(cp.Minimize(cp.sum_squares(P - V)),
                   [cp.sum(cp.max(P + R, axis=1)) <= eta]).solve(solver=cp.CLARABEL)
        expect = sigma * (V - P.value)
        got = sigma * _sublevel_dual_step(V + R, np.full(L, 1.0 / sigma), eta)
        np.testing.assert_allclose(got, expect, atol=1e-6)
        if eta >= top:
            assert not got.any()
        if kernel is not None:
            out = np.empty((L, K))
            kernel(Y, TX, TXn, R, sigma, eta, out)
            np.testing.assert_allclose(out, got, rtol=0, atol=1e-12)


def test_pdhg_loads_its_kernels_off_the_clock(random_problem, monkeypatch):
    """The compiled steps are loaded when PDHG first runs in a solve; their loading (here a
    stand-in that takes 0.3 s) is not in the solve's time."""
    calls, load = [], acc.load_kernels

    def slow_load():
        calls.append(1)
        time.sleep(0.3)
        return load()

    monkeypatch.setattr(acc, "load_kernels", slow_load)
    Phi, y, K = random_problem(3, L=12, M=6, K=3)
    t0 = time.perf_counter()
    r = acc.hinge_reg(Phi, y, K, "l1", lam=1.0, tol=1e-6, inner="pdhg")
    wall = time.perf_counter() - t0
    assert calls == [1] and r.converged
    assert wall - r.time >= 0.3


class _FakeEngine:
    """An engine for the portfolio's scheduler: each turn does the work of its whole length on
    the portfolio's clock and leaves the next certified gap of ``gaps``; converged when the gap
    reaches 0."""

    def __init__(self, name, gaps, order, shape, clock=None):
        self.name, self.gaps, self.order, self.clock = name, list(gaps), order, clock
        self.X, self.Y = np.zeros(shape[0]), np.zeros(shape[1])
        self.best, self.rounds, self.total, self.used = None, 0, 0, True
        self.converged = self.finished = False

    def start(self, *args, clock=None):
        self.clock = clock

    def advance(self, until):
        self.order.append(self.name)
        self.clock.charge(max(until - self.clock.now(), 0.0))
        gap = self.gaps.pop(0)
        self.rounds = self.total = self.rounds + 1
        self.best = type("Gap", (), dict(primal=1.0 + gap, dual=1.0, gap=gap, rel_gap=gap,
                                         theta=None))()
        self.converged = self.finished = gap == 0.0


def _portfolio_of_fakes(random_problem, monkeypatch, cg_gaps, pdhg_gaps, penalty=("l1", None),
                        second="pdhg"):
    """The portfolio (first slice 0.01 s) run on scripted engines with these gaps: (result,
    the engines' runs in order; the first turn of the engine other than column generation is
    two runs of half the slice each). ``second="ipm"``: the second engine is the interior
    point's lane (predicted 0.025 s: the same first slice), with the gaps ``pdhg_gaps``."""
    Phi, y, K = random_problem(1, M=6)
    shape = ((7, K), (len(y), K))
    order = []
    monkeypatch.setattr(acc, "PORTFOLIO_FIRST_SLICE", 0.01)
    monkeypatch.setattr(acc, "_ColumnGeneration",
                        lambda *a, **k: _FakeEngine("cg", cg_gaps, order, shape, k["clock"]))
    if second == "ipm":
        monkeypatch.setattr(acc, "_ipm_predicted", lambda op, geo: 0.025)
        monkeypatch.setattr(acc, "_interior_point",
                            lambda *a, **k: _FakeEngine("ipm", pdhg_gaps, order, shape, k["clock"]))
    else:
        monkeypatch.setattr(acc, "PORTFOLIO_IPM_MAX_S", -1.0)  # PDHG, the second engine
    monkeypatch.setattr(acc, "_WorkingSet", lambda *a, **k: _FakeEngine("pdhg", pdhg_gaps, order, shape))
    return acc.hinge_reg(Phi, y, K, *penalty, lam=1.0, inner="portfolio"), order


def test_portfolio_turns_double_and_the_engine_nearer_to_tol_goes_first(random_problem, monkeypatch):
    r, order = _portfolio_of_fakes(random_problem, monkeypatch, [5.0, 4.0, 3.0, 2.0],
                                   [1.0, 0.5, 0.25, 0.0])
    # cg first (no gap yet), pdhg's first turn in two halves; then pdhg leads on the gap and
    # takes the first turn of each pair (its gap halving per run predicts no early finish)
    assert order == ["cg", "pdhg", "pdhg", "pdhg", "cg", "pdhg"]
    assert r.converged and r.settings["engine"] == "pdhg" and r.n_iter == 4
    # allotments 0.01, 0.02, 0.04 s on the portfolio's clock, each fake turn to its end
    work = r.settings["engine_work"]
    assert work["cg"] == pytest.approx(0.02) and work["pdhg"] == pytest.approx(0.04)


def test_portfolio_gives_pdhg_the_first_turn_for_l12_groups_above_the_cg_size(random_problem,
                                                                           monkeypatch):
    """l12 with groups of more than L12_CG_MAX_GROUP entries: PDHG takes the first turn (its
    gap predicts its finish; on the problems where it wins it certifies within that turn),
    column generation the first turn of the other penalties and of l12 with smaller groups."""
    for penalty, first in ((("l12", acc.L12_CG_MAX_GROUP + 1), "pdhg"),
                           (("l12", acc.L12_CG_MAX_GROUP), "cg"), (("l1inf", 6), "cg")):
        r, order = _portfolio_of_fakes(random_problem, monkeypatch, [0.0], [0.0], penalty)
        assert order == [first]  # it certifies in its first run: the other never starts
        assert r.converged and r.settings["engine"] == first


def test_portfolio_holds_back_pdhg_when_its_gap_predicts_a_late_finish(random_problem, monkeypatch):
    """Column generation leads on the gap; PDHG's gap falls tenfold slower than it would need
    to meet tol (1e-4) within twice column generation's time: once column generation has run
    PORTFOLIO_SLOW_AFTER seconds, PDHG's time is held at PORTFOLIO_SLOW_SHARE of it (its rate is
    known from the two halves of its first turn: its turns at allotments 0.02 and 0.04 s are
    skipped, at 0.08 s it runs to 0.2 x 0.08 = 0.016 s). Without the rule
    (PORTFOLIO_SLOW_AFTER never reached) PDHG takes every turn. The share is 0.2 here: at 0.25,
    a quarter of column generation's 0.04 s is exactly PDHG's 0.01 s, and rounding would
    decide whether PDHG took a turn of no length."""
    monkeypatch.setattr(acc, "PORTFOLIO_SLOW_SHARE", 0.2)
    for after, expect in ((0.01, ["cg", "pdhg", "pdhg", "cg", "cg", "cg", "pdhg", "cg"]),
                          (np.inf, ["cg", "pdhg", "pdhg", "cg", "pdhg", "cg", "pdhg", "cg", "pdhg",
                                    "cg"])):
        monkeypatch.setattr(acc, "PORTFOLIO_SLOW_AFTER", after)
        r, order = _portfolio_of_fakes(random_problem, monkeypatch, [1.0, 0.5, 0.25, 0.1, 0.0],
                                       [100.0, 90.0, 80.0, 70.0, 60.0])
        assert order == expect
        assert r.converged and r.settings["engine"] == "cg"


def test_portfolio_extends_the_turn_of_an_engine_predicted_to_finish(random_problem, monkeypatch):
    """PDHG's gap fell tenfold in the second half of its first turn (0.005 s) and is a decade
    from tol (1e-4): at that rate it meets tol within its own time so far, so it keeps its
    turn and certifies before column generation's next one; the same gaps falling only
    twofold leave it a turn of the allotment, then column generation has its turn first."""
    for pdhg_gaps, expect in (([1e-2, 1e-3, 0.0], ["cg", "pdhg", "pdhg", "pdhg"]),
                              ([1e-2, 5e-3, 2.5e-3, 0.0], ["cg", "pdhg", "pdhg", "pdhg", "cg", "pdhg"])):
        r, order = _portfolio_of_fakes(random_problem, monkeypatch, [5.0, 4.0, 3.0, 2.0], pdhg_gaps)
        assert order == expect
        assert r.converged and r.settings["engine"] == "pdhg"
        # the extension is bounded: PORTFOLIO_EXTEND_CAP times the allotment of 0.02 s
        assert r.settings["engine_work"]["pdhg"] <= acc.PORTFOLIO_EXTEND_CAP * 0.02 + 1e-12


@pytest.mark.parametrize("first", [True, False])
def test_portfolio_gives_an_interior_point_whose_gap_falls_the_first_turn(random_problem,
                                                                          monkeypatch, first):
    """From the second pair of turns on, the interior point goes first once its gap fell
    within a turn, though column generation leads on the gap (PORTFOLIO_IPM_FIRST); without
    the rule the smaller gap goes first. Its gap falls too slowly for an extension here."""
    monkeypatch.setattr(acc, "PORTFOLIO_IPM_FIRST", first)
    r, order = _portfolio_of_fakes(random_problem, monkeypatch, [0.5, 0.4, 0.3, 0.2],
                                   [1.0, 0.9, 0.8, 0.0], second="ipm")
    expect = (["cg", "ipm", "ipm", "ipm", "cg", "ipm"] if first
              else ["cg", "ipm", "ipm", "cg", "ipm", "cg", "ipm"])
    assert order == expect
    assert r.converged and r.settings["engine"] == "ipm"


@pytest.mark.parametrize("extend", [1.0, 1.25])
def test_portfolio_extends_the_interior_points_turn_by_its_own_factor(random_problem,
                                                                      monkeypatch, extend):
    """The interior point's gap, at the rate it fell in the second half of its first turn,
    meets tol (1e-4) in 0.0112 s, its own time so far 0.01 s: it keeps its turn with
    PORTFOLIO_EXTEND_IPM = 1.25 and certifies; with 1.0 column generation, which leads on
    the gap, takes the next turn first (PORTFOLIO_IPM_FIRST off: the gap decides)."""
    monkeypatch.setattr(acc, "PORTFOLIO_IPM_FIRST", False)
    monkeypatch.setattr(acc, "PORTFOLIO_EXTEND_IPM", extend)
    g2 = 1e-4 * np.exp(2.24 * np.log(10.0))  # ln(g2 / tol) / (ln 10 / 0.005) = 0.0112 s
    r, order = _portfolio_of_fakes(random_problem, monkeypatch, [0.01, 0.009, 0.008],
                                   [10.0 * g2, g2, 0.0], second="ipm")
    expect = ["cg", "ipm", "ipm", "ipm"] if extend > 1.12 else ["cg", "ipm", "ipm", "cg", "ipm"]
    assert order == expect
    assert r.converged and r.settings["engine"] == "ipm"


@pytest.mark.skipif(highs.highspy is None, reason="HiGHS' incremental interface is not installed")
@pytest.mark.parametrize("pen,grp,rowgen", [("l1inf", 5, False), ("l12", 3, False), ("l12", 3, True)])
def test_column_generation_on_a_work_clock_makes_the_rounds_of_an_uninterrupted_run(
        random_problem, monkeypatch, pen, grp, rowgen):
    """On a work clock a turn that is already over still ends its master solve: each call
    makes one whole round, and the rounds, their certified gaps and the point are those of an
    uninterrupted run on the wall clock (a simplex paused and resumed takes other pivots); the
    clock has counted their work."""
    from sparsesvm.solvers.accelerated.clock import WorkClock

    if rowgen:
        monkeypatch.setattr(colgen, "ROWGEN_MIN_ROWS", 0)
    Phi, y, K = random_problem(seed=6, L=30, M=15, K=4)
    op, geo = acc._operator(Phi, y, K), make_penalty(pen, grp, 15, K)
    gaps = {"wall": [], "work": []}

    def recorder(name):
        return lambda gr, n_done, X: gaps[name].append(gr.rel_gap)

    full = colgen._ColumnGeneration(op, geo, "reg", 3.0, 1e-6, 1000, None, recorder("wall"))
    full.advance(None)
    clock = WorkClock()
    cg = colgen._ColumnGeneration(op, geo, "reg", 3.0, 1e-6, 1000, None, recorder("work"),
                                  clock=clock)
    calls = 0
    while not cg.finished and calls < 10000:
        cg.advance(clock.now())
        calls += 1
        assert cg.rounds == calls  # one round a call
    assert full.converged and cg.converged and cg.rounds == full.rounds > 2
    assert gaps["work"] == gaps["wall"]
    np.testing.assert_array_equal(cg.X, full.X)
    assert clock.seconds > 0


class _ErraticTime:
    """A ``time`` module whose ``perf_counter`` jumps forward by seeded random steps of up to
    10 ms a call: a machine far slower, and unevenly so."""

    def __init__(self, seed):
        self.rng, self.t = np.random.default_rng(seed), 0.0

    def perf_counter(self):
        self.t += self.rng.uniform(0.0, 0.01)
        return self.t


@pytest.mark.parametrize("second", ["pdhg", "ipm"])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
def test_portfolio_result_does_not_depend_on_the_wall_clock(random_problem, monkeypatch, method,
                                                             second):
    """The portfolio's turns are on its work clock: with every engine's wall clock replaced
    by an erratic one, both engines take the same turns and the fit is the same to the bit.
    (On this noisy problem the wall-clock turns of the previous version paused column
    generation's master solves at other iterations: 7 to 10 rounds, other points.)"""
    from sparsesvm.solvers.accelerated import clock as clock_module

    _second_engine(monkeypatch, second)  # both engines take turns
    Phi, y, K = random_problem(5, L=80, M=60, K=4, labels="random")
    kw = dict(lam=0.2) if method == "hinge-reg" else dict(eta=0.2 * 80)
    solve = acc.hinge_reg if method == "hinge-reg" else acc.hinge_con
    ref = solve(Phi, y, K, "l1", tol=1e-6, inner="portfolio", **kw)
    assert ref.converged and all(w > 0 for w in ref.settings["engine_work"].values())
    for seed in (0, 1):
        fake = _ErraticTime(seed)
        for module in (acc, colgen, clock_module, hinge_ipm):
            monkeypatch.setattr(module, "time", fake)
        r = solve(Phi, y, K, "l1", tol=1e-6, inner="portfolio", **kw)
        for module in (acc, colgen, clock_module, hinge_ipm):
            monkeypatch.setattr(module, "time", time)
        assert r.settings["engine"] == ref.settings["engine"] and r.n_iter == ref.n_iter
        assert r.settings["engine_work"] == ref.settings["engine_work"]
        np.testing.assert_array_equal(r.X, ref.X)
        assert r.objective == ref.objective


def test_portfolio_leaves_the_operators_meter_as_it_found_it(random_problem):
    """The portfolio counts its products through the operator's ``meter``, passes them on to
    a caller's meter, and gives the operator back as it came (a caller's operator, as the
    estimators pass it)."""
    from sparsesvm.model.operator import MulticlassOperator

    Phi, y, K = random_problem(5, L=40, M=30, K=3, labels="random")
    op = MulticlassOperator(Phi, y, K)
    seen = []
    op.meter = seen.append
    r = acc._solve("reg", op, "l1", None, 0.5, 1e-6, 1000, None, False, {"inner": "portfolio"})
    assert r.converged and r.settings["engine_work"]["cg"] > 0
    assert op.meter == seen.append and len(seen) > 0 and set(seen) == {Phi.size * K}
    op.meter = None
    acc._solve("reg", op, "l1", None, 0.5, 1e-6, 1000, None, False, {"inner": "portfolio"})
    assert op.meter is None


def test_portfolio_max_time_stays_a_wall_clock_cap(random_problem, monkeypatch):
    """The turns are on the work clock, the cap is not: with a wall clock that runs 10 ms a
    reading, max_time = 0.2 s stops both engines early (fewer iterations than the run to
    tol), with the certificate of the point returned."""
    from sparsesvm.model.certificates import hinge_reg_gap
    from sparsesvm.model.operator import MulticlassOperator
    from sparsesvm.solvers.accelerated import clock as clock_module

    class Fast:
        t = 0.0

        def perf_counter(self):
            self.t += 0.01
            return self.t

    _second_engine(monkeypatch, "pdhg")
    Phi, y, K = random_problem(5, L=80, M=60, K=4, labels="random")
    full = acc.hinge_reg(Phi, y, K, "l1", lam=0.2, tol=1e-9, inner="portfolio")
    fake = Fast()
    for module in (acc, colgen, clock_module, hinge_ipm):
        monkeypatch.setattr(module, "time", fake)
    r = acc.hinge_reg(Phi, y, K, "l1", lam=0.2, tol=1e-9, inner="portfolio", max_time=0.2)
    assert full.converged and not r.converged
    assert sum(r.settings["engine_work"].values()) < sum(full.settings["engine_work"].values())
    gap = hinge_reg_gap(MulticlassOperator(Phi, y, K), r.X, r.Y, make_penalty("l1", None, 60, K),
                        lam=0.2)
    assert r.objective == pytest.approx(gap.primal, rel=1e-12) and r.rel_gap >= 1e-9
