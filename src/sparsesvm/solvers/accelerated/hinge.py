"""Accelerated, certified solvers for the exact-hinge problems (issue 6).

Same problems as the paper's Algorithms 1 and 2 (spec sections 1-3),
solved to a *certified* accuracy: every stop is decided by the relative
duality gap of the full problem (:mod:`sparsesvm.model.certificates`), so the
result is the exact-hinge optimum to the stated tolerance.

Four inner engines (option ``inner``; the default ``"auto"`` takes
``"cg"`` for l1 and l1inf, and for l12 with groups of at most
:data:`L12_CG_MAX_GROUP` entries and at most :data:`L12_CG_MAX_ROWS` hinge
rows L(K-1), ``"pdhg"`` for the other l12 problems; for l2 ``"qp"`` when
L(K-1) <= :data:`QP_MAX_VARS`, M >= L (then the Gram matrix generically has
full rank) and HiGHS' incremental interface is there, ``"dcd"`` otherwise):

* ``"cg"``: **column generation** over group atoms whose conic hull gives
  the penalty: sign vectors on one group for l1 and l1inf (finitely many:
  the master is exact), unit l2 vectors on one group for l12 (the master
  is then a polyhedral inner approximation of the l12 ball, refined by
  each pricing round: measured, a certified 1e-9 gap in about 30 rounds
  on leukemia with blocks of 5, but slower than PDHG for groups of 10 or
  more entries, whose balls need many more directions, and for large
  masters). The restricted master LP (variables: atom weights,
  biases, hinge values; rows: the L(K-1) hinge constraints) is solved by
  HiGHS' simplex, warm-started across rounds; pricing is the dual-norm
  check of the full dual point T^T Y, which is also the certificate. This
  is the "exact active-set / second-order" variant of the issue: it was
  the only one that reached the targets (see benchmarks/bench_accelerated.py).
* ``"qp"`` (l2 only): the **dual QP in sample space**: L(K-1) off-class
  multipliers (plus the constraint's multiplier for hinge-con), Hessian
  from the Gram matrix Phi Phi^T, solved by HiGHS' QP solver; the weights
  are W = -Phi^T G, the biases minimise the hinge at those weights (an
  LP). Solved with HiGHS' QP regularisation at 1e-12 when M >= L
  (certified gaps of about 1e-10), else, or when that fails, at HiGHS'
  default 1e-7; when the certified gap of the point misses ``tol``, PDHG
  continues from it.
* ``"dcd"`` (l2 only): **dual coordinate descent** on the Crammer-Singer
  dual, one exact block step per sample (liblinear's sequential dual
  method), with the free biases kept exact by the method of multipliers on
  their K equality constraints; hinge-con by a search of the constraint's
  multiplier (see :mod:`sparsesvm.solvers.accelerated.l2dual`); compiled with numba when
  installed. Its cost grows with L like a pass over the data per sweep,
  not with (L(K-1))^2 as the dual QP's.
* ``"pdhg"`` (selectable for all): first-order primal-dual iterations
  with switchable ingredients:

  - **Halpern-restarted PDHG** with reflection (Lu & Yang 2024; restart
    criteria on the fixed-point residual as in PDLP, Applegate et al.
    2021) and **primal-weight updates** at each restart (PDLP):
    tau = s / omega, sigma = s * omega;
  - **diagonal preconditioning** (Pock & Chambolle 2011, alpha = 1), kept
    constant inside each penalty group so the prox stays closed form, the
    step product normalised by the preconditioned operator norm;
  - **working sets** (Blitz / Celer style): PDHG on the features of a
    working set, the dual point checked against all groups, violators
    added; the stopping gap is always the full problem's;
  - for hinge-con the dual step projects exactly onto the sublevel set
    {V : sum_l h_l(V_l) <= eta} (multiplier by a finite, monotone Newton
    iteration on a piecewise-linear convex function) instead of the
    paper's epigraphical splitting.

The returned point for hinge-con is the feasible scaled point theta * X of
the certificate (the constraint holds exactly). Importing this module
registers ``SparseSVC(solver="accelerated", stopping="gap")`` for hinge-reg
and hinge-con.
"""

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from . import l2dual as _l2dual
from ...model.certificates import GroupGeometry, hinge_con_gap, hinge_reg_gap
from ...model.operator import MulticlassOperator
from ...model.projections import _project_simplex
from ..registry import model_parameters, register_solver

__all__ = ["AcceleratedResult", "hinge_reg", "hinge_con", "DEFAULTS"]


def _highs_backend():
    """Incremental HiGHS interface: scipy's bundled one (scipy >= 1.15, silent),
    else the ``highspy`` package, else None (scipy.optimize.linprog is used,
    rebuilding the master each round: same result, slower)."""
    try:
        from scipy.optimize._highspy import _core as core

        core._Highs, core.kHighsInf, core.HighsModelStatus.kOptimal
        return core, core._Highs
    except (ImportError, AttributeError):
        pass
    try:  # pragma: no cover - depends on the environment
        import highspy

        return highspy, highspy.Highs
    except ImportError:  # pragma: no cover
        return None, None


_highspy, _HighsClass = _highs_backend()

#: default settings (chosen by benchmarks/bench_accelerated.py)
DEFAULTS = dict(
    restart="halpern",
    primal_weight=True,
    precondition="none",
    working_set=True,
    reflection=1.0,
    check_every=64,
    inner="auto",
)

#: inner="auto" takes column generation for l12 when a group has at most
#: L12_CG_MAX_GROUP entries and the master has at most L12_CG_MAX_ROWS = L(K-1) rows;
#: measured (benchmarks/bench_accelerated.py --penalties l12, --l12-groups): much
#: faster than PDHG with groups of 5 and 76 or 400 rows, slower with groups of 10
#: or 20, and with groups of 5 but 3800 rows
L12_CG_MAX_GROUP = 5
L12_CG_MAX_ROWS = 1000

#: a restricted working-set problem whose certificate stays infinite (hinge-con: no
#: feasible scaling of the iterate) for this many consecutive checks is abandoned
#: and the working set grown (it may be infeasible: PDHG would then never stop)
WS_MAX_INFEASIBLE_CHECKS = 16

#: first cost of the elastic slack of the hinge-con master (it is multiplied by 10
#: while the slack stays in use with no atom left to price, up to SLACK_COST_MAX)
SLACK_COST_START = 1.0
SLACK_COST_MAX = 1e12

