"""The restarted PDHG engine of ``solver="accelerated"`` (``inner="pdhg"``).

:class:`_Problem` holds one (possibly restricted) exact-hinge problem with
its diagonal preconditioning, its preconditioned operator norm, its dual step
(the row-wise simplex for hinge-reg, :func:`_sublevel_dual_step` for
hinge-con) and its certificate; :func:`_pdhg` runs Halpern-restarted PDHG with
reflection and primal-weight updates on it (see the module docstring of
:mod:`sparsesvm.solvers.accelerated.hinge` for the ingredients).

Without preconditioning (one step size for all the weights, one for all the dual rows)
the primal step is the compiled fused step of the paper's loops
(:func:`sparsesvm.solvers._kernels.fused_step`), hinge-reg's dual step their compiled
simplex step (:func:`sparsesvm.solvers._kernels.simplex_step`) and hinge-con's the
compiled :func:`sparsesvm.solvers.accelerated._pdhg_jit.sublevel_step`, where numba is
available (:func:`load_kernels`, ``compiled=True``); the numpy steps stay the reference
they are tested against.
"""


import numpy as np
import scipy.sparse as sp

from ...model.certificates import hinge_con_gap, hinge_reg_gap
from ...model.operator import power_norm
from ...model.projections import _project_simplex
from .. import _kernels
from .._kernels import import_compiled
from .clock import WALL, pdhg_iteration_seconds

__all__ = ["_Problem", "_pdhg", "_sublevel_dual_step", "load_kernels"]

_compiled = None


def _pdhg_kernels():
    """:mod:`~sparsesvm.solvers.accelerated._pdhg_jit` (loaded once per process), or None
    without numba or with ``SPARSESVM_NUMBA=0``."""
    global _compiled
    if _compiled is None:
        module = import_compiled("sparsesvm.solvers.accelerated._pdhg_jit") if _kernels.available() else None
        _compiled = module if module is not None else False
    return _compiled or None


def load_kernels():
    """Whether PDHG's compiled steps are available; compiles or loads them (the paper's
    loops' kernels, :func:`sparsesvm.solvers._kernels.available`, and
    :mod:`~sparsesvm.solvers.accelerated._pdhg_jit`)."""
    return _kernels.available() and _pdhg_kernels() is not None


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


class _Problem:
    """One (possibly restricted) exact-hinge problem and its PDHG machinery.

    Parameters
    ----------
    op : MulticlassOperator
        The operator T of the (restricted) problem, features (L, M).
    geo : Penalty
        Geometry of the penalty on the M features of ``op``.
    kind : {"reg", "con"}
    par : float
        lambda (reg) or eta (con).
    precondition : {"none", "diag"}
    compiled : bool
        Take the compiled steps (module docstring) where they apply: ``precondition ==
        "none"``, a penalty of the package's own classes, the kernels available
        (:func:`load_kernels`, called before, off the clock).

    Attributes
    ----------
    fused, simplex, sublevel : callable or None
        The compiled primal step and the compiled dual step of hinge-reg (``simplex``) or
        hinge-con (``sublevel``), None where the numpy step runs.
    kernels : module or None
        :mod:`~sparsesvm.solvers.accelerated._pdhg_jit` where the Halpern iteration's
        residual and average are compiled (with the steps).
    """

    def __init__(self, op, geo, kind, par, precondition, compiled=False):
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
        self.fused = self.simplex = self.sublevel = self.kernels = None
        if compiled and precondition == "none":
            self.kernels = _pdhg_kernels()
            self.fused = _kernels.fused_step(geo, (self.M + 1) * K, force=True)
            if kind == "reg":
                self.simplex = _kernels.simplex_step(L * K, force=True)
            elif self.kernels is not None:
                self.sublevel = self.kernels.sublevel_step

    def _precond_norm(self):
        """||D_y^(1/2) T D_x^(1/2)|| by :func:`~sparsesvm.model.operator.power_norm`, times 1.01."""
        op = self.op
        dxW = self.geo.from_groups(np.broadcast_to(self.dx, self.geo.group_shape))
        sx = np.sqrt(np.vstack([dxW, self.db[None, :]]))  # (M+1, K)
        sy = np.sqrt(self.dy)[:, None]  # (L, 1)
        return 1.01 * power_norm(lambda X: sy * op.T(sx * X), lambda U: sx * op.T_adjoint(sy * U),
                                 (self.M + 1, self.K), max_iter=60, tol=1e-4)

    def dual_step(self, Yhat, sig_rows):
        """prox of sigma f* at Yhat; sig_rows (L,) per-row step (numpy)."""
        if self.kind == "reg":
            return _project_simplex(Yhat + sig_rows[:, None] * self.op.R, self.par)
        U = Yhat / sig_rows[:, None] + self.op.R
        return sig_rows[:, None] * _sublevel_dual_step(U, 1.0 / sig_rows, self.par)

    def certificate(self, X, Y, TX=None):
        """Certified gap (GapResult) of this problem at (X (M+1, K), Y (L, K))."""
        if self.kind == "reg":
            return hinge_reg_gap(self.op, X, Y, self.geo, lam=self.par, TX=TX)
        return hinge_con_gap(self.op, X, Y, self.geo, eta=self.par, TX=TX)


