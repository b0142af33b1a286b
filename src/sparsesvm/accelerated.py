"""Accelerated primal-dual solvers for the exact-hinge problems.

Same problems as the paper's Algorithms 1 and 2 (spec sections 1-3), solved
to a *certified* accuracy (relative duality gap, :mod:`sparsesvm.certificates`).
Ingredients (each switchable, see :func:`hinge_reg`):

* **Halpern-restarted PDHG** with reflection (Lu & Yang 2024, "restarted
  Halpern PDHG"; restart criteria on the fixed-point residual as in PDLP,
  Applegate et al. 2021) and **primal-weight updates** at each restart
  (PDLP): tau = s / omega, sigma = s * omega.
* **Diagonal preconditioning** (Pock & Chambolle 2011, alpha = 1), kept
  constant inside each penalty group so the prox stays closed form; the
  product of steps is then normalised by the norm of the preconditioned
  operator (power iteration).
* **Working sets** (column generation with a duality-gap check, as in
  Blitz / Celer for the Lasso): PDHG runs on the features of a working set
  of groups; the dual point is checked against *all* groups; violating
  groups are added. The final gap is always the gap of the full problem,
  so the result is the exact-hinge optimum to the certified tolerance.
* For hinge-con the dual step projects onto the sublevel set
  {V : sum_l h_l(V_l) <= eta} exactly (Lagrange multiplier found by a
  finite, monotone Newton iteration on a piecewise-linear convex
  function) instead of the paper's epigraphical splitting.

The returned point for hinge-con is the feasible scaled point theta * X of
the certificate (constraint satisfied exactly).
"""

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .certificates import (
    GroupGeometry,
    apply_T,
    apply_T_adjoint,
    feasible_scaling,
    hinge_con_gap,
    hinge_reg_gap,
    offset,
)

import os

_DEBUG = bool(os.environ.get("SPARSESVM_DEBUG"))

__all__ = ["AcceleratedResult", "hinge_reg", "hinge_con", "DEFAULTS"]

#: default settings (chosen by benchmarks/bench_accelerated.py)
DEFAULTS = dict(
    restart="halpern",
    primal_weight=True,
    precondition="none",
    working_set=True,
    reflection=1.0,
    check_every=64,
)


@dataclass
class AcceleratedResult:
    """Output of the accelerated solvers.

    Attributes
    ----------
    X : ndarray (M+1, K)
        Solution (last row = biases); for hinge-con the feasible scaled point.
    Y : ndarray (L, K)
        Dual iterate.
    objective : float
        Primal objective at X (g + lambda*loss, or g for hinge-con).
    dual_objective : float
        Certified lower bound on the optimum.
    gap, rel_gap : float
        objective - dual_objective and gap / dual_objective.
    n_iter : int
        PDHG iterations (all working sets together).
    converged : bool
        rel_gap <= tol was reached.
    time : float
        Wall time of the solve in seconds (trace recording excluded).
    constraint_violation : float
        max(0, loss(X) - eta) for hinge-con (0 by construction), 0 for hinge-reg.
    trace : dict of 1-D arrays or None
        "iteration", "time", "objective", "dual_objective", "rel_gap"
        at every full certificate evaluation.
    settings : dict
        The ingredients used.
    """

    X: np.ndarray
    Y: np.ndarray
    objective: float
    dual_objective: float
    gap: float
    rel_gap: float
    n_iter: int
    converged: bool
    time: float
    constraint_violation: float = 0.0
    trace: dict = None
    settings: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------
# projections used by the dual step
def _proj_simplex_rows(V, rad):
    """Row-wise projection of V (L, K) onto {u >= 0, sum u = rad}."""
    L, K = V.shape
    U = -np.sort(-V, axis=1)
    css = np.cumsum(U, axis=1) - rad
    j = np.arange(1, K + 1, dtype=float)
    rho = np.maximum((U * j > css).sum(axis=1), 1)
    theta = css[np.arange(L), rho - 1] / rho
    return np.maximum(V - theta[:, None], 0.0)