#: largest number of dual variables L(K-1) for which inner="auto" takes the dual QP
#: for l2 (it builds the dense (L(K-1))^2 Hessian: 32 MB at 2000)
QP_MAX_VARS = 2000
#: seconds HiGHS may spend on one dual QP (a safety net: it can stall when the
#: Gram matrix is rank-deficient, which inner="auto" avoids by asking M >= L)
QP_TIME_LIMIT = 30.0


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
        PDHG iterations (all working sets together), master-LP rounds of
        the column generation (inner="cg"), the number of dual QP solves
        (1 or 2, inner="qp") when a QP's point met the tolerance, or the
        sweeps over the samples (inner="dcd").
    converged : bool
        rel_gap <= tol was reached.
    time : float
        Wall time of the solve in seconds (trace recording excluded).
    constraint_violation : float
        max(0, loss(X) - eta) for hinge-con (0 by construction), 0 for hinge-reg.
    trace : dict of 1-D arrays or None
        "iteration" (PDHG iterations or LP rounds so far), "time" (seconds,
        trace bookkeeping excluded), "objective" (of the certified primal
        point), "dual_objective" and "rel_gap" (NaN at checks of a
        restricted working-set problem, whose gap is not the full one),
        "rel_change" (between consecutive recorded iterates) and, with a
        reference, "rel_dist".
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
# dual step of hinge-con (hinge-reg's is projections._project_simplex)
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
    """One (possibly restricted) exact-hinge problem and its PDHG machinery.

    Parameters
    ----------
    op : MulticlassOperator
        The operator T of the (restricted) problem, features (L, M).
    geo : GroupGeometry
        Geometry of the penalty on the M features of ``op``.
    kind : {"reg", "con"}
    par : float
        lambda (reg) or eta (con).
    precondition : {"none", "diag"}
    """

    def __init__(self, op, geo, kind, par, precondition):
        self.op, self.geo = op, geo
        self.kind, self.par = kind, float(par)
        self.L, self.M, self.K = op.n_samples, op.n_features, op.n_classes
        L, K, y = self.L, self.K, op.y_idx
        if precondition == "diag":
            Phi = op.Phi
            absPhi = abs(Phi) if sp.issparse(Phi) else np.abs(Phi)
            # Pock-Chambolle (alpha=1) sums of |T|
            rowsum = 2.0 * (np.asarray(absPhi.sum(axis=1)).ravel() + 1.0)
            E = np.zeros((L, K))
            E[np.arange(L), y] = 1.0
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

    def _precond_norm(self, n_iter=60, rtol=1e-4):
        """||D_y^(1/2) T D_x^(1/2)|| by power iteration (times 1.01)."""
        op = self.op
        rng = np.random.default_rng(0)
        dxW = self.geo.from_groups(np.broadcast_to(self.dx, self.geo.shape))
        sx = np.sqrt(np.vstack([dxW, self.db[None, :]]))  # (M+1, K)
        X = rng.standard_normal((self.M + 1, self.K))
        est = 0.0
        for _ in range(n_iter):
            X /= np.linalg.norm(X)
            X = sx * op.T_adjoint(self.dy[:, None] * op.T(sx * X))
            new = np.sqrt(np.linalg.norm(X))
            if abs(new - est) <= rtol * new:
                est = new
                break
            est = new
        return est * 1.01

    def dual_step(self, Yhat, sig_rows):
        """prox of sigma f* at Yhat; sig_rows (L,) per-row step."""
        if self.kind == "reg":
            return _project_simplex(Yhat + sig_rows[:, None] * self.op.R, self.par)
        U = Yhat / sig_rows[:, None] + self.op.R
        return sig_rows[:, None] * _sublevel_dual_step(U, 1.0 / sig_rows, self.par)

    def certificate(self, X, Y, TX=None):
        """Certified gap (GapResult) of this problem at (X (M+1, K), Y (L, K))."""
        if self.kind == "reg":
            return hinge_reg_gap(self.op, X, Y, self.geo, lam=self.par, TX=TX)
        return hinge_con_gap(self.op, X, Y, self.geo, eta=self.par, TX=TX)


def _pdhg(prob, X, Y, omega, tol, max_iter, deadline, opts, on_check=None):
    """Run (Halpern-restarted) PDHG on prob from (X (M+1, K), Y (L, K)).

    Returns (X, Y, omega, n_iter, last GapResult or None, stop reason).
    The certificate is evaluated every ``opts['check_every']`` iterations on
    the PDHG output; ``on_check(X, Y, gapresult)`` may return True to stop.
    """
    geo, op = prob.geo, prob.op
    s = 0.99 / prob.norm
    halpern = opts["restart"] == "halpern"
    rho = float(opts["reflection"]) if halpern else 0.0
    check_every = int(opts["check_every"])
    pw = bool(opts["primal_weight"])

    def steps(om):
        return (s / om) * prob.dx, (s / om) * prob.db, (s * om) * prob.dy

    def primal_step(X, V):
        Xn = np.empty_like(X)
        Xn[:-1] = geo.prox(X[:-1] - geo.from_groups(tx * geo.to_groups(V[:-1])), tx)
        Xn[-1] = X[-1] - tb * V[-1]
        return Xn

    tx, tb, sy = steps(omega)
    TX = op.T(X)
    X0, Y0, TX0 = X.copy(), Y.copy(), TX.copy()
    k = 0
    r_start = r_prev = None
    total = 0
    last = None
    reason = "max_iter"
    while total < max_iter:
        Xn = primal_step(X, op.T_adjoint(Y))
        TXn = op.T(Xn)
        Yn = prob.dual_step(Y + sy[:, None] * (2.0 * TXn - TX), sy)
        total += 1
        k += 1
        if total % check_every == 0:
            last = prob.certificate(Xn, Yn, TX=TXn)
            if last.rel_gap <= tol or (on_check is not None and on_check(Xn, Yn, last)):
                return Xn, Yn, omega, total, last, "converged"
            if deadline is not None and time.perf_counter() > deadline:
                return Xn, Yn, omega, total, last, "time"
        if not halpern:
            X, Y, TX = Xn, Yn, TXn
            continue
        # fixed-point residual in the PDHG metric
        dX, dY, dT = Xn - X, Yn - Y, TXn - TX
        r2 = ((geo.to_groups(dX[:-1]) ** 2) / tx).sum() + (dX[-1] ** 2 / tb).sum() \
            + ((dY ** 2) / sy[:, None]).sum() - 2.0 * (dY * dT).sum()
        r = np.sqrt(max(r2, 0.0))
        if r_start is None:
            r_start = r
        restart = (r <= 0.2 * r_start) or (r <= 0.8 * r_start and r_prev is not None and r > r_prev) \
            or (k >= 0.36 * total and k > 64)
        r_prev = r
        if restart:
            if pw:
                dx = np.linalg.norm(Xn - X0)
                dy = np.linalg.norm(Yn - Y0)
                if dx > 1e-12 and dy > 1e-12:
                    omega = np.exp(0.5 * np.log(dy / dx) + 0.5 * np.log(omega))
                    tx, tb, sy = steps(omega)
            X, Y, TX = Xn, Yn, TXn
            X0, Y0, TX0 = X.copy(), Y.copy(), TX.copy()
            k = 0
            r_start = r_prev = None
            continue
        c1 = (k) / (k + 1.0)
        c0 = 1.0 / (k + 1.0)
        X = c1 * ((1 + rho) * Xn - rho * X) + c0 * X0
        Y = c1 * ((1 + rho) * Yn - rho * Y) + c0 * Y0
        TX = c1 * ((1 + rho) * TXn - rho * TX) + c0 * TX0
    last = prob.certificate(Xn, Yn, TX=TXn)
    return Xn, Yn, omega, total, last, reason


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


