"""Tests of the interior-point engine on the whole exact-hinge LP
(sparsesvm.solvers.accelerated.hinge_ipm): its Newton system against a dense solve of the
same system written out row by row, its optimum against CVXPY/Clarabel, its certificate,
its stops, its work-clock charges, and its place in the engine portfolio."""

import cvx_reference as cr
import numpy as np
import pytest

from sparsesvm.model.operator import MulticlassOperator
from sparsesvm.model.penalties import make_penalty
from sparsesvm.solvers.accelerated import clock as clk
from sparsesvm.solvers.accelerated import hinge as acc
from sparsesvm.solvers.accelerated import hinge_ipm

PENALTIES = [("l1", None), ("l1inf", 3), ("l1inf", "features")]


def _dense_rows(lp):
    """The LP's rows written out as a dense matrix A over x = [W (M K), b (K), t (G), xi (L)]:
    the hinge rows, each weight's two bound rows in turn, hinge-con's row last."""
    st, L, M, K = lp.st, lp.L, lp.M, lp.K
    G = st.n_groups
    n = M * K + K + G + L
    Phi = lp.op.Phi
    rows = []
    for i, k, z in zip(st.li, st.ki, st.zi):  # hinge rows
        a = np.zeros(n)
        a[np.arange(M) * K + k] += Phi[i]
        a[np.arange(M) * K + z] -= Phi[i]
        a[M * K + k] += 1.0
        a[M * K + z] -= 1.0
        a[M * K + K + G + i] = -1.0
        rows.append(a)
    for e in range(M * K):  # bound rows W_e - t_g <= 0, -W_e - t_g <= 0
        g = st.gid.ravel()[e]
        for sign in (1.0, -1.0):
            a = np.zeros(n)
            a[e] = sign
            a[M * K + K + g] = -1.0
            rows.append(a)
    if lp.con:
        a = np.zeros(n)
        a[M * K + K + G:] = 1.0
        rows.append(a)
    return np.array(rows)


def _stacked(lp, v, pair):
    """A per-row quantity of the iterate (or direction) ``v`` in :func:`_dense_rows`' order:
    ``pair`` names its hinge, bound (two) and constraint entries, e.g. ("sh", "s1", "s2", "sc")."""
    h, b1, b2, c = pair
    parts = [np.ravel(v[h]), np.stack([np.ravel(v[b1]), np.ravel(v[b2])], axis=1).ravel()]
    if lp.con:
        parts.append(np.atleast_1d(v[c]))
    return np.concatenate(parts)


def _dense_system(lp, v):
    """The Newton matrix ``A^T diag(y / s) A + diag(z / xi)`` at the iterate ``v``, written
    out densely (:func:`_dense_rows`)."""
    A = _dense_rows(lp)
    d = _stacked(lp, v, ("yh", "y1", "y2", "yc")) / _stacked(lp, v, ("sh", "s1", "s2", "sc"))
    H = A.T @ (d[:, None] * A)
    n = A.shape[1]
    xi = slice(n - lp.L, n)
    H[xi, xi] += np.diag(v["z"] / v["xi"])
    return H


def _random_iterate(lp, rng, spread):
    """An interior iterate with slacks and multipliers spread over ``spread`` orders of
    magnitude (as near an optimum), and a few large groups (which the border takes)."""
    v = hinge_ipm._start(lp)
    for key in ("sh", "s1", "s2", "yh", "y1", "y2", "xi", "z"):
        v[key] = 10.0 ** rng.uniform(-spread / 2, spread / 2, np.shape(v[key]))
    v["t"] = 10.0 ** rng.uniform(-3, 0, np.shape(v["t"]))
    if lp.con:
        v["sc"], v["yc"] = 0.3, 2.0
    return v