def _sublevel_dual_step(U, w, eta):
    """Dual step of hinge-con: returns D = max(U - t, 0) row-wise.

    With U = V + r, t_l solves sum_k max(U_lk - t_l, 0) = nu * w_l and the
    common nu >= 0 makes sum_l t_l = eta (t_l = max_k U_lk, D = 0, when the
    point already satisfies the constraint). V - D is then the projection
    of V onto {sum_l h_l <= eta} in the metric sum_l ||.||^2 / w_l.

    Parameters
    ----------
    U : ndarray (L, K)
    w : ndarray (L,) or float, > 0
    eta : float

    Returns
    -------
    ndarray (L, K)
    """
    L, K = U.shape
    Us = -np.sort(-U, axis=1)
    if Us[:, 0].sum() <= eta:
        return np.zeros_like(U)
    cs = np.cumsum(Us, axis=1)
    j = np.arange(1, K + 1, dtype=float)
    cb = cs - j * Us  # breakpoints c_j (non-decreasing in j), c_1 = 0
    w = np.broadcast_to(np.asarray(w, dtype=float), (L,))
    ar = np.arange(L)
    nu = 0.0
    tol = 1e-13 * (abs(eta) + np.abs(Us[:, 0]).sum())
    for _ in range(200):
        c = nu * w
        jj = (cb <= c[:, None]).sum(axis=1)  # >= 1
        t = (cs[ar, jj - 1] - c) / jj
        F = t.sum() - eta
        if F <= tol:
            break
        dF = -(w / jj).sum()
        nu_new = nu - F / dF
        if not nu_new > nu:
            break
        nu = nu_new
    return np.maximum(U - t[:, None], 0.0)


# ---------------------------------------------------------------------------
class _Problem:
    """One (possibly restricted) exact-hinge problem and its PDHG machinery."""

    def __init__(self, Phi, y, K, geo, kind, par, precondition):
        self.Phi, self.y, self.K, self.geo = Phi, y, K, geo
        self.kind, self.par = kind, float(par)
        self.L, self.M = Phi.shape
        self.ar = np.arange(self.L)
        self.R = offset(y, K)
        self.PhiT = Phi.T.tocsr() if sp.issparse(Phi) else np.ascontiguousarray(Phi.T)
        L, M = self.L, self.M
        if precondition == "diag":
            absPhi = abs(Phi) if sp.issparse(Phi) else np.abs(Phi)
            # Pock-Chambolle (alpha=1) sums of |T|
            rowsum = 2.0 * (np.asarray(absPhi.sum(axis=1)).ravel() + 1.0)
            E = np.zeros((L, K))
            E[self.ar, y] = 1.0
            colW = np.asarray(absPhi.T @ (1.0 - E)) + (K - 1) * np.asarray(absPhi.T @ E)
            colW = np.maximum(colW, 1e-12)
            colb = np.maximum((L - E.sum(axis=0)) + (K - 1) * E.sum(axis=0), 1e-12)
            cg = geo.to_groups(colW)
            self.dx = 1.0 / cg.max(axis=1, keepdims=True)  # (n1,1,n2)
            self.db = 1.0 / colb
            self.dy = 1.0 / rowsum  # (L,)
        else:
            self.dx = np.ones(geo.step_shape())
            self.db = np.ones(K)
            self.dy = np.ones(L)
        self.norm = self._precond_norm()

    # operators on (W, b) / Y
    def T(self, W, b):
        S = self.Phi @ W
        S = np.asarray(S) + b
        return S - S[self.ar, self.y][:, None]

    def Tt(self, Y):
        G = Y.copy()
        G[self.ar, self.y] -= Y.sum(axis=1)
        return np.asarray(self.PhiT @ G), G.sum(axis=0)

    def _dxW(self):
        return self.geo.from_groups(np.broadcast_to(self.dx, self.geo.shape))

    def _precond_norm(self, n_iter=60, rtol=1e-4):
        rng = np.random.default_rng(0)
        sx = np.sqrt(self._dxW())
        sb = np.sqrt(self.db)
        sy = np.sqrt(self.dy)[:, None]
        W = rng.standard_normal((self.M, self.K))
        b = rng.standard_normal(self.K)
        est = 0.0
        for _ in range(n_iter):
            nrm = np.sqrt((W * W).sum() + b @ b)
            W, b = W / nrm, b / nrm
            Z = sy * self.T(sx * W, sb * b)
            V, beta = self.Tt(sy * Z)
            W, b = sx * V, sb * beta
            new = np.sqrt(np.sqrt((W * W).sum() + b @ b))
            if abs(new - est) <= rtol * new:
                est = new
                break
            est = new
        return est * 1.01

    def dual_step(self, Yhat, sig_rows):
        """prox of sigma f* at Yhat; sig_rows (L,) per-row step."""
        if self.kind == "reg":
            return _proj_simplex_rows(Yhat + sig_rows[:, None] * self.R, self.par)
        U = Yhat / sig_rows[:, None] + self.R
        return sig_rows[:, None] * _sublevel_dual_step(U, 1.0 / sig_rows, self.par)

    def certificate(self, W, b, Y, TX=None):
        X = np.vstack([W, b[None, :]])
        if self.kind == "reg":
            return hinge_reg_gap(self.Phi, self.y, self.K, X, Y, self.geo, lam=self.par, TX=TX)
        return hinge_con_gap(self.Phi, self.y, self.K, X, Y, self.geo, eta=self.par, TX=TX)