def _operator(Phi, y_idx, n_classes):
    """MulticlassOperator of (Phi, y_idx, n_classes); Phi must be an ndarray or sparse."""
    if not (sp.issparse(Phi) or (isinstance(Phi, np.ndarray) and Phi.ndim == 2)):
        raise ValueError("Phi must be a 2-D ndarray or scipy sparse matrix (n_samples, n_features)")
    return MulticlassOperator(Phi, y_idx, n_classes)


def _checked_settings(opts):
    """:data:`DEFAULTS` overridden by ``opts``, checked (unknown keys and values raise)."""
    settings = dict(DEFAULTS)
    for key, val in opts.items():
        if key not in DEFAULTS:
            raise ValueError(f"unknown option {key!r}; known: {sorted(DEFAULTS)}")
        settings[key] = val
    if settings["inner"] not in ("auto", "cg", "pdhg", "qp", "dcd"):
        raise ValueError("inner must be 'auto', 'cg', 'pdhg', 'qp' or 'dcd', "
                         f"got {settings['inner']!r}")
    if settings["restart"] not in ("halpern", "none"):
        raise ValueError(f"restart must be 'halpern' or 'none', got {settings['restart']!r}")
    if settings["precondition"] not in ("none", "diag"):
        raise ValueError(f"precondition must be 'none' or 'diag', got {settings['precondition']!r}")
    return settings


def _choose_inner(inner, geo, L, M, K):
    """The inner engine: ``inner``, or for ``"auto"`` the one measured best for the
    penalty and size (module docstring); raises if it cannot solve the penalty."""
    if inner == "auto":
        if geo.name in ("l1", "l1inf"):
            inner = "cg"
        elif geo.name == "l12":  # polyhedral atoms approximate small groups' balls well
            small = geo.shape[1] <= L12_CG_MAX_GROUP and L * (K - 1) <= L12_CG_MAX_ROWS
            inner = "cg" if small else "pdhg"
        else:  # the dual QP's Hessian has full rank (generically) when M >= L
            inner = ("qp" if _highspy is not None and L * (K - 1) <= QP_MAX_VARS and M >= L
                     else "dcd")
    if inner == "cg" and geo.name == "l2":
        raise ValueError("inner='cg' needs a norm penalty (l1, l12, l1inf); for l2 use 'qp', "
                         "'dcd' or 'pdhg'")
    if inner in ("qp", "dcd") and geo.name != "l2":
        raise ValueError(f"inner={inner!r} is for penalty 'l2' only, got {geo.name!r}")
    if inner == "qp" and _highspy is None:
        raise ValueError("inner='qp' needs HiGHS' incremental interface (scipy >= 1.15 or highspy)")
    return inner


class _Recorder:
    """The clock and the certificate history of one accelerated solve.

    Parameters
    ----------
    t_start : float
        ``time.perf_counter()`` at the start of the solve.
    trace : bool
        Whether to record the history (:attr:`AcceleratedResult.trace`).
    reference : ndarray (M + 1, K) or None
        For the ``rel_dist`` entries.

    Attributes
    ----------
    n_done : int
        Iterations (or rounds, sweeps, QP solves) done so far: the ``iteration`` entry.
    """

    def __init__(self, t_start, trace, reference):
        self.t_start, self.trace, self.reference = t_start, trace, reference
        self.rec = {"iteration": [], "time": [], "objective": [], "dual_objective": [],
                    "rel_gap": [], "rel_change": []}
        if reference is not None:
            self.rec["rel_dist"] = []
        self.spent = 0.0  # seconds of trace bookkeeping, excluded from the time axis
        self.n_done = 0
        self.prev = None

    def record(self, gr, full, Xc=None):
        """Add the certificate ``gr`` (gap entries NaN unless ``full``) and the point ``Xc``."""
        if not self.trace:
            return
        rec = self.rec
        t0 = time.perf_counter()
        rec["iteration"].append(self.n_done)
        rec["time"].append(t0 - self.t_start - self.spent)
        rec["objective"].append(gr.primal)
        rec["dual_objective"].append(gr.dual if full else np.nan)
        rec["rel_gap"].append(gr.rel_gap if full else np.nan)
        rc = np.nan
        if Xc is not None and self.prev is not None:
            nx = np.linalg.norm(Xc)
            rc = np.linalg.norm(Xc - self.prev) / nx if nx > 0 else np.inf
        rec["rel_change"].append(rc)
        if Xc is not None:
            self.prev = Xc
        if self.reference is not None:
            rec["rel_dist"].append(np.nan if Xc is None else
                                   np.linalg.norm(Xc - self.reference) / np.linalg.norm(self.reference))
        self.spent += time.perf_counter() - t0

    def engine_record(self, gr, n_done, Xc):
        """``record`` as the column generation and the dual coordinate descent call it."""
        self.n_done = n_done
        self.record(gr, True, Xc)

    def result(self, kind, X, Y, best, n_iter, converged, settings):
        """The :class:`AcceleratedResult`; for hinge-con X scaled to the certified feasible point."""
        if kind == "con" and best.theta is not None and np.isfinite(best.theta):
            X = best.theta * X  # the certified feasible point
        elapsed = time.perf_counter() - self.t_start - self.spent
        tr = {k: np.asarray(v, dtype=float) for k, v in self.rec.items()} if self.trace else None
        if tr is not None:
            tr["iteration"] = tr["iteration"].astype(int)
        return AcceleratedResult(X, Y, float(best.primal), float(best.dual), float(best.gap),
                                 float(best.rel_gap), int(n_iter), converged, elapsed, 0.0, tr,
                                 settings)


