"""Exact working-set subproblems of the smooth baselines for l1, l1,2 and l1,inf: conic QPs.

On the ``m`` feature rows of a working set, the problem of
:mod:`~sparsesvm.solvers.accelerated.smooth`,
``min_{W (m, K), b} g(W) + lam * F(P W + 1 b^T)``, is written with score
variables ``s = P W + 1 b^T`` (one equality row per entry of the scores) and
one variable ``t_G >= g_G(W_G)`` per group of the penalty (``g(W) = sum_G t_G``
at the optimum): two linear rows ``t_G >= +-W_e`` per entry for l1 and l1,inf,
one second-order cone ``(t_G, W_G)`` per group for l1,2.

* square: ``min sum t + lam sum xi^2`` with ``xi_lk >= 1 + s_lk - s_lz_l``
  (``k != z_l``), ``xi >= 0``: the problem itself;
* one-vs-all: ``xi_lk >= 1 - y_lk s_lk`` (``y_lk = +-1``), ``xi >= 0``: the same;
* logit: not a QP; each step of a **proximal Newton method** (Lee, Sun and
  Saunders 2014) minimises ``g`` plus the loss' second-order model at the
  current scores, ``lam (G - H S0)^T s + lam/2 s^T H s`` in place of the
  ``xi`` terms (G, H: the loss' gradient and Hessian blocks), then a
  backtracking line search on the true objective. The smooth solver uses it only with
  ``smooth.LOGIT_FISTA`` off: by default logit takes its FISTA path at every size
  (on News20 at L = 200 these steps stalled at a certified gap of 3.0).

They are solved by Clarabel's interior-point method (``clarabel``, the
default solver of CVXPY; an optional dependency: without it the smooth
baselines keep coordinate descent). HiGHS' active-set QP solver, tried first
on the same leukemia subproblems, stalled or stopped at its time limit on 3
of 5 (scipy 1.16's bundled HiGHS 1.12) and on 1 of 2 (highspy 1.16: 33800
iterations in 5 s on 553 variables), where Clarabel took 12 and 20 ms to a
relative gap of 1e-10.

Square and one-vs-all with l1 and l1,inf from :data:`TERMS_MIN_SCORES` scores on are
solved by **term and group generation** (:func:`solve_terms`): QPs that carry
only the hinge terms near activity and the groups near violation, grown until none is
missing.

Raw features (leukemia: entries in the ten thousands, ``W`` about 1e-4) are
scaled by one scalar ``sigma = 1 / max |P|`` (``W = sigma w``; the objective is
divided by sigma), which keeps the group structure and makes the rows'
coefficients at most 1. An interior point is never exactly sparse: entries
below :data:`ZERO` in the scaled weights (1e-9 and less where measured, the
others 1e-2 and more) are set to 0, kept when that does not raise the
objective by more than its rounding.
"""

import time

import numpy as np
import scipy.sparse as sp

try:
    import clarabel
except ImportError:  # pragma: no cover - depends on the environment
    clarabel = None

__all__ = ["available", "terms_available", "solve_subproblem", "solve_terms", "QP_MAX_SCORES",
           "QP_MAX_WEIGHTS", "NEWTON_STEPS", "TERMS_MIN_SCORES", "TERMS_MAX_SCORES", "TERMS_MARGIN",
           "TERMS_ROUNDS"]