def _pdhg(prob, W, b, Y, omega, tol, max_iter, deadline, opts, on_check=None):
    """Run (Halpern-restarted) PDHG on prob from (W, b, Y).

    Returns (W, b, Y, omega, n_iter, last GapResult or None, stop reason).
    The certificate is evaluated every ``opts['check_every']`` iterations on
    the PDHG output; ``on_check(W, b, Y, gapresult)`` may return True to stop.
    """
    geo = prob.geo
    s = 0.99 / prob.norm
    halpern = opts["restart"] == "halpern"
    rho = float(opts["reflection"]) if halpern else 0.0
    check_every = int(opts["check_every"])
    pw = bool(opts["primal_weight"])

    def steps(om):
        return (s / om) * prob.dx, (s / om) * prob.db, (s * om) * prob.dy

    tx, tb, sy = steps(omega)
    TX = prob.T(W, b)
    W0, b0, Y0, TX0 = W.copy(), b.copy(), Y.copy(), TX.copy()
    k = 0
    r_start = r_prev = None
    total = 0
    last = None
    reason = "max_iter"
    while total < max_iter:
        V, beta = prob.Tt(Y)
        Wn = geo.prox(W - geo.from_groups(tx * geo.to_groups(V)), tx)
        bn = b - tb * beta
        TXn = prob.T(Wn, bn)
        Yn = prob.dual_step(Y + sy[:, None] * (2.0 * TXn - TX), sy)
        total += 1
        k += 1
        if total % check_every == 0:
            last = prob.certificate(Wn, bn, Yn, TX=TXn)
            if last.rel_gap <= tol or (on_check is not None and on_check(Wn, bn, Yn, last)):
                return Wn, bn, Yn, omega, total, last, "converged"
            if deadline is not None and time.perf_counter() > deadline:
                return Wn, bn, Yn, omega, total, last, "time"
        if not halpern:
            W, b, Y, TX = Wn, bn, Yn, TXn
            continue
        # fixed-point residual in the PDHG metric
        dW, db_, dY, dT = Wn - W, bn - b, Yn - Y, TXn - TX
        r2 = ((geo.to_groups(dW) ** 2) / tx).sum() + (db_ ** 2 / tb).sum() \
            + ((dY ** 2) / sy[:, None]).sum() - 2.0 * (dY * dT).sum()
        r = np.sqrt(max(r2, 0.0))
        if r_start is None:
            r_start = r
        restart = (r <= 0.2 * r_start) or (r <= 0.8 * r_start and r_prev is not None and r > r_prev) \
            or (k >= 0.36 * total and k > 64)
        r_prev = r
        if restart:
            if pw:
                dx = np.sqrt(((Wn - W0) ** 2).sum() + ((bn - b0) ** 2).sum())
                dy = np.sqrt(((Yn - Y0) ** 2).sum())
                if dx > 1e-12 and dy > 1e-12:
                    omega = np.exp(0.5 * np.log(dy / dx) + 0.5 * np.log(omega))
                    tx, tb, sy = steps(omega)
            W, b, Y, TX = Wn, bn, Yn, TXn
            W0, b0, Y0, TX0 = W.copy(), b.copy(), Y.copy(), TX.copy()
            k = 0
            r_start = r_prev = None
            continue
        c1 = (k) / (k + 1.0)
        c0 = 1.0 / (k + 1.0)
        W = c1 * ((1 + rho) * Wn - rho * W) + c0 * W0
        b = c1 * ((1 + rho) * bn - rho * b) + c0 * b0
        Y = c1 * ((1 + rho) * Yn - rho * Y) + c0 * Y0
        TX = c1 * ((1 + rho) * TXn - rho * TX) + c0 * TX0
    last = prob.certificate(Wn, bn, Yn, TX=TXn)
    return Wn, bn, Yn, omega, total, last, reason


# ---------------------------------------------------------------------------
def _unit_scores(geo, V):
    """Score of each working-set unit (block of features, or feature) from V (M, K)."""
    if geo.name == "l2":
        return np.abs(V).max(axis=1)
    return geo.group_dual_norms(V).max(axis=1)