@pytest.mark.parametrize("border", [True, False])
@pytest.mark.parametrize("kind", ["reg", "con"])
@pytest.mark.parametrize("pen,grp", PENALTIES)
def test_newton_system_matches_a_dense_solve(random_problem, monkeypatch, pen, grp, kind, border):
    """The sample-space solve (arrow blocks, Woodbury on the hinge rows, the border of xi, the
    biases and the large groups' weights) gives the solution of the Newton system written
    out densely, up to the biases' common shift."""
    if not border:
        monkeypatch.setattr(hinge_ipm, "BORDER_MAX", 0)
    Phi, y, K = random_problem(3, L=9, M=7, K=3)
    op = MulticlassOperator(Phi, y, K)
    lp = hinge_ipm._HingeLP(op, make_penalty(pen, grp, 7, K), kind, 1.5)
    rng = np.random.default_rng(0)
    v = _random_iterate(lp, rng, spread=6)
    lp.factor(v)
    assert (len(lp.bflat) > 0) == border
    M, G, L = lp.M, lp.st.n_groups, lp.L
    gW, gb, gt, gxi = (rng.standard_normal((M, K)), rng.standard_normal(K),
                       rng.standard_normal(G), rng.standard_normal(L))
    gb -= gb.mean()  # consistent with the biases' null direction
    dW, db, dt, dxi, e1, e2 = lp.solve(gW, gb, gt, gxi)
    H = _dense_system(lp, v)
    g = np.concatenate([gW.ravel(), gb, gt, gxi])
    x = np.linalg.lstsq(H, g, rcond=1e-14)[0]
    ours = np.concatenate([dW.ravel(), db, dt, dxi])
    shift = np.zeros_like(x)
    shift[M * K:M * K + K] = 1.0
    x += shift * (ours - x)[M * K:M * K + K].mean()  # the same common shift of the biases
    np.testing.assert_allclose(ours, x, rtol=1e-7, atol=1e-9 * np.abs(x).max())
    np.testing.assert_allclose(H @ ours, g, rtol=0, atol=1e-8 * np.abs(g).max())
    # the bound rows' values, given apart, are those of the direction
    tg = dt[lp.st.gid]
    np.testing.assert_allclose(e1, dW - tg, rtol=0, atol=1e-9 * np.abs(x).max())
    np.testing.assert_allclose(e2, -dW - tg, rtol=0, atol=1e-9 * np.abs(x).max())