#: largest L * K (score variables and equality rows) for which the working-set
#: subproblems are solved as conic QPs; larger problems keep coordinate descent
QP_MAX_SCORES = 5000
#: largest number of weights m * K of a working-set QP: MNIST's M K = 39690, so that
#: a working set of E2/E4's problems may grow to every feature (at 20000, MNIST L = 100
#: l1,inf/81 stalled at certified gaps 0.009-0.24: coordinate descent took over from a
#: working set of 1620 features; at 40000 the three baselines reach 1e-6,
#: ``benchmarks/bench_smooth.py --problems mnist-real``)
QP_MAX_WEIGHTS = 40000
#: proximal Newton steps of logit per subproblem
NEWTON_STEPS = 30
#: Clarabel's feasibility and gap tolerances. At 1e-10, leukemia's square l1inf/5 fit at
#: alpha = 1 stopped at a certified 1.2e-6 for a requested 1e-6 (coordinate descent
#: could not polish further); at 1e-12 it reaches 4.8e-7
#: (``benchmarks/bench_smooth.py --tol 1e-6``)
TOL = 1e-12
#: scaled weights below this are zeros of the model (see the module docstring)
ZERO = 1e-7
#: term generation (:func:`solve_terms`) from this many scores L K on; below, the full QPs.
#: MNIST scattering, l1,inf/81, tol 1e-6 (same run, each path alone): term generation
#: certified square and one-vs-all faster at L = 30 (300 scores) and L = 100; on raw
#: leukemia (L = 38, K = 3: 114 scores; E1's l1 and l1,inf/5 cells) the full QPs were
#: faster (the closing note of issue 13 has the figures)
TERMS_MIN_SCORES = 300
#: term generation: largest number of score variables of its QPs (QP_MAX_SCORES's bound of
#: the full QPs; with a bound of 1500, one-vs-all at MNIST L = 5000 was not certified after
#: 400 s: README, "Deviations", the smooth baselines)
TERMS_MAX_SCORES = QP_MAX_SCORES
#: a hinge term enters the QP when its margin (``1 + s_lk - s_lz`` for square,
#: ``1 - y_lk s_lk`` for one-vs-all) exceeds ``-TERMS_MARGIN`` at the current point, a
#: group when its dual norm exceeds ``1 - TERMS_MARGIN``. 0.1 against 0.3 on MNIST
#: (l1,inf/81, L = 30, 100 and 1000; ``benchmarks/bench_smooth.py --problems mnist-real
#: --terms-margin 0.3``): smaller QPs, faster in five of the six fits of square and
#: one-vs-all, all but square at L = 1000 (README, "Deviations")
TERMS_MARGIN = 0.1
#: most QPs of one term generation
TERMS_ROUNDS = 8
#: Clarabel's KKT solver for term generation's QPs; None: Clarabel's own choice (faer in
#: clarabel 0.11). QDLDL (``--terms-kkt qdldl`` of the same benchmark) was faster for square
#: and slower for one-vs-all at MNIST L = 1000, and took twice as long at L = 5000
#: (one-vs-all; README, "Deviations")
TERMS_KKT = None


def available(geo, n_samples, n_classes):
    """Whether the working-set subproblems of this problem are solved as conic QPs."""
    return (clarabel is not None and geo.name in ("l1", "l12", "l1inf")
            and n_samples * n_classes <= QP_MAX_SCORES)


def terms_available(method, geo, n_samples, n_classes):
    """Whether the working-set subproblems of this problem are solved by term generation
    (:func:`solve_terms`: square and one-vs-all, l1 and l1,inf, at least
    :data:`TERMS_MIN_SCORES` scores) instead of the full QPs of :func:`available`."""
    return (clarabel is not None and method in ("square", "ova") and geo.name in ("l1", "l1inf")
            and n_samples * n_classes >= TERMS_MIN_SCORES)


def _group_entries(geo, m, K):
    """The groups of ``geo`` (made for (m, K)): flat indices into ``W.ravel()`` of every
    entry, its group id (entries sorted by group), and the number of groups."""
    E = np.arange(1, m * K + 1, dtype=np.float64).reshape(m, K)
    G = geo.to_groups(E)                      # (n1, s, n2), padding zero
    n1, s, n2 = G.shape
    A = G.transpose(0, 2, 1).reshape(n1 * n2, s)
    gid, slot = np.nonzero(A)
    return A[gid, slot].astype(np.int64) - 1, gid, n1 * n2


def _score_codes(method, ll, kk, y, K):
    """Sorted codes ``l K + k`` of the scores that the hinge terms ``(ll, kk)`` involve."""
    need = [ll * K + kk] + ([ll * K + y[ll]] if method == "square" else [])
    return np.unique(np.concatenate(need))