def _pdhg(prob, X, Y, omega, tol, max_iter, until, opts, on_check=None, resume=None, clock=None,
          deadline=None):
    """Run (Halpern-restarted) PDHG on prob from (X (M+1, K), Y (L, K)).

    Returns (X, Y, omega, n_iter, last GapResult or None, stop reason).
    The certificate is evaluated every ``opts['check_every']`` iterations on
    the PDHG output (counted on this problem across paused runs); ``on_check(X, Y,
    gapresult, n_iter)`` (iterations of this run so far) may return True to stop. The
    clock (``clock``: :class:`~sparsesvm.solvers.accelerated.clock.WallClock` by default,
    charged with each iteration) is read after every iteration: past ``until`` (None:
    never), or the wall clock past ``deadline`` (``time.perf_counter()`` time or None), the
    run pauses there (with the certificate of its last output), not at the next check,
    which on a large problem can be seconds away (64 iterations of two products at MNIST's
    L = 5000).

    ``resume``: a dict, or None. A run stopped by the deadline (reason ``"time"``) stores
    its iteration state there (the Halpern anchor and iterate, the restart criterion's
    counts); a later run on the same ``prob`` given that dict goes on from it as if it
    had not stopped (``X``, ``Y`` and ``omega`` are then the state's), instead of
    restarting at the returned point (measured on two dense noisy problems paused at 0.5, 1,
    2, 4, 8 and 16 s: 22-36 % more iterations to the tolerance with a restart at each pause,
    before this state was kept; 0 and 2 % more with it, where a pause's certificate moved
    the working set's next growth).
    """
    geo, op = prob.geo, prob.op
    clock = WALL if clock is None else clock
    # an iteration's work besides its products (which the operator's meter counts)
    step_work = pdhg_iteration_seconds(prob.L, prob.M, prob.K, prob.kind == "con") if clock.counted else 0.0
    s = 0.99 / prob.norm
    halpern = opts["restart"] == "halpern"
    rho = float(opts["reflection"]) if halpern else 0.0
    check_every = int(opts["check_every"])
    pw = bool(opts["primal_weight"])

    def steps(om):
        return (s / om) * prob.dx, (s / om) * prob.db, (s * om) * prob.dy

    def primal_step(X, V):
        """``prox_{tx g}(X - tx V)``, biases ``X - tb V``; ``V`` (a new ``T^T Y``) may be
        overwritten."""
        if prob.fused is not None:  # no preconditioning: tx and tb hold one value, s / omega
            V = np.ascontiguousarray(V)
            prob.fused(np.ascontiguousarray(X), V, s / omega, V)
            return V
        Xn = np.empty_like(X)
        Xn[:-1] = geo.weight_prox(X[:-1] - geo.from_groups(tx * geo.to_groups(V[:-1])), tx)
        Xn[-1] = X[-1] - tb * V[-1]
        return Xn

    def dual_step(Y, TX, TXn):
        """The dual step at the over-relaxed point ``Y + sy (2 T Xn - T X)``."""
        if prob.simplex is None and prob.sublevel is None:
            return prob.dual_step(Y + sy[:, None] * (2.0 * TXn - TX), sy)
        sigma = s * omega  # every entry of sy
        Yn = np.empty_like(Y)
        Y, TX, TXn = (np.ascontiguousarray(a) for a in (Y, TX, TXn))
        if prob.simplex is not None:
            prob.simplex(Y, TX, TXn, sigma * op.R, sigma, prob.par, Yn)
        else:
            prob.sublevel(Y, TX, TXn, op.R, sigma, prob.par, Yn)
        return Yn

    jit = prob.kernels  # the compiled residual and average, or None (numpy)
    if jit is not None:  # the kernels take C-contiguous arrays
        X, Y = np.ascontiguousarray(X), np.ascontiguousarray(Y)

    def average(a, b, c, c1, c0, rho):
        """Halpern's reflected average ``c1 ((1 + rho) a - rho b) + c0 c`` (a new array)."""
        if jit is None:
            return c1 * ((1 + rho) * a - rho * b) + c0 * c
        out = np.empty_like(a)
        jit.halpern_average(a, b, c, c1, c0, rho, out)
        return out

    state = resume.pop("state", None) if resume is not None else None
    if state is None:
        TX = op.T(X)
        X0, Y0, TX0 = X.copy(), Y.copy(), TX.copy()
        k, before = 0, 0
        r_start = r_prev = None
    else:
        (X, Y, TX, X0, Y0, TX0, omega, k, before, r_start, r_prev) = state
    tx, tb, sy = steps(omega)
    total = 0
    last = None
    reason = "max_iter"
    pause = False
    while total < max_iter:
        Xn = primal_step(X, op.T_adjoint(Y))
        TXn = op.T(Xn)
        Yn = dual_step(Y, TX, TXn)
        clock.charge(step_work)
        total += 1
        k += 1
        checked = (before + total) % check_every == 0
        if checked:
            last = prob.certificate(Xn, Yn, TX=TXn)
            if last.rel_gap <= tol or (on_check is not None and on_check(Xn, Yn, last, total)):
                return Xn, Yn, omega, total, last, "converged"
        pause = clock.past(until) or WALL.past(deadline)
        if not halpern:
            X, Y, TX = Xn, Yn, TXn
            if pause:
                break
            continue
        # fixed-point residual in the PDHG metric
        if jit is not None:
            r2 = jit.halpern_residual(Xn, X, Yn, Y, TXn, TX, s / omega, s * omega)
        else:
            dX, dY, dT = Xn - X, Yn - Y, TXn - TX
            r2 = ((geo.to_groups(dX[:-1]) ** 2) / tx).sum() + (dX[-1] ** 2 / tb).sum() \
                + ((dY ** 2) / sy[:, None]).sum() - 2.0 * (dY * dT).sum()
        r = np.sqrt(max(r2, 0.0))
        if r_start is None:
            r_start = r
        restart = (r <= 0.2 * r_start) or (r <= 0.8 * r_start and r_prev is not None and r > r_prev) \
            or (k >= 0.36 * (before + total) and k > 64)
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
        else:
            c1 = (k) / (k + 1.0)
            c0 = 1.0 / (k + 1.0)
            X, Y, TX = (average(a, b, c, c1, c0, rho)
                        for a, b, c in ((Xn, X, X0), (Yn, Y, Y0), (TXn, TX, TX0)))
        if pause:
            break
    if pause:
        if resume is not None:
            resume["state"] = (X, Y, TX, X0, Y0, TX0, omega, k, before + total, r_start, r_prev)
        if not checked:  # paused between checks: the caller ranks engines by this certificate
            last = prob.certificate(Xn, Yn, TX=TXn)
        return Xn, Yn, omega, total, last, "time"
    last = prob.certificate(Xn, Yn, TX=TXn)
    return Xn, Yn, omega, total, last, reason