@pytest.mark.parametrize("L", [5, 8, 41])
def test_border_forward_solve_by_blocks_matches_a_triangular_solve(random_problem, L):
    """The border's forward solve by blocks of samples (xi's columns from their sample's first
    hinge row on) equals a dense triangular solve, with fewer samples than blocks, as many,
    and more (uneven blocks)."""
    import scipy.linalg as sl

    Phi, y, K = random_problem(1, L=L, M=6, K=3)
    op = MulticlassOperator(Phi, y, K)
    lp = hinge_ipm._HingeLP(op, make_penalty("l1inf", 3, 6, K), "reg", 1.0)
    m = len(lp.st.li)
    rng = np.random.default_rng(1)
    A = rng.standard_normal((m, m))
    chol = np.linalg.cholesky(A @ A.T + m * np.eye(m))
    B = np.hstack([lp.st.B0 * rng.uniform(0.5, 2.0, lp.st.B0.shape),
                   rng.standard_normal((m, 4))])  # xi's and the biases' columns, 4 weights
    for C in (chol, np.asfortranarray(chol)):
        V = lp._forward_border(C, B)
        np.testing.assert_allclose(V, sl.solve_triangular(chol, B, lower=True),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pen,grp", [("l1", None), ("l1inf", 3)])
def test_s_is_assembled_and_factored_in_one_array_from_iteration_to_iteration(
        random_problem, monkeypatch, pen, grp):
    """Within classes, S (its lower triangle) is assembled into the array of the last
    iteration and factored in place there: no new (m, m) array an iteration; the factor is
    S's at each of two iterates."""
    Phi, y, K = random_problem(2, L=12, M=7, K=3)
    op = MulticlassOperator(Phi, y, K)
    lp = hinge_ipm._HingeLP(op, make_penalty(pen, grp, 7, K), "reg", 1.5)
    assembled = []
    gram_rows = hinge_ipm._HingeLP._gram_rows

    def spy(self, *args):
        out = gram_rows(self, *args)
        assembled.append(out.copy())
        return out

    monkeypatch.setattr(hinge_ipm._HingeLP, "_gram_rows", spy)
    rng = np.random.default_rng(3)
    arrays = []
    for _ in range(2):
        v = _random_iterate(lp, rng, spread=4)
        lp.factor(v)
        S = assembled[-1]
        assert not np.triu(S, 1).any()  # the lower triangle alone
        arrays.append(lp._S)
        assert np.shares_memory(lp.chol, lp._S)
        S[np.diag_indices_from(S)] += v["sh"] / v["yh"]
        S[np.diag_indices_from(S)] *= 1.0 + hinge_ipm.REGULARISATION
        S = np.tril(S) + np.tril(S, -1).T
        np.testing.assert_allclose(lp.chol @ lp.chol.T, S, rtol=1e-10,
                                   atol=1e-12 * np.abs(S).max())
    assert arrays[0] is arrays[1]


def test_border_wider_than_the_hinge_rows_waits_for_an_inaccurate_direction(random_problem):
    """A border wider than the L(K - 1) hinge rows (its own factor would cost more than S's) is
    left out (``border_cut``), up to BORDER_MAX once the limit is raised (both factors solve
    the Newton system: the dense solve's test above); in a run, the first direction whose
    refined residual exceeds WIDEN_RESIDUAL raises it, and the iterations reach a 1e-8 gap
    on this problem (without the widening they stall at 1e-6)."""
    Phi, y, K = random_problem(0, L=8, M=40, K=3, labels="random")  # 16 hinge rows, 120 weights
    op = MulticlassOperator(Phi, y, K)
    geo = make_penalty("l1inf", 2, 40, K)
    lp = hinge_ipm._HingeLP(op, geo, "reg", 0.7)
    v = _random_iterate(lp, np.random.default_rng(0), spread=6)
    v["t"][:] = 1.0  # every group among the border's candidates
    lp.factor(v)
    assert lp.border_limit == 16 and len(lp.bflat) == 0 and lp.border_cut
    lp.border_limit = hinge_ipm.BORDER_MAX
    lp.factor(v)
    assert len(lp.bflat) == 120 and not lp.border_cut
    clock = clk.WorkClock()
    eng = acc._interior_point(op, geo, "reg", 0.7, 1e-8, 100, None, lambda *a: None, clock=clock)
    step, seen = eng._iterate, []

    def iterate():
        limit = eng.lp.border_limit
        out = step()
        seen.append((limit, len(eng.lp.bflat), eng.lp.residual))
        return out

    eng._iterate = iterate
    eng.advance()
    assert eng.converged and eng.best.rel_gap <= 1e-8
    widened = [i for i, (limit, _, _) in enumerate(seen) if limit == hinge_ipm.BORDER_MAX]
    assert widened and all(width <= 16 for _, width, _ in seen[:widened[0] - 1])
    assert seen[widened[0] - 1][1] > 16  # the widening iteration was done again with it
    # each iteration charged with the border it had, the widening one twice (without it first)
    def price(width):
        return hinge_ipm.iteration_seconds(8, 40, K, geo.group_shape[0] * geo.group_shape[2],
                                           True, border=width)

    assert clock.seconds == pytest.approx(sum(price(w) for _, w, _ in seen) + price(0), rel=1e-12)
    pstar, _ = cr.solve("hinge-reg", Phi, y, K, "l1inf", 2, lam=0.7)
    X = eng.X
    obj = cr.regulariser_value(X[:-1], "l1inf", 2) + 0.7 * cr.hinge_loss_np(Phi, y, X)
    assert abs(obj - pstar) <= 1e-7 * abs(pstar)


@pytest.mark.parametrize("kind", ["reg", "con"])
@pytest.mark.parametrize("pen,grp", PENALTIES)
def test_centrality_correctors_keep_the_newton_equations_and_lengthen_the_step(
        random_problem, pen, grp, kind):
    """Gondzio's correctors change only the complementarity targets: along the engine's
    iterations, a corrected direction still solves the linearised primal and dual equations
    written out densely (``A dx + ds = -rp`` exactly, ``A^T dy - dz = -rd`` to the unrefined
    corrections' accuracy), and its steps are the largest feasible ones, longer than the
    uncorrected direction's by the required margin; down to a certified gap of 1e-5."""
    Phi, y, K = random_problem(6, L=16, M=9, K=3, labels="random")
    op = MulticlassOperator(Phi, y, K)
    geo = make_penalty(pen, grp, 9, K)
    par = 0.7 if kind == "reg" else 0.5 * len(y)
    eng = hinge_ipm.InteriorPoint(op, geo, kind, par, 1e-12, 40, None, lambda *a: None,
                                  lambda X, Y, TX: acc._full_gap(op, geo, kind, par, X, Y, TX=TX))
    lp, v = eng.lp, eng.v
    A = _dense_rows(lp)
    pairs = hinge_ipm._pairs(lp)
    kept = 0
    eng._check()
    while eng.best.rel_gap > 1e-5:  # the accuracies that the solver is asked for
        rp, rd = hinge_ipm._residuals(lp, v)
        lp.factor(v)
        d, (ap0, ad0), target = hinge_ipm._predictor_corrector(lp, v, rp, rd)
        d0 = {k: np.copy(x) for k, x in d.items()}
        ap, ad = hinge_ipm._centrality_correctors(lp, v, rp, rd, d, ap0, ad0, target)
        assert (ap, ad) == hinge_ipm._steps(lp, v, d)
        for key_s, key_y, _ in pairs:  # feasible steps (the bound reached up to rounding)
            for key, a in ((key_s, ap), (key_y, ad)):
                assert (v[key] + a * d[key] >= -1e-12 * np.abs(v[key])).all()
        if any(not np.array_equal(d[k], d0[k]) for k in d):
            kept += 1
            gain = hinge_ipm.CORRECTOR_GAIN * hinge_ipm.CORRECTOR_REACH
            assert min(ap, ad) >= min(ap0, ad0) + gain
            dx = np.concatenate([d["W"].ravel(), d["b"], d["t"], d["xi"]])
            primal = A @ dx + _stacked(lp, d, ("sh", "s1", "s2", "sc"))
            rhs = -_stacked(lp, rp, ("h", "b1", "b2", "c"))
            np.testing.assert_allclose(primal, rhs, rtol=0,
                                       atol=1e-9 * max(np.abs(A @ dx).max(), np.abs(rhs).max()))
            # the corrections (d - d0) are solved unrefined, through the factor with its primal
            # regularisation: the dual equations hold to a small fraction of their terms (seen:
            # at most 4e-7 on these runs; near certified gaps of 1e-9, not asked here, the
            # refined directions themselves lose all accuracy)
            rhs = -np.concatenate([rd["W"].ravel(), rd["b"], rd["t"], rd["xi"]])
            dy = _stacked(lp, d, ("yh", "y1", "y2", "yc"))
            dual = A.T @ dy
            dual[-lp.L:] -= d["z"]
            terms = np.abs(A.T) @ np.abs(dy) + np.abs(rhs)  # the size of the sums' terms
            terms[-lp.L:] += np.abs(d["z"])
            assert np.abs(dual - rhs).max() <= 1e-5 * terms.max()
        eng._iterate()
        eng.total += 1
        eng._check()
        assert eng.total <= 20
    assert kept > 0


def _solve(Phi, y, K, method, pen, grp, par, tol, **kw):
    if method == "hinge-reg":
        return acc.hinge_reg(Phi, y, K, pen, grp, lam=par, tol=tol, inner="ipm", **kw)
    return acc.hinge_con(Phi, y, K, pen, grp, eta=par, tol=tol, inner="ipm", **kw)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("method", ["hinge-reg", "hinge-con"])
@pytest.mark.parametrize("pen,grp", PENALTIES)
def test_engine_reaches_the_cvxpy_optimum_and_its_certificate_bounds_the_error(
        random_problem, seed, method, pen, grp):
    Phi, y, K = random_problem(seed, L=24, M=15, K=3, labels="random")
    par = 0.7 if method == "hinge-reg" else 0.5 * len(y)
    pstar, Xstar = cr.solve(method, Phi, y, K, pen, grp, **({"lam": par} if method == "hinge-reg"
                                                            else {"eta": par}))
    # 1e-6: asked 1e-9, the method reaches 9e-13 to 3e-8 on these problems for hinge-reg,
    # 3e-10 to 1e-7 for hinge-con (6f70625: its Newton systems grow ill-conditioned first)
    r = _solve(Phi, y, K, method, pen, grp, par, 1e-6)
    assert r.converged and r.rel_gap <= 1e-6 and r.settings["inner"] == "ipm"
    g = cr.regulariser_value(r.X[:-1], pen, grp)  # recomputed without the package
    loss = cr.hinge_loss_np(Phi, y, r.X)
    obj = g + par * loss if method == "hinge-reg" else g
    if method == "hinge-con":
        assert loss <= par * (1 + 1e-9)  # the returned point is feasible
    assert obj == pytest.approx(r.objective, rel=1e-9)
    assert abs(obj - pstar) <= 1e-6 * abs(pstar)
    assert (obj - pstar) / pstar <= r.rel_gap + 1e-8  # the certificate bounds the error
    # exact zeros (_round): the groups zeroed are zero at CVXPY's optimum (at most 1e-6 of its
    # largest group), and all of those but at most one are zeroed
    geo = make_penalty(pen, grp, Phi.shape[1], K)
    ours = geo.to_groups(np.abs(r.X[:-1])).max(axis=1).ravel()
    ref = geo.to_groups(np.abs(np.asarray(Xstar)[:-1])).max(axis=1).ravel()
    small = ref <= 1e-6 * ref.max()
    assert (ours == 0).any() and not (ours == 0)[~small].any()
    assert (ours == 0).sum() >= small.sum() - 1


def test_rounding_to_exact_zeros_keeps_the_certificate(random_problem, monkeypatch):
    """The interior point's last point is rounded to exact zeros only where the certificate
    stays within the tolerance: a threshold that would drop every group but the largest is
    refused (no exact zero), the package's thresholds are not."""
    Phi, y, K = random_problem(0, L=24, M=15, K=3, labels="random")
    r = _solve(Phi, y, K, "hinge-reg", "l1inf", 3, 0.7, 1e-6)
    assert r.converged and np.count_nonzero(r.X[:-1] == 0) > 0
    monkeypatch.setattr(hinge_ipm, "ROUND_THRESHOLDS", (0.99,))
    r2 = _solve(Phi, y, K, "hinge-reg", "l1inf", 3, 0.7, 1e-6)
    assert r2.converged and r2.rel_gap <= 1e-6 and np.count_nonzero(r2.X[:-1] == 0) == 0
    assert r2.objective >= r.objective - 1e-6 * abs(r.objective)


def test_engine_stops_at_max_iter_and_at_the_deadline(random_problem):
    Phi, y, K = random_problem(2, L=30, M=20, K=3, labels="random")
    r = _solve(Phi, y, K, "hinge-reg", "l1inf", 3, 1.0, 1e-12, max_iter=3)
    assert not r.converged and r.n_iter == 3 and np.isfinite(r.rel_gap)
    op = MulticlassOperator(Phi, y, K)
    geo = make_penalty("l1", None, 20, K)
    eng = acc._interior_point(op, geo, "reg", 1.0, 1e-12, 100, 0.0, lambda *a: None)
    eng.advance()
    assert eng.finished and eng.status == "time" and eng.total == 0


def test_engine_serves_only_linear_programs(random_problem):
    Phi, y, K = random_problem(2, L=12, M=8, K=3)
    for pen, grp in (("l12", 2), ("l2", None)):
        with pytest.raises(ValueError, match="inner='ipm' solves l1 and l1inf"):
            acc.hinge_reg(Phi, y, K, pen, grp, lam=1.0, inner="ipm")


def test_engine_charges_its_iterations_to_the_work_clock(random_problem):
    """Each iteration is charged its price (:func:`hinge_ipm.iteration_seconds`, with the
    border it had), its products through the operator's meter: nothing else."""
    Phi, y, K = random_problem(4, L=20, M=12, K=3, labels="random")
    op = MulticlassOperator(Phi, y, K)
    geo = make_penalty("l1inf", 3, 12, K)
    clock = clk.WorkClock()
    borders = []
    eng = acc._interior_point(op, geo, "reg", 1.0, 1e-12, 4, None, lambda *a: None, clock=clock)
    step = eng._iterate

    def iterate():
        out = step()
        borders.append(len(eng.lp.bflat))
        return out

    eng._iterate = iterate
    eng.advance()
    assert eng.total == 4 == len(borders)
    st = eng.lp.st
    price = [hinge_ipm.iteration_seconds(20, 12, K, st.n_groups, True, border=b) for b in borders]
    assert clock.seconds == pytest.approx(sum(price), rel=1e-12)


def test_portfolio_runs_the_interior_point_where_it_is_predicted_cheap(random_problem, monkeypatch):
    """In PDHG's place, from column generation's first slice on; with the prediction above
    PORTFOLIO_IPM_MAX_S, PDHG as before."""
    monkeypatch.setattr(acc, "PORTFOLIO_FIRST_SLICE", 1e-3)
    Phi, y, K = random_problem(5, L=60, M=40, K=4, labels="random")
    r = acc.hinge_reg(Phi, y, K, "l1inf", 4, lam=0.3, tol=1e-6, inner="portfolio")
    assert r.converged and set(r.settings["engine_work"]) == {"cg", "ipm"}
    assert all(w > 0 for w in r.settings["engine_work"].values())
    monkeypatch.setattr(acc, "PORTFOLIO_IPM_MAX_S", 0.0)
    r2 = acc.hinge_reg(Phi, y, K, "l1inf", 4, lam=0.3, tol=1e-6, inner="portfolio")
    assert r2.converged and set(r2.settings["engine_work"]) == {"cg", "pdhg"}
    assert r2.objective == pytest.approx(r.objective, rel=2e-6)


def test_interior_point_lp_is_made_only_where_the_engine_runs(random_problem, monkeypatch):
    """The interior point's LP (its class Gram matrices) is made at its first turn: where
    column generation certifies within its first slice (a small problem), never; where the
    interior point runs, once."""
    made = []
    lp_class = hinge_ipm._HingeLP
    monkeypatch.setattr(hinge_ipm, "_HingeLP", lambda *a: made.append(1) or lp_class(*a))
    Phi, y, K = random_problem(1, M=16)
    r = acc.hinge_reg(Phi, y, K, "l1inf", 3, lam=2.0, tol=1e-6, inner="portfolio")
    assert r.converged and r.settings["engine"] == "cg" and "ipm" in r.settings["engine_work"]
    assert made == []
    r = acc.hinge_reg(Phi, y, K, "l1inf", 3, lam=2.0, tol=1e-6, inner="ipm")
    assert r.converged and made == [1]


def test_portfolio_replaces_a_stalled_interior_point_by_pdhg(random_problem, monkeypatch):
    monkeypatch.setattr(acc, "PORTFOLIO_FIRST_SLICE", 1e-3)
    monkeypatch.setattr(hinge_ipm.InteriorPoint, "_iterate", lambda self: False)  # cannot factor
    Phi, y, K = random_problem(5, L=60, M=40, K=4, labels="random")
    r = acc.hinge_reg(Phi, y, K, "l1inf", 4, lam=0.3, tol=1e-6, inner="portfolio")
    assert r.converged and r.settings["engine"] in ("cg", "pdhg")
    assert set(r.settings["engine_work"]) == {"cg", "ipm", "pdhg"}
    assert r.settings["engine_work"]["pdhg"] > 0


def test_portfolio_first_slice_is_a_share_of_the_interior_points_prediction(random_problem,
                                                                             monkeypatch):
    """Column generation runs alone for PORTFOLIO_IPM_FIRST_SHARE of the interior point's
    predicted time (at most PORTFOLIO_FIRST_SLICE), and for at least PORTFOLIO_IPM_HEAD of it
    (where the interior point is slow: 12 s of a predicted 60 s); above PORTFOLIO_IPM_MAX_S,
    PDHG is the second engine and the first slice PORTFOLIO_FIRST_SLICE."""
    Phi, y, K = random_problem(1, M=6)
    made = []

    class Scripted:  # column generation: certified at the end of its first turn
        def __init__(self, *a, clock=None, **k):
            self.clock, self.best, self.rounds = clock, None, 1
            self.converged = self.finished = False
            self.X, self.Y = np.zeros((7, K)), np.zeros((len(y), K))

        def advance(self, until):
            self.clock.charge(until - self.clock.now())
            self.best = type("Gap", (), dict(primal=1.0, dual=1.0, gap=0.0, rel_gap=0.0,
                                             theta=None))()
            self.converged = self.finished = True

    def second(*a, **k):
        made.append(a)
        return Scripted(clock=k.get("clock"))

    monkeypatch.setattr(acc, "_ColumnGeneration", Scripted)
    monkeypatch.setattr(acc, "_interior_point", second)
    above = acc.PORTFOLIO_IPM_MAX_S + 1.0
    for predicted, first, lane in ((0.4, 0.16, "ipm"), (0.9, 0.36, "ipm"), (2.0, 0.5, "ipm"),
                                   (2.6, 0.52, "ipm"), (60.0, 12.0, "ipm"), (above, 0.5, "pdhg")):
        monkeypatch.setattr(acc, "_ipm_predicted", lambda op, geo, p=predicted: p)
        r = acc.hinge_reg(Phi, y, K, "l1", lam=1.0, inner="portfolio")
        assert r.settings["engine"] == "cg"
        assert r.settings["engine_work"]["cg"] == pytest.approx(first, rel=1e-12)
        assert set(r.settings["engine_work"]) == {"cg", lane}
    assert acc.PORTFOLIO_IPM_FIRST_SHARE == 0.4 and acc.PORTFOLIO_FIRST_SLICE == 0.5
    assert acc.PORTFOLIO_IPM_HEAD == 0.2
    # bench_family's MNIST-like problem of 500 images: predicted 59.6 s, the interior point's
    assert acc.PORTFOLIO_IPM_MAX_S >= 60.0