def _full_gap(op, geo, kind, par, X, Y, TX=None):
    """Certificate of (X, Y) on the whole problem (hinge-reg or hinge-con)."""
    if kind == "reg":
        return hinge_reg_gap(op, X, Y, geo, lam=par, TX=TX)
    return hinge_con_gap(op, X, Y, geo, eta=par, TX=TX)


def _qp_start(op, geo, kind, par, tol, deadline, recorder):
    """The l2 dual QP by HiGHS (inner="qp"): ``(X, Y, certificate or None, done)``.

    Nearly unregularised first (exact when the Gram matrix has full rank; it
    can stall when it has not: skipped for M < L), then HiGHS' default
    regularisation (robust, ~1e-6 accurate). ``done`` when a QP's point meets
    ``tol``; otherwise PDHG finishes from the returned point (zeros if HiGHS failed).
    """
    L, M = op.Phi.shape
    X = np.zeros((M + 1, op.n_classes))
    Y = np.zeros((L, op.n_classes))
    for reg_value in ((1e-12, 1e-7) if M >= L else (1e-7,)):
        left = QP_TIME_LIMIT if deadline is None else deadline - time.perf_counter()
        Yq = _l2_dual_qp(op, kind, par, reg_value, min(left, QP_TIME_LIMIT))
        if Yq is None:
            continue
        W = -op.T_adjoint(Yq)[:-1]
        Xq = np.vstack([W, _best_biases(op, W)[None, :]])
        gq = _full_gap(op, geo, kind, par, Xq, Yq)
        recorder.n_done += 1
        recorder.record(gq, True, Xq.copy())
        if gq.rel_gap <= tol:
            return Xq, Yq, gq, True
        X, Y = Xq, Yq
        if np.isfinite(gq.rel_gap):
            break
    return X, Y, None, False


def _solve(kind, problem, penalty, groups, par, tol, max_iter, max_time, trace, opts,
           reference=None):
    """Shared driver; ``problem`` is a MulticlassOperator or a tuple (Phi, y_idx, n_classes)."""
    t_start = time.perf_counter()
    op = problem if isinstance(problem, MulticlassOperator) else _operator(*problem)
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    K = op.n_classes
    settings = _checked_settings(opts)
    L, M = op.Phi.shape
    geo = GroupGeometry(penalty, groups, M, K)
    inner = settings["inner"] = _choose_inner(settings["inner"], geo, L, M, K)
    deadline = None if max_time is None else t_start + float(max_time)
    if reference is not None:
        reference = np.asarray(reference, dtype=float)
        if reference.shape != (M + 1, K):
            raise ValueError(f"reference must have shape ({M + 1}, {K}), got {reference.shape}")
    recorder = _Recorder(t_start, trace, reference)
    if inner == "cg":
        X, Y, best, n_lp, converged = _column_generation(
            op, geo, kind, par, tol, int(max_iter), deadline, recorder.engine_record)
        return recorder.result(kind, X, Y, best, n_lp, converged, settings)
    if inner == "dcd":
        X, Y, best, n_sw, converged = _l2dual.solve(op, kind, par, tol, int(max_iter), deadline,
                                                    recorder.engine_record)
        return recorder.result(kind, X, Y, best, n_sw, converged, settings)
    X = np.zeros((M + 1, K))
    Y = np.zeros((L, K))
    if inner == "qp":
        X, Y, gq, done = _qp_start(op, geo, kind, par, tol, deadline, recorder)
        if done:
            return recorder.result(kind, X, Y, gq, recorder.n_done, True, settings)
        # HiGHS failed or its tolerances were not enough: PDHG from the QP's point
    ws = _WorkingSet(op, geo, penalty, groups, kind, par, bool(settings["working_set"]))
    X, Y, best, total, converged = ws.run(X, Y, tol, max_iter, deadline, settings, recorder)
    settings["working_set"] = ws.used
    return recorder.result(kind, X, Y, best, total, converged, settings)