def _unit_columns(geo, units):
    """Feature columns of the sorted units."""
    if geo.layout == "blocks":
        s = geo.gsize
        cols = (units[:, None] * s + np.arange(s)[None, :]).ravel()
        return cols[cols < geo.M]
    return units


def _validate(Phi, y_idx, n_classes, tol, max_iter):
    if sp.issparse(Phi):
        Phi = Phi.tocsr().astype(float)
    elif isinstance(Phi, np.ndarray) and Phi.ndim == 2:
        Phi = np.ascontiguousarray(Phi, dtype=float)
    else:
        raise ValueError("Phi must be a 2-D ndarray or scipy sparse matrix (n_samples, n_features)")
    L, M = Phi.shape
    y = np.asarray(y_idx)
    if y.shape != (L,) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y_idx must be an int array of shape ({L},)")
    K = int(n_classes)
    if K < 2 or y.min() < 0 or y.max() >= K:
        raise ValueError(f"y_idx must lie in 0..n_classes-1 with n_classes >= 2 (n_classes={K})")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    return Phi, y.astype(np.intp), K


def _solve(kind, Phi, y_idx, n_classes, penalty, groups, par, tol, max_iter, max_time,
           trace, opts):
    t_start = time.perf_counter()
    Phi, y, K = _validate(Phi, y_idx, n_classes, tol, max_iter)
    settings = dict(DEFAULTS)
    for key, val in opts.items():
        if key not in DEFAULTS:
            raise ValueError(f"unknown option {key!r}; known: {sorted(DEFAULTS)}")
        settings[key] = val
    if settings["restart"] not in ("halpern", "none"):
        raise ValueError(f"restart must be 'halpern' or 'none', got {settings['restart']!r}")
    if settings["precondition"] not in ("none", "diag"):
        raise ValueError(f"precondition must be 'none' or 'diag', got {settings['precondition']!r}")
    L, M = Phi.shape
    geo = GroupGeometry(penalty, groups, M, K)
    deadline = None if max_time is None else t_start + float(max_time)
    rec = {"iteration": [], "time": [], "objective": [], "dual_objective": [], "rel_gap": []}
    spent = [0.0]  # seconds of trace bookkeeping, excluded from the time axis
    n_done = [0]

    def record(gr, full):
        if trace:
            t0 = time.perf_counter()
            rec["iteration"].append(n_done[0])
            rec["time"].append(t0 - t_start - spent[0])
            rec["objective"].append(gr.primal)
            rec["dual_objective"].append(gr.dual if full else np.nan)
            rec["rel_gap"].append(gr.rel_gap if full else np.nan)
            spent[0] += time.perf_counter() - t0

    W = np.zeros((M, K))
    b = np.zeros(K)
    Y = np.zeros((L, K))
    R = offset(y, K)
    # initial dual guess (for the working set and the primal weight)
    a0 = R.copy()
    if kind == "reg":
        a0 *= par / (K - 1)
    G0 = a0.copy()
    G0[np.arange(L), y] = -a0.sum(axis=1)
    V0 = np.asarray(Phi.T @ G0)
    use_ws = bool(settings["working_set"]) and geo.name != "l2"
    n_units = geo.nb if geo.layout == "blocks" else M
    if use_ws:
        scores = _unit_scores(geo, V0)
        n0 = int(min(n_units, max(8, L // 4)))
        units = np.sort(np.argsort(-scores)[:n0])
    else:
        units = np.arange(n_units)
    omega = None
    best = None
    total = 0
    converged = False
    while True:
        cols = _unit_columns(geo, units)
        full = len(cols) == M
        Phi_s = Phi if full else Phi[:, cols]
        geo_s = geo if full else GroupGeometry(penalty, groups, len(cols), K)
        prob = _Problem(Phi_s, y, K, geo_s, kind, par, settings["precondition"])
        if omega is None:
            # dual scale / primal scale at the first guess
            ydual = par if kind == "reg" else 1.0
            omega = ydual * prob.norm
        inner_tol = tol if full else max(0.5 * tol, 0.3 * (best.rel_gap if best is not None else 1.0))

        def on_check(Wc, bc, Yc, gr):
            n_done[0] = total
            record(gr, full)
            return False

        Ws, bs, Ys, omega, nit, gr, reason = _pdhg(
            prob, W[cols], b, Y, omega, inner_tol, max_iter - total, deadline, settings, on_check)
        total += nit
        n_done[0] = total
        W = np.zeros((M, K))
        W[cols] = Ws
        b, Y = bs, Ys
        if full:
            best = gr
        else:
            X = np.vstack([W, b[None, :]])
            TX = prob.T(Ws, bs)
            if kind == "reg":
                best = hinge_reg_gap(Phi, y, K, X, Y, geo, lam=par, TX=TX)
            else:
                best = hinge_con_gap(Phi, y, K, X, Y, geo, eta=par, TX=TX)
        record(best, True)
        if _DEBUG:
            print(f"[ws] units={len(units)} cols={len(cols)} nit={nit} total={total} reason={reason} "
                  f"inner={gr.rel_gap:.3e} P={best.primal:.6g} D={best.dual:.6g} full={best.rel_gap:.3e} "
                  f"omega={omega:.3g} norm={prob.norm:.3g} t={time.perf_counter() - t_start:.2f}")
        if best.rel_gap <= tol:
            converged = True
            break
        if total >= max_iter or reason == "time" or full:
            break
        # add the groups that the dual point violates
        Gc = Y.copy()
        Gc[np.arange(L), y] -= Y.sum(axis=1)
        V = np.asarray(Phi.T @ Gc)
        sc = _unit_scores(geo, V)
        inside = np.zeros(n_units, dtype=bool)
        inside[units] = True
        ref = sc[inside].max() if geo.name != "l2" else 0.0
        cand = np.flatnonzero(~inside & (sc > ref * (1 - 1e-9)))
        n_add = max(len(units), 8)
        if len(cand) == 0:
            cand = np.flatnonzero(~inside)
        add = cand[np.argsort(-sc[cand])[:n_add]]
        units = np.sort(np.concatenate([units, add]))
    # returned point
    X = np.vstack([W, b[None, :]])
    viol = 0.0
    if kind == "con":
        theta = best.theta
        if theta is not None and np.isfinite(theta):
            X = theta * X
    elapsed = time.perf_counter() - t_start - spent[0]
    tr = {k: np.asarray(v, dtype=float) for k, v in rec.items()} if trace else None
    if tr is not None:
        tr["iteration"] = tr["iteration"].astype(int)
    settings["working_set"] = use_ws
    return AcceleratedResult(X, Y, float(best.primal), float(best.dual), float(best.gap),
                             float(best.rel_gap), int(total), converged, elapsed, viol, tr,
                             settings)


def hinge_reg(Phi, y_idx, n_classes, penalty="l1", groups=None, lam=1.0, tol=1e-4,
              max_iter=100000, max_time=None, trace=False, **options):
    """Accelerated solver of hinge-reg: min g(W) + lam * sum_l h_l((T X)_l).

    Parameters
    ----------
    Phi : ndarray (L, M) or scipy sparse
        Features (without the constant column; biases are free).
    y_idx : int array (L,)
        Class indices 0..K-1.
    n_classes : int
        K.
    penalty : {"l1", "l2", "l12", "l1inf"}
    groups : None, int or "features"
    lam : float
        lambda > 0 (the experiments use 1/alpha).
    tol : float
        Target certified relative duality gap (P - D) / D.
    max_iter : int
        Cap on PDHG iterations (all working sets together).
    max_time : float, optional
        Wall-clock cap in seconds.
    trace : bool
        Record the certificate history in ``result.trace``.
    **options
        Override :data:`DEFAULTS`: restart ("halpern"|"none"),
        primal_weight (bool), precondition ("none"|"diag"),
        working_set (bool), reflection (float in [0, 1]), check_every (int).

    Returns
    -------
    AcceleratedResult
    """
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    return _solve("reg", Phi, y_idx, n_classes, penalty, groups, lam, tol, max_iter,
                  max_time, trace, options)


def hinge_con(Phi, y_idx, n_classes, penalty="l1", groups=None, eta=1.0, tol=1e-4,
              max_iter=100000, max_time=None, trace=False, **options):
    """Accelerated solver of hinge-con: min g(W) s.t. sum_l h_l((T X)_l) <= eta.

    Parameters are those of :func:`hinge_reg` with ``eta`` (> 0) for ``lam``.
    The returned X is feasible (scaled as in the certificate).

    Returns
    -------
    AcceleratedResult
    """
    if not eta > 0:
        raise ValueError(f"eta must be > 0, got {eta}")
    return _solve("con", Phi, y_idx, n_classes, penalty, groups, eta, tol, max_iter,
                  max_time, trace, options)