def _sel(rows, cols, vals, shape):
    return sp.csr_matrix((vals, (rows, cols)), shape=shape)


class _QP:
    """The conic QP of one working set, in the scaled variables ``[w, b, t, s, xi]``.

    Constraints are Clarabel's ``A x + z = rhs``, ``z`` in the cones (zero cone:
    the scores; non-negative cone: the group rows of l1 / l1inf, the hinges,
    ``xi >= 0``; one second-order cone per group for l12).

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    P : ndarray (L, m)
        The working set's columns of the features.
    y : int ndarray (L,)
    K : int
    geo : Penalty
        The penalty made for (m, K).
    lam : float
    terms : tuple of two int ndarrays, optional
        Square and one-vs-all: the hinge terms ``(l, k)`` the QP carries (default all:
        ``k != y_l`` for square, every ``(l, k)`` for one-vs-all), and then only the
        scores they involve. Leaving out terms that are inactive at the QP's solution
        does not change that solution (they would add 0); see :func:`solve_terms`.
    free : bool ndarray (m, K), optional
        l1 and l1,inf: the weights that are variables (default all); the others are
        fixed at 0 (left out of the QP).
    """

    def __init__(self, method, P, y, K, geo, lam, terms=None, free=None):
        L, m = P.shape
        self.L, self.m, self.K = L, m, K
        pmax = float(np.abs(P).max()) if P.size else 0.0
        self.sigma = 1.0 / pmax if pmax > 0 else 1.0
        self.c = lam / self.sigma            # loss weight once the objective is divided by sigma
        ent, gid, ng = _group_entries(geo, m, K)
        self.wsel = None if free is None else np.flatnonzero(free)
        if free is not None:                 # the free entries and the groups that hold them
            if geo.name == "l12":
                raise ValueError("free weights are for l1 and l1inf")
            keep = np.asarray(free).ravel()[ent]
            ent = np.searchsorted(self.wsel, ent[keep])
            kept, gid = np.unique(gid[keep], return_inverse=True)
            ng = kept.size
        if terms is not None:
            ll, kk = (np.asarray(a, dtype=np.int64) for a in terms)
        elif method == "square":
            ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
        else:
            ll, kk = np.repeat(np.arange(L), K), np.tile(np.arange(K), L)
        # the score variables s_lk: all L K, or those the terms involve (codes l K + k, sorted)
        self.codes = codes = np.arange(L * K) if terms is None else _score_codes(method, ll, kk, y, K)
        nw, ns = m * K if free is None else self.wsel.size, codes.size
        nx = 0 if method == "logit" else ll.size
        self.xs = 1.0 / np.sqrt(self.c)      # xi = xs * zeta: the loss is sum zeta^2
        self.ib, self.it = nw, nw + K
        self.i_s, self.ix = nw + K + ng, nw + K + ng + ns
        self.n = n = self.ix + nx
        # zero cone: s_lk - sigma P_l. w_.k - b_k = 0 (rows of the samples the scores touch)
        Ps = P
        if terms is not None:
            samples, local = np.unique(codes // K, return_inverse=True)
            Ps = P[samples]
        Pw = sp.kron(sp.csr_matrix(-self.sigma * Ps), sp.identity(K), format="csr")
        Pb = sp.kron(sp.csr_matrix(-np.ones((Ps.shape[0], 1))), sp.identity(K), format="csr")
        if terms is not None:
            rows_of = local * K + codes % K
            Pw, Pb = Pw[rows_of], Pb[rows_of]
        if free is not None:
            Pw = Pw.tocsc()[:, self.wsel].tocsr()
        blocks = [sp.hstack([Pw, Pb, sp.csr_matrix((ns, ng)), sp.identity(ns),
                             sp.csr_matrix((ns, nx))], format="csr")]
        rhs = [np.zeros(ns)]
        self.cones = [clarabel.ZeroConeT(ns)]
        n_nonneg = 0
        ne = ent.size
        if geo.name != "l12":                # +-w_e - t_G <= 0
            r = np.arange(2 * ne)
            blocks.append(_sel(np.concatenate([r, r]),
                               np.concatenate([np.tile(ent, 2), self.it + np.tile(gid, 2)]),
                               np.concatenate([np.ones(ne), -np.ones(ne), -np.ones(2 * ne)]),
                               (2 * ne, n)))
            rhs.append(np.zeros(2 * ne))
            n_nonneg += 2 * ne
        if nx:                               # (margin of s) - xs zeta <= -1, -zeta <= 0
            h = np.arange(nx)
            score = self.i_s + np.searchsorted(codes, ll * K + kk)
            if method == "square":
                cols = [score, self.i_s + np.searchsorted(codes, ll * K + y[ll]), self.ix + h]
                vals = [np.ones(nx), -np.ones(nx), np.full(nx, -self.xs)]
            else:
                ypm = np.where(kk == y[ll], 1.0, -1.0)
                cols = [score, self.ix + h]
                vals = [-ypm, np.full(nx, -self.xs)]
            blocks.append(_sel(np.tile(h, len(cols)), np.concatenate(cols),
                               np.concatenate(vals), (nx, n)))
            blocks.append(_sel(h, self.ix + h, -np.ones(nx), (nx, n)))
            rhs += [-np.ones(nx), np.zeros(nx)]
            n_nonneg += 2 * nx
        if n_nonneg:
            self.cones.append(clarabel.NonnegativeConeT(n_nonneg))
        #: Clarabel's statuses whose point is handed to the caller (whose objective check
        #: and certificate judge it)
        self.statuses = ("Solved", "AlmostSolved", "InsufficientProgress")
        if geo.name == "l12":                # (t_G, w_G) in the second-order cone
            # with these cones the residuals stop falling near 1e-9 and Clarabel ends with
            # InsufficientProgress, or NumericalError, on its best point (News20 L = 100,
            # square at E3's best alpha, stalled at a certified gap of 0.67 when
            # NumericalError was refused: README, "Deviations")
            self.statuses += ("NumericalError",)
            starts = np.searchsorted(gid, np.arange(ng))
            sizes = np.diff(np.append(starts, ne))
            rows = np.concatenate([[0], np.cumsum(sizes + 1)[:-1]])  # first row of each cone
            r_t = rows
            r_w = np.repeat(rows + 1, sizes) + (np.arange(ne) - np.repeat(starts, sizes))
            blocks.append(_sel(np.concatenate([r_t, r_w]),
                               np.concatenate([self.it + np.arange(ng), ent]),
                               -np.ones(ng + ne), (ng + ne, n)))
            rhs.append(np.zeros(ng + ne))
            self.cones += [clarabel.SecondOrderConeT(int(d) + 1) for d in sizes]
        self.A = sp.vstack(blocks, format="csc")
        self.rhs = np.concatenate(rhs)
        self.cost = np.concatenate([np.zeros(nw + K), np.ones(ng), np.zeros(ns + nx)])

    def solve(self, lin_s=None, hess_s=None, time_limit=None, kkt=None):
        """Solve; ``lin_s`` (L, K) and ``hess_s`` (L, K, K) the loss model of logit.

        Returns ``(W (m, K), b (K,))``, or None when Clarabel reports no solution.
        """
        L, K = self.L, self.K
        cost = self.cost.copy()
        if lin_s is not None:
            cost[self.i_s:self.i_s + L * K] = self.c * lin_s.ravel()
        st = clarabel.DefaultSettings()
        st.verbose = False
        st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = TOL
        st.max_threads = 1
        if kkt is not None:
            st.direct_solve_method = kkt
        if time_limit is not None:
            st.time_limit = max(float(time_limit), 1e-3)
        res = clarabel.DefaultSolver(self._hessian(hess_s), cost, self.A, self.rhs,
                                     self.cones, st).solve()
        x = np.asarray(res.x)
        if str(res.status).rsplit(".", 1)[-1] not in self.statuses or not np.all(np.isfinite(x)):
            return None
        if self.wsel is None:
            W = self.sigma * x[:self.ib].reshape(self.m, K)
        else:
            W = np.zeros((self.m, K))
            W.ravel()[self.wsel] = self.sigma * x[:self.ib]
        return W, x[self.ib:self.it].copy()

    def _hessian(self, hess_s):
        """Upper triangle (CSC) of the objective's Hessian (scaled by 1 / sigma)."""
        n, L, K = self.n, self.L, self.K
        if hess_s is None:   # square / ova: c * sum xi^2 = sum zeta^2
            d = np.zeros(n)
            d[self.ix:] = 2.0
            return sp.diags(d, format="csc")
        blk = sp.block_diag([np.triu(self.c * Hl) for Hl in hess_s], format="csc")
        return sp.block_diag([sp.csc_matrix((self.i_s, self.i_s)), blk,
                              sp.csc_matrix((n - self.i_s - L * K,) * 2)], format="csc")


def _clean(W, b, P, sigma, objective, f=None):
    """``(W, f)``: ``W`` with its entries below :data:`ZERO` (scaled) set to 0 when that
    does not raise ``objective`` by more than 1e-12 of it, else ``W``; ``f`` the
    objective of the point returned (of ``W`` itself when given)."""
    if f is None:
        f = objective(W, P @ W + b)
    Wc = np.where(np.abs(W) > ZERO * sigma, W, 0.0)
    if not np.any(Wc != W):
        return W, f
    fc = objective(Wc, P @ Wc + b)
    return (Wc, fc) if fc <= f + 1e-12 * abs(f) else (W, f)


def solve_subproblem(method, P, y, K, geo, lam, W0, b0, *, objective, score_grad,
                     score_hessian, inner_tol, certify, deadline):
    """Minimise ``g(W) + lam F(P W + 1 b^T)`` over the working set's rows.

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    P : ndarray (L, m)
        The working set's columns (dense).
    y : int ndarray (L,)
    K : int
    geo : Penalty
        The penalty made for (m, K).
    lam : float
    W0 : ndarray (m, K)
    b0 : ndarray (K,)
        The current point (logit's Newton steps start there).
    objective : callable
        ``objective(W, S) -> float``, the subproblem's objective at weights W and scores S.
    score_grad, score_hessian : callable
        ``(S) -> (L, K)`` and ``(S) -> (L, K, K)``: the loss' gradient and Hessian blocks.
    inner_tol : float
        logit: stop the Newton steps once ``certify(W, S)`` (the subproblem's
        certified relative gap) is at most this.
    certify : callable
    deadline : float
        ``time.perf_counter()`` value after which no new step starts.

    Returns
    -------
    (W (m, K), b (K,), n_qp) or None
        None when the first QP has no solution or its point does not lower the
        objective (the caller then runs coordinate descent).
    """
    qp = _QP(method, P, y, K, geo, lam)
    S0 = P @ W0 + b0
    f0 = objective(W0, S0)
    if method != "logit":
        out = qp.solve()
        if out is None:
            return None
        W, b = out
        W, f = _clean(W, b, P, qp.sigma, objective)
        if f > f0 + 1e-12 * abs(f0):
            return None
        return W, b, 1
    W, b, S, f = W0.copy(), b0.copy(), S0, f0
    gval = geo.weight_value
    n_qp = 0
    while n_qp < NEWTON_STEPS:
        n_qp += 1
        G, H = score_grad(S), score_hessian(S)
        out = qp.solve(G - np.einsum("lkj,lj->lk", H, S), H,
                       time_limit=max(deadline - time.perf_counter(), 1e-3))
        if out is None:
            break
        Wq, bq = out
        dW, db = Wq - W, bq - b
        dS = P @ dW + db
        # prox-Newton decrease: g(W + d) - g(W) + lam <grad F, dS>  (< 0 unless optimal)
        delta = gval(Wq) - gval(W) + lam * float(np.vdot(G, dS))
        if not delta < 0:
            break
        t = 1.0
        while t > 1e-10:
            Wn, bn = W + t * dW, b + t * db
            fn = objective(Wn, S + t * dS)
            if fn <= f + 1e-4 * t * delta:
                break
            t *= 0.5
        else:
            break
        (W, f), b = _clean(Wn, bn, P, qp.sigma, objective, fn), bn
        S = P @ W + b
        if certify(W, S) <= inner_tol or time.perf_counter() > deadline:
            break
    if f >= f0:
        return None
    return W, b, n_qp


def _free_entries(geo, W, V, margin):
    """Weights (bool (m, K)) of the groups that are non-zero in W or whose dual norm of
    ``V`` (the gradient of the loss part) exceeds ``1 - margin``."""
    n1, s, n2 = geo.group_shape
    sel = (np.abs(geo.to_groups(W)).max(axis=1) > 0) | (geo.group_dual_norms(V) > 1.0 - margin)
    return geo.from_groups(np.broadcast_to(sel[:, None, :], (n1, s, n2))).copy()


def solve_terms(method, P, y, K, geo, lam, W0, b0, *, objective, margins, score_grad, deadline):
    """Minimise ``g(W) + lam F(P W + 1 b^T)`` over the working set's rows by **term and
    group generation** (square and one-vs-all, whose loss is a sum of squared hinges; l1
    and l1,inf).

    A hinge term inactive at the solution adds nothing there, and a group that is zero at
    the solution with a dual norm of the loss gradient at most 1 needs no variables; so
    the QP that carries only the active terms and the other groups has the same solution.
    From the terms whose margin exceeds ``-TERMS_MARGIN`` at the current point and the
    groups that are non-zero or whose dual norm exceeds ``1 - TERMS_MARGIN``, a QP
    (:class:`_QP` with ``terms`` and ``free``) is solved; the terms active at its point
    and the groups violated there that were left out are added (with those within
    ``TERMS_MARGIN``), until none is left out (at most :data:`TERMS_ROUNDS` QPs).

    Parameters
    ----------
    method : {"square", "ova"}
    P, y, K, geo, lam, W0, b0, objective
        As in :func:`solve_subproblem`.
    margins : callable
        ``(S) -> (L, K)``: the terms' margins at scores S (``-inf`` where there is no
        term: square's ``k = y_l``).
    score_grad : callable
        ``(S) -> (L, K)``: the loss' gradient.
    deadline : float
        ``time.perf_counter()`` value after which no new QP starts (each QP's own
        time limit).

    Returns
    -------
    (W (m, K), b (K,), n_qp) or None
        None when there are more than :data:`TERMS_MAX_SCORES` near-active scores, when
        a QP has no solution, or when the final point does not lower the objective.
    """
    S0 = P @ W0 + b0
    f0 = objective(W0, S0)
    T = margins(S0) > -TERMS_MARGIN
    free = _free_entries(geo, W0, lam * (P.T @ score_grad(S0)), TERMS_MARGIN)
    n_qp = 0
    while True:
        if not T.any() or time.perf_counter() > deadline:
            return None
        terms = np.nonzero(T)
        if _score_codes(method, *terms, y, K).size > TERMS_MAX_SCORES:
            return None
        qp = _QP(method, P, y, K, geo, lam, terms=terms, free=free)
        out = qp.solve(time_limit=None if deadline == np.inf
                       else max(deadline - time.perf_counter(), 1e-3), kkt=TERMS_KKT)
        n_qp += 1
        if out is None:
            return None
        W, b = out
        W, f = _clean(W, b, P, qp.sigma, objective)
        S = P @ W + b
        m = margins(S)
        V = lam * (P.T @ score_grad(S))
        missing_terms = np.any((m > 0) & ~T)
        missing_groups = np.any(_free_entries(geo, W, V, -1e-9) & ~free)
        if not (missing_terms or missing_groups) or n_qp >= TERMS_ROUNDS:
            break
        T |= m > -TERMS_MARGIN
        free |= _free_entries(geo, W, V, TERMS_MARGIN)
    if f > f0 + 1e-12 * abs(f0):
        return None
    return W, b, n_qp