class _WorkingSet:
    """PDHG on growing sets of feature units (blocks or features) until the full problem's gap meets tol.

    Parameters
    ----------
    op : MulticlassOperator
    geo : GroupGeometry
    penalty, groups
        As given to :func:`hinge_reg` (for the restricted problems' geometry).
    kind : {"reg", "con"}
    par : float
        lambda or eta.
    working_set : bool
        False, or penalty l2: one PDHG run on the full problem (:attr:`used` False).
    """

    def __init__(self, op, geo, penalty, groups, kind, par, working_set):
        self.op, self.geo, self.penalty, self.groups = op, geo, penalty, groups
        self.kind, self.par = kind, par
        self.used = working_set and geo.name != "l2"
        L, M = op.Phi.shape
        self.M = M
        self.n_units = geo.nb if geo.layout == "blocks" else M
        if self.used:
            # initial working set from a dual guess: a = r (times lambda / (K - 1) for hinge-reg)
            a0 = op.R * (par / (op.n_classes - 1) if kind == "reg" else 1.0)
            scores = _unit_scores(geo, op.T_adjoint(a0)[:-1])
            n0 = int(min(self.n_units, max(8, L // 4)))
            self.units = np.sort(np.argsort(-scores)[:n0])
        else:
            self.units = np.arange(self.n_units)

    def restricted(self, cols, full, precondition):
        """The restricted problem on feature columns ``cols``: ``(operator, _Problem)``."""
        op, K = self.op, self.op.n_classes
        op_s = op if full else MulticlassOperator(op.Phi[:, cols], op.y_idx, K)
        geo_s = self.geo if full else GroupGeometry(self.penalty, self.groups, len(cols), K)
        return op_s, _Problem(op_s, geo_s, self.kind, self.par, precondition)

    def run(self, X, Y, tol, max_iter, deadline, settings, recorder):
        """PDHG on the working set, grown until the full gap meets ``tol``, ``max_iter``
        iterations are spent, or the deadline passes.

        Returns
        -------
        X (M + 1, K), Y (L, K), best : GapResult of the full problem, total : int, converged : bool
        """
        M, K, kind, par = self.M, self.op.n_classes, self.kind, self.par
        omega = None
        best = None
        total = 0
        converged = False
        while True:
            cols = _unit_columns(self.geo, self.units)
            full = len(cols) == M
            rows = np.append(cols, M)  # restricted weights and the biases
            op_s, prob = self.restricted(cols, full, settings["precondition"])
            if omega is None:
                # dual scale / primal scale at the first guess
                ydual = par if kind == "reg" else 1.0
                omega = ydual * prob.norm
            inner_tol = tol if full else max(0.5 * tol, 0.3 * (best.rel_gap if best is not None else 1.0))
            on_check = _CheckHook(recorder, total, rows, full, (M + 1, K))
            Xs, Y, omega, nit, gr, reason = _pdhg(
                prob, X[rows], Y, omega, inner_tol, max_iter - total, deadline, settings, on_check)
            total += nit
            recorder.n_done = total
            X = np.zeros((M + 1, K))
            X[rows] = Xs
            if full:
                best = gr
            else:  # the full problem's gap (T X is the restricted one's: X is 0 off the set)
                best = _full_gap(self.op, self.geo, kind, par, X, Y, TX=op_s.T(Xs))
            recorder.record(best, True, X.copy() if recorder.trace else None)
            if best.rel_gap <= tol:
                converged = True
                break
            if total >= max_iter or reason == "time" or full:
                break
            self.grow(Y)
        return X, Y, best, total, converged

    def grow(self, Y):
        """Add to the working set the units whose dual scores the dual point ``Y`` violates."""
        geo, units = self.geo, self.units
        sc = _unit_scores(geo, self.op.T_adjoint(Y)[:-1])
        inside = np.zeros(self.n_units, dtype=bool)
        inside[units] = True
        ref = sc[inside].max() if geo.name != "l2" else 0.0
        cand = np.flatnonzero(~inside & (sc > ref * (1 - 1e-9)))
        n_add = max(len(units), 8)
        if len(cand) == 0:
            cand = np.flatnonzero(~inside)
        add = cand[np.argsort(-sc[cand])[:n_add]]
        self.units = np.sort(np.concatenate([units, add]))


class _CheckHook:
    """PDHG's ``on_check`` on a working set: records the check, and stops a restricted
    problem whose certificate stayed infinite for :data:`WS_MAX_INFEASIBLE_CHECKS` checks
    (a restricted hinge-con problem can be infeasible: no scaling of its iterates meets
    the constraint; the working set is then grown)."""

    def __init__(self, recorder, n_done, rows, full, shape):
        self.recorder, self.n_done, self.rows, self.full, self.shape = recorder, n_done, rows, full, shape
        self.n_infinite = 0

    def __call__(self, Xs, Yc, gr):
        self.recorder.n_done = self.n_done
        if self.recorder.trace:
            Xc = np.zeros(self.shape)
            Xc[self.rows] = Xs
            self.recorder.record(gr, self.full, Xc)
        self.n_infinite = self.n_infinite + 1 if not np.isfinite(gr.rel_gap) else 0
        return not self.full and self.n_infinite >= WS_MAX_INFEASIBLE_CHECKS


def hinge_reg(Phi, y_idx, n_classes, penalty="l1", groups=None, lam=1.0, tol=1e-4,
              max_iter=100000, max_time=None, trace=False, reference=None, **options):
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
        Cap on PDHG iterations (all working sets together), on the rounds
        of column generation, or on the sweeps over the samples (dcd).
    max_time : float, optional
        Wall-clock cap in seconds.
    trace : bool
        Record the certificate history in ``result.trace``.
    reference : ndarray (M+1, K), optional
        With ``trace``, also record ``rel_dist`` = ||X_i - ref|| / ||ref||.
    **options
        Override :data:`DEFAULTS`: inner ("auto"; "cg": column generation
        with an LP master, l1, l12 and l1inf; "qp": dual QP, l2 only;
        "dcd": dual coordinate descent, l2 only; "pdhg"; see the module
        docstring), restart
        ("halpern"|"none"), primal_weight (bool), precondition
        ("none"|"diag"), working_set (bool), reflection (float in [0, 1]),
        check_every (int).

    Returns
    -------
    AcceleratedResult
    """
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    return _solve("reg", (Phi, y_idx, n_classes), penalty, groups, lam, tol, max_iter,
                  max_time, trace, options, reference)


def hinge_con(Phi, y_idx, n_classes, penalty="l1", groups=None, eta=1.0, tol=1e-4,
              max_iter=100000, max_time=None, trace=False, reference=None, **options):
    """Accelerated solver of hinge-con: min g(W) s.t. sum_l h_l((T X)_l) <= eta.

    Parameters are those of :func:`hinge_reg` with ``eta`` (> 0) for ``lam``.
    The returned X is feasible (scaled as in the certificate).

    Returns
    -------
    AcceleratedResult
    """
    if not eta > 0:
        raise ValueError(f"eta must be > 0, got {eta}")
    return _solve("con", (Phi, y_idx, n_classes), penalty, groups, eta, tol, max_iter,
                  max_time, trace, options, reference)


# ---------------------------------------------------------------------------
# atomic column generation with an exact LP master (l1, l1inf)
def _atom_entries(geo, gid):
    """(j, k) index arrays of the entries of group gid (padding dropped) and their slots."""
    n1, s, n2 = geo.shape
    i1, i2 = divmod(int(gid), n2)
    flat = i1 * s * n2 + np.arange(s) * n2 + i2
    j, k = np.divmod(flat, geo.K)
    keep = j < geo.M
    return j[keep], k[keep], np.flatnonzero(keep)


class _Master:
    """Restricted master LP of the column generation (min over b, xi, atoms c >= 0).

    Rows: S_atoms + b_k - b_{z_l} - xi_l <= -1 for every (l, k != z_l); for
    hinge-con also sum_l xi_l - s <= eta with an elastic slack s >= 0 of
    cost ``big`` (an exact penalty once big exceeds the constraint's optimal
    multiplier: W = 0 is infeasible for eta < L). ``big`` starts at
    :data:`SLACK_COST_START` and is raised by the column generation only
    when pricing finds no atom while the slack is still used: HiGHS'
    tolerances are absolute, so a slack cost orders of magnitude above the
    atoms' unit cost makes the simplex misjudge the problem (with 1e6 it
    reported the bounded master of load_digits, hinge-con l1, as
    unbounded). Uses highspy incrementally (warm-started primal simplex)
    when it is installed, scipy's linprog (HiGHS, rebuilt each time)
    otherwise.
    """

    def __init__(self, L, K, y, ll, kk, kind, par, big=None):
        big = SLACK_COST_START if big is None else big
        self.L, self.K, self.kind, self.par, self.big = L, K, kind, float(par), float(big)
        self.nh = len(ll)
        nh = self.nh
        # base columns: b (K), xi (L), [s]
        rows = [np.arange(nh), np.arange(nh), np.arange(nh)]
        cols = [kk, y[ll], K + ll]
        vals = [np.ones(nh), -np.ones(nh), -np.ones(nh)]
        self.nbase = K + L + (1 if kind == "con" else 0)
        self.cost = np.concatenate([np.zeros(K), np.full(L, self.par if kind == "reg" else 0.0)])
        self.lb = np.concatenate([np.full(K, -np.inf), np.zeros(L)])
        nrow = nh
        self.rub = -np.ones(nh)
        if kind == "con":
            rows += [np.full(L, nh), np.array([nh])]
            cols += [K + np.arange(L), np.array([K + L])]
            vals += [np.ones(L), -np.ones(1)]
            self.cost = np.append(self.cost, self.big)
            self.lb = np.append(self.lb, 0.0)
            nrow += 1
            self.rub = np.append(self.rub, self.par)
        self.nrow = nrow
        self.base = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                                  shape=(nrow, self.nbase))
        self.atom_cols = []
        self.h = None
        if _highspy is not None:
            h = _HighsClass()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("primal_feasibility_tolerance", 1e-10)
            h.setOptionValue("dual_feasibility_tolerance", 1e-10)
            h.setOptionValue("threads", 1)
            h.setOptionValue("presolve", "off")
            h.setOptionValue("solver", "simplex")
            h.setOptionValue("simplex_strategy", 4)  # primal simplex: warm start after adding columns
            inf = _highspy.kHighsInf
            B = self.base
            h.addCols(self.nbase, self.cost, np.where(np.isinf(self.lb), -inf, self.lb),
                      np.full(self.nbase, inf), 0, np.zeros(self.nbase, dtype=np.int32),
                      np.zeros(0, dtype=np.int32), np.zeros(0))
            Br = B.tocsr()
            h.addRows(nrow, np.full(nrow, -inf), self.rub, Br.nnz, Br.indptr[:-1].astype(np.int32),
                      Br.indices.astype(np.int32), Br.data.astype(float))
            self.h = h

    def raise_big(self, factor=10.0):
        """Multiply the cost of the elastic slack of hinge-con by ``factor``."""
        self.big *= factor
        self.cost[-1] = self.big
        if self.h is not None:
            self.h.changeColCost(self.nbase - 1, self.big)

    def add(self, cols):
        """Append atom columns (list of (nh,) arrays, hinge rows only)."""
        if not cols:
            return
        self.atom_cols.extend(cols)
        if self.h is not None:
            C = sp.csc_matrix(np.column_stack(cols))
            if C.shape[0] < self.nrow:
                C = sp.vstack([C, sp.csc_matrix((self.nrow - C.shape[0], C.shape[1]))], format="csc")
            C.sort_indices()
            n = C.shape[1]
            self.h.addCols(n, np.ones(n), np.zeros(n), np.full(n, _highspy.kHighsInf), C.nnz,
                           C.indptr[:-1].astype(np.int32), C.indices.astype(np.int32),
                           C.data.astype(float))

    def _solve_linprog(self):
        na = len(self.atom_cols)
        C = np.column_stack(self.atom_cols) if na else np.zeros((self.nh, 0))
        if C.shape[0] < self.nrow:
            C = np.vstack([C, np.zeros((self.nrow - C.shape[0], na))])
        A = sp.hstack([self.base, sp.csc_matrix(C)], format="csr")
        c = np.concatenate([self.cost, np.ones(na)])
        lb = np.concatenate([self.lb, np.zeros(na)])
        bounds = [(None if np.isinf(v) else v, None) for v in lb]
        res = linprog(c, A_ub=A, b_ub=self.rub, bounds=bounds, method="highs",
                      options={"primal_feasibility_tolerance": 1e-10,
                               "dual_feasibility_tolerance": 1e-10})
        if res.status != 0 or res.x is None:
            raise RuntimeError(f"master LP failed: {res.message}")
        return res.x, -np.asarray(res.ineqlin.marginals)

    def _solve_incremental(self):
        """Warm-started primal simplex; on numerical trouble a cold dual simplex."""
        opt = _highspy.HighsModelStatus.kOptimal
        self.h.run()
        if self.h.getModelStatus() != opt:
            self.h.clearSolver()
            self.h.setOptionValue("simplex_strategy", 1)
            self.h.run()
            self.h.setOptionValue("simplex_strategy", 4)
            if self.h.getModelStatus() != opt:
                return None
        sol = self.h.getSolution()
        return np.asarray(sol.col_value), -np.asarray(sol.row_dual)

    def solve(self):
        """Returns (atom weights c, b, row multipliers >= 0, slack s)."""
        K, L = self.K, self.L
        out = self._solve_incremental() if self.h is not None else None
        if out is None:  # no incremental HiGHS, or it failed twice: rebuild with linprog
            out = self._solve_linprog()
        x, mult = out
        slack = float(x[K + L]) if self.kind == "con" else 0.0
        return x[self.nbase:], x[:K].copy(), np.maximum(mult, 0.0), slack


def _column_generation(op, geo, kind, par, tol, max_rounds, deadline, record):
    """Solve hinge-reg / hinge-con for l1, l1inf and l12 by column generation.

    The penalty is the atomic norm of group atoms: sign vectors on one group
    for l1 / l1inf, unit l2 vectors on one group for l12. The restricted
    master LP over the generated atoms is solved exactly (HiGHS simplex,
    warm-started); pricing uses the full dual V = T^T Y: the best atom of
    group g is -sign(V_g) (l1, l1inf) or -V_g / ||V_g||_2 (l12), with reduced
    cost 1 - (dual norm of V_g). Stops when the certified gap of the full
    problem is <= tol (for l12 the master only approximates the ball from
    inside, so the gap closes in the limit, not in finitely many rounds).

    Returns (X (M+1, K), Y (L, K), last GapResult, rounds, converged).
    """
    Phi, y, K = op.Phi, op.y_idx, op.n_classes
    L, M = Phi.shape
    ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
    pricing = _Pricing(op, geo, ll, kk)
    master = _Master(L, K, y, ll, kk, kind, par)
    best = None
    X = np.zeros((M + 1, K))
    Y = np.zeros((L, K))
    rnd = 0
    for rnd in range(max_rounds):
        X, Y, a, slack = pricing.master_point(master, kind, par)
        best = _full_gap(op, geo, kind, par, X, Y)
        record(best, rnd, X)
        if best.rel_gap <= tol:
            return X, Y, best, rnd + 1, True
        if deadline is not None and time.perf_counter() > deadline:
            break
        new = pricing.price(a)
        if not new:
            if kind == "con" and slack > 0:
                if master.big >= SLACK_COST_MAX:
                    raise ValueError(
                        f"hinge-con: eta = {par:g} cannot be met: the smallest hinge loss "
                        f"found is {par + slack:g} even with a multiplier of {master.big:g} "
                        "on the constraint (eta is below the loss that the data allow, e.g. "
                        "duplicated samples with different labels)")
                master.raise_big()  # the elastic slack is still used: penalise it more
                continue
            break
        master.add(new)
    return X, Y, best, rnd + 1, False


class _Pricing:
    """The atoms of the column generation: the primal-dual point of a master
    solution, and the pricing of new atoms against the full dual.

    Parameters
    ----------
    op : MulticlassOperator
    geo : GroupGeometry
    ll, kk : int ndarray (L(K-1),)
        The (sample, class) pairs of the master's rows (``kk != y[ll]``).

    Attributes
    ----------
    atoms : list of (gid, slots, sigma)
        The generated atoms, in the order of the master's columns.
    """

    def __init__(self, op, geo, ll, kk):
        self.op, self.geo, self.ll, self.kk = op, geo, ll, kk
        self.ar = np.arange(op.n_samples)
        self.atoms = []
        self.keys = set()

    def master_point(self, master, kind, par):
        """Solve the master: ``(X (M+1, K), Y (L, K), a (L, K) the hinge multipliers, slack)``."""
        geo, op, ll, kk = self.geo, self.op, self.ll, self.kk
        y, L, K = op.y_idx, op.n_samples, op.n_classes
        cw, b, mult, slack = master.solve()
        A = np.zeros(geo.shape)
        for (gid, slots, sig), cv in zip(self.atoms, cw):
            if cv != 0.0:
                i1, i2 = divmod(gid, geo.shape[2])
                A[i1, slots, i2] += cv * sig
        X = np.vstack([geo.from_groups(A), b[None, :]])
        a = np.zeros((L, K))
        a[ll, kk] = mult[:master.nh]
        cap = par if kind == "reg" else max(float(mult[-1]), float(a.sum(axis=1).max()))
        Y = a.copy()
        Y[self.ar, y] = np.maximum(cap - a.sum(axis=1), 0.0)
        return X, Y, a, slack

    def price(self, a):
        """The master columns of the best new atoms of the groups whose dual norm of
        ``V = T^T a`` exceeds 1 (at most ``max(8, n_atoms)``); appended to :attr:`atoms`."""
        geo, op, ar, ll, kk = self.geo, self.op, self.ar, self.ll, self.kk
        Phi, y, K, L = op.Phi, op.y_idx, op.n_classes, op.n_samples
        # T^T a = T^T Y: the true-class entry of a row of Y drops out of T^T
        V = op.T_adjoint(a)[:-1]
        gdn = geo.group_dual_norms(V).ravel()
        order = np.argsort(-gdn)
        n_add = max(8, len(self.atoms))
        new = []
        Vg = geo.to_groups(V)
        for gid in order:
            if gdn[gid] <= 1.0 + 1e-9 or len(new) >= n_add:
                break
            i1, i2 = divmod(int(gid), geo.shape[2])
            js, ks, slots = _atom_entries(geo, gid)
            v = Vg[i1, slots, i2]
            # best atom of the group: the minimiser of <u, V_g> over the unit ball of g_G
            sig = -v / np.sqrt(v @ v) if geo.name == "l12" else -np.sign(v)
            key = (int(gid), sig.tobytes())
            if key in self.keys:
                continue
            self.keys.add(key)
            Pj = Phi[:, js].toarray() if sp.issparse(Phi) else Phi[:, js]
            Sa = np.zeros((K, L))
            np.add.at(Sa, ks, sig[:, None] * Pj.T)
            Sa = Sa.T
            new.append((Sa - Sa[ar, y][:, None])[ll, kk])
            self.atoms.append((int(gid), slots, sig))
        return new


# ---------------------------------------------------------------------------
# l2: the dual QP in sample space, solved exactly by HiGHS' QP solver
def _l2_dual_qp(op, kind, par, regularization=1e-12, time_limit=None):
    """Dual of hinge-reg / hinge-con with g = ||W||_F^2 / 2, as a dense QP.

    Variables a[l, k] >= 0 for k != z_l (n = L(K-1) of them), and nu >= 0
    for hinge-con::

        min  1/2 a^T H a - sum(a) [+ eta * nu]
        s.t. sum_k a[l, k] <= lambda    (hinge-reg)  or  sum_k a[l, k] - nu <= 0
             sum_l G[l, c] = 0 for c = 0..K-2 (biases free; row K-1 is implied)

    with G = a off the true class, G[l, z_l] = -sum_k a[l, k] (G = B a) and
    H = B^T (I_K (x) Phi Phi^T) B, i.e.
    H[(l, k), (m, q)] = (Phi Phi^T)[l, m] ([k = q] - [k = z_m] - [z_l = q] + [z_l = z_m]).
    The primal weights are W = -Phi^T G (the gradient of g* at -T^T Y).

    Parameters
    ----------
    op : MulticlassOperator
    kind : {"reg", "con"}
    par : float
        lambda or eta.
    regularization : float
        HiGHS' ``qp_regularization_value`` (its default, 1e-7, costs about
        1e-7 to 1e-5 of relative accuracy here; 1e-12 gives ~1e-10 gaps when
        the Gram matrix has full rank, but can fail when it does not).
    time_limit : float, optional
        Seconds HiGHS may spend.

    Returns
    -------
    ndarray (L, K) or None
        Y with the off-class entries a and Y[l, z_l] = cap - sum_k a[l, k]
        (cap = lambda, or nu), or None when HiGHS does not report an optimum.
    """
    L, K, y = op.n_samples, op.n_classes, op.y_idx
    ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
    n = len(ll)
    zl = y[ll]
    C = (kk[:, None] == kk[None, :]).astype(float) - (kk[:, None] == zl[None, :]) \
        - (zl[:, None] == kk[None, :]) + (zl[:, None] == zl[None, :])
    H = op.gram()[np.ix_(ll, ll)] * C
    # HiGHS' tolerances are absolute: solve for u = a / s with s H of unit diagonal
    # (objective divided by s: 1/2 u^T (s H) u - sum(u) [+ eta nu / s])
    dmax = float(np.max(np.diag(H))) if n else 0.0
    s = 1.0 / dmax if dmax > 0 else 1.0
    con = kind == "con"
    h = _highs_dual_qp(s * H, L, K, ll, kk, zl, par / s if not con else None, par if con else None,
                       regularization, time_limit)
    h.run()
    if h.getModelStatus() != _highspy.HighsModelStatus.kOptimal:
        return None
    x = s * np.maximum(np.asarray(h.getSolution().col_value), 0.0)
    a = np.zeros((L, K))
    a[ll, kk] = x[:n]
    cap = max(float(x[n]), float(a.sum(axis=1).max())) if con else par
    Y = a
    Y[np.arange(L), y] = np.maximum(cap - a.sum(axis=1), 0.0)
    return Y


def _highs_dual_qp(H, L, K, ll, kk, zl, row_cap, eta, regularization, time_limit):
    """The HiGHS model of :func:`_l2_dual_qp` (scaled), not yet run.

    Parameters
    ----------
    H : ndarray (n, n)
        The scaled Hessian, n = L(K-1) variables ``a[ll, kk]``.
    L, K : int
    ll, kk, zl : int ndarray (n,)
        Sample, class and the sample's true class of each variable.
    row_cap : float or None
        hinge-reg: the (scaled) bound ``lambda / s`` on each row sum; None for hinge-con.
    eta : float or None
        hinge-con: the cost of the extra variable nu (then rows ``sum_k a[l, k] - nu <= 0``).
    regularization, time_limit
        As in :func:`_l2_dual_qp`.

    Returns
    -------
    Highs
    """
    n = len(ll)
    con = eta is not None
    nv = n + (1 if con else 0)
    inf = _highspy.kHighsInf
    h = _HighsClass()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    for opt in ("primal_feasibility_tolerance", "dual_feasibility_tolerance",
                "optimality_tolerance"):
        h.setOptionValue(opt, 1e-10)
    h.setOptionValue("qp_regularization_value", float(regularization))
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-3))
    cost = np.concatenate([-np.ones(n), [eta] if con else []])
    h.addCols(nv, cost, np.zeros(nv), np.full(nv, inf), 0, np.zeros(nv, dtype=np.int32),
              np.zeros(0, dtype=np.int32), np.zeros(0))
    # rows: L row sums, then K-1 bias balances
    A_rows = [ll]
    A_cols = [np.arange(n)]
    A_vals = [np.ones(n)]
    if con:
        A_rows.append(np.arange(L))
        A_cols.append(np.full(L, n))
        A_vals.append(-np.ones(L))
    for c in range(K - 1):  # sum_l G[l, c] = sum_{k = c} a - sum_{z_l = c} a
        sel = (kk == c).astype(float) - (zl == c)
        nz = np.flatnonzero(sel)
        A_rows.append(np.full(len(nz), L + c))
        A_cols.append(nz)
        A_vals.append(sel[nz])
    A = sp.csr_matrix((np.concatenate(A_vals), (np.concatenate(A_rows), np.concatenate(A_cols))),
                      shape=(L + K - 1, nv))
    lo = np.concatenate([np.full(L, -inf), np.zeros(K - 1)])
    up = np.concatenate([np.full(L, 0.0 if con else row_cap), np.zeros(K - 1)])
    h.addRows(L + K - 1, lo, up, A.nnz, A.indptr[:-1].astype(np.int32),
              A.indices.astype(np.int32), A.data.astype(float))
    Hl = sp.csc_matrix(np.tril(H))
    if con:
        Hl = sp.csc_matrix((Hl.data, Hl.indices, np.append(Hl.indptr, Hl.indptr[-1])),
                           shape=(nv, nv))
    Hl.sort_indices()
    h.passHessian(nv, Hl.nnz, _highspy.HessianFormat.kTriangular, Hl.indptr.astype(np.int32),
                  Hl.indices.astype(np.int32), Hl.data.astype(float))
    return h


def _best_biases(op, W):
    """Biases b minimising the hinge loss sum_l h_l at fixed weights W (an LP; sum b = 0).

    Parameters
    ----------
    op : MulticlassOperator
    W : ndarray (M, K)

    Returns
    -------
    ndarray (K,)
    """
    L, K, y = op.n_samples, op.n_classes, op.y_idx
    S = np.asarray(op.Phi @ W)
    ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
    nh = len(ll)
    # b_k - b_{z_l} - xi_l <= -(S[l, k] - S[l, z_l] + 1)
    A = sp.csr_matrix((np.concatenate([np.ones(nh), -np.ones(nh), -np.ones(nh)]),
                       (np.tile(np.arange(nh), 3), np.concatenate([kk, y[ll], K + ll]))),
                      shape=(nh, K + L))
    rhs = -(S[ll, kk] - S[ll, y[ll]] + 1.0)
    c = np.concatenate([np.zeros(K), np.ones(L)])
    res = linprog(c, A_ub=A, b_ub=rhs, A_eq=np.concatenate([np.ones(K), np.zeros(L)])[None, :],
                  b_eq=[0.0], bounds=[(None, None)] * K + [(0, None)] * L, method="highs")
    if res.status != 0 or res.x is None:
        return np.zeros(K)
    return res.x[:K]


# ---------------------------------------------------------------------------
# plug into SparseSVC(solver="accelerated", stopping="gap")
def _estimator_adapter(method):
    """``run(op, penalty, alpha, **)`` -> SolverResult for :data:`sparsesvm.solvers.registry.SOLVERS`."""

    def run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace, reference, stopping):
        from ...solvers import SolverResult

        if stopping != "gap":
            raise ValueError(f"solver 'accelerated' supports stopping='gap' only, got {stopping!r}")
        name, par = model_parameters(method, alpha, op.n_samples)
        kind = {"lam": "reg", "eta": "con"}[name]
        if not par > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        r = _solve(kind, op, penalty.name, penalty.groups, par, tol, max_iter, None,
                   bool(trace), {}, reference)
        return SolverResult(r.X, r.n_iter, r.converged, r.objective, r.constraint_violation,
                            r.time, r.trace, rel_gap=float(r.rel_gap))

    return run


register_solver("accelerated", {m: _estimator_adapter(m) for m in ("hinge-reg", "hinge-con")},
                ("gap",))
