"""Certified solver for the smooth baselines: square, logit, one-vs-all (issue 13).

The three problems of spec section 4, ``P(X) = g(W) + lam * sum_l f_l(S_l)``
with scores ``S = Phi W + 1 b^T`` and free biases (the losses: see
:func:`sparsesvm.model.certificates.smooth_gap`), solved to a *certified* relative
duality gap: every stop is decided by :func:`~sparsesvm.model.certificates.smooth_gap_scores`
on the full problem.

Engine: **working-set block coordinate descent** (the skglm / celer design):

* a *unit* is one row of W (one feature, all K classes: l1, l2, across-class
  groups) or one block of ``s`` consecutive rows (within-class blocks: the
  unit holds one group of each class; the prox is separable across them);
* each unit has its own step ``1 / L_u`` with ``L_u = lam * c * ||Phi_u||_2^2``
  and ``c`` a bound on the Hessian of the loss with respect to a row of
  scores (``2K`` for square, ``1/2`` for logit, ``2`` for one-vs-all); this is
  what makes it work on raw features, where the global step of FISTA
  (``1 / (lam c ||[Phi 1]||^2)``, ``||Phi|| = 1.24e6`` on leukemia) is tiny
  for every feature but the largest ones;
* the biases are one more unit (``L_b = lam * c * L``), never penalised;
* **working sets**: units are ranked by the dual norm of their gradient
  (``> 1``: the zero unit violates optimality), the non-zero units are
  always kept, the set doubles (``2 * nnz``, at least :data:`MIN_WS`); the
  subproblem on the working set is solved to a relative gap of
  :data:`INNER_RATIO` times the last full gap (certified on the subproblem);
* **Anderson extrapolation** of the working-set iterates every
  :data:`ANDERSON` epochs (kept when it lowers the objective);
* for l1, an **active-set Newton** polish on the support (signs fixed, the
  penalty is linear there) every ``4 * ANDERSON`` epochs, kept when it
  lowers the objective;
* for l2 with ``L K <=`` :data:`KERNEL_MAX`, no coordinate descent: Newton's
  method in sample space (:func:`_l2_kernel_newton`);
* for l1, l1,2 and l1,inf with ``L K <=``
  :data:`~sparsesvm.solvers.accelerated.smooth_qp.QP_MAX_SCORES` (and
  clarabel installed; square and one-vs-all with l1 or l1,inf only below
  :data:`~sparsesvm.solvers.accelerated.smooth_qp.TERMS_MIN_SCORES`, see the term
  generation below; logit only with :data:`LOGIT_FISTA` off), the working-set
  subproblems are **conic QPs** solved
  by an interior-point method (:mod:`.smooth_qp`: square and one-vs-all
  exactly, logit by proximal Newton steps); the working sets grow as in a
  column generation, and coordinate descent takes over once a working set
  repeats (the QP solver's accuracy is then the limit);
* without the QPs and with ``L K >`` :data:`FISTA_MIN_SCORES`, and for logit with l1,
  l1,2 and l1,inf at every size (:data:`LOGIT_FISTA`), the working-set
  subproblems are solved by **FISTA** with backtracking steps and restarts
  (:meth:`_CoordinateDescent.accelerated`) instead of coordinate descent:
  on MNIST's scattering features at L = 1000 (l1,inf/81) coordinate descent
  stopped on its stall rule far from the optimum (the step bound
  ``c ||Phi_u||^2`` is far above the curvature met along the iterates, most
  squared hinges being inactive), where FISTA certifies logit and ova to 1e-6
  (measured: README, "Deviations", the smooth baselines;
  ``benchmarks/bench_smooth.py --problems mnist-real --mnist-L 1000``); its
  sufficient-decrease and restart tests compare the objective's *changes* computed as
  changes (:func:`_loss_change`, :func:`_weight_change`), not differences of objectives:
  near the optimum the changes fall to the objective's own rounding, and News20's square
  (L = 1000) stalled at a certified 1.9e-5 on the differences; with l1, l1,2 and l1,inf
  (without term generation, below), from a full gap of :data:`NEWTON_CG_MAX_GAP` on,
  **Newton steps on the penalty's face**
  (the non-zero groups, l1,inf's largest entries of a group moving together, and the
  biases, by conjugate gradients: :class:`_Face`, :meth:`_CoordinateDescent.support_newton`)
  come before FISTA's rounds, where FISTA alone stalled at 1.1e-6 on nearly parallel
  columns (News20, square); logit takes this path at every size: the full QPs' proximal
  Newton steps stalled at a certified 3.0 on News20 at L = 200 (nearly hard-margin,
  alpha = 1e-5), where this path certifies 1e-6 in seconds;
* square and one-vs-all with l1 or l1,inf from
  :data:`~sparsesvm.solvers.accelerated.smooth_qp.TERMS_MIN_SCORES` scores on (MNIST from
  L = 30) take the FISTA path and switch to **term and group generation** once the full
  certified gap is at most :data:`TERMS_MAX_GAP`
  (:func:`~sparsesvm.solvers.accelerated.smooth_qp.solve_terms`): the working-set
  subproblem is solved exactly by QPs that carry only the hinge terms near activity
  and the groups near violation, grown until none is missing. FISTA alone left square at MNIST L = 1000
  far from its certified 1e-6, and the full QPs grow with L K (measured in the README,
  "Deviations").

A fit stops at the certified gap ``tol``, at ``max_iter`` epochs (a QP
counts as one), or when the certified gap has not halved in
:data:`STALL_EPOCHS` epochs (then ``converged`` is False and ``rel_gap`` says
how far it got). Why the QPs: on leukemia's raw values the cells where the
loss is almost 0 at the optimum (small alpha; the problem is then nearly the
hard-margin linear program) stalled under coordinate descent alone at
relative gaps of 1e-5 to 4.1 (75 of E1's 103 l1, l1,2 and l1,inf fits of the
smooth baselines); with the QPs all 103 reach 1e-5
(``benchmarks/bench_smooth.py``; the README's Table 1 section).

The loop is numpy per unit (a few small products per unit update).
Importing this module adds square, logit and ova to the
``solver="accelerated"`` family (``stopping="gap"``) of :mod:`sparsesvm.core`.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from ..._sparse import issparse
from ...model.certificates import SMOOTH_METHODS, smooth_gap_scores
from ...model.operator import check_double, power_norm
from ...model.penalties import make_penalty
from ..registry import model_parameters, register_solver
from . import smooth_qp

__all__ = ["SmoothResult", "solve", "MIN_WS", "INNER_RATIO", "ANDERSON", "FISTA_MIN_SCORES",
           "TERMS_MAX_GAP", "NEWTON_CG_MAX_GAP", "LOGIT_FISTA"]

#: smallest working set (units)
MIN_WS = 10
#: the working-set subproblem is solved to this fraction of the last full gap
INNER_RATIO = 0.3
#: epochs between two Anderson extrapolations (and subproblem gap checks)
ANDERSON = 5
#: stop (not converged) when the certified gap has not halved in this many epochs
STALL_EPOCHS = 500
#: with ``L K >`` this many scores (and no QP path), the working-set subproblems are
#: solved by FISTA (:meth:`_CoordinateDescent.accelerated`) instead of coordinate descent
FISTA_MIN_SCORES = 5000
#: term generation (square and one-vs-all from ``smooth_qp.TERMS_MIN_SCORES`` scores on) is
#: tried once the full certified gap is at most this, and again only after the gap has
#: fallen tenfold since a try that gave no point (from farther, the terms active at the
#: solution are not yet the near-active ones, and the QPs that carry the near-active ones
#: are large and give no point: ``benchmarks/bench_smooth.py --terms-max-gap inf``; README,
#: "Deviations")
TERMS_MAX_GAP = 1.0
#: l1, l1,2 and l1,inf on the FISTA path without term generation: once the full certified
#: gap is at most this, Newton steps on the penalty's face and the biases
#: (:meth:`_CoordinateDescent.support_newton`) before FISTA
NEWTON_CG_MAX_GAP = 1e-4
#: logit with l1, l1,2 or l1,inf takes the FISTA path (with the Newton steps above) at
#: every size, not the full QPs' proximal Newton steps: News20 L = 200 (l1,2, alpha = 1e-5)
#: stalled at a certified 3.0 after 641 s on the QPs (README, "Deviations")
LOGIT_FISTA = True
#: conjugate-gradient iterations of one such Newton step
NEWTON_CG_ITER = 1000
#: l1,inf's Newton steps move a group's entries within this relative distance of its
#: largest together (:class:`_Face`)
FACE_TIES = 1e-9
#: the stall rule of the FISTA path (iterations without halving the certified gap; with
#: 3000, MNIST L = 1000 square stopped while it was still improving)
FISTA_STALL = 10000


def _curvature(method, K):
    """Bound on the Hessian of one row's loss w.r.t. its scores."""
    return {"square": 2.0 * K, "logit": 0.5, "ova": 2.0}[method]


def _margins(method, S, y, Ypm):
    """The loss terms' margins (L, K) at scores S: ``1 + s_lk - s_lz`` for square (``-inf``
    at ``k = z_l``, no term there) and logit (0 at ``k = z_l``: the loss is the log-sum-exp
    of a row), ``1 - y_lk s_lk`` for one-vs-all. A squared hinge is active where its
    margin is > 0."""
    if method == "ova":
        return 1.0 - Ypm * S
    ar = np.arange(S.shape[0])
    Z = S - S[ar, y][:, None]
    Z += 1.0
    Z[ar, y] = -np.inf if method == "square" else 0.0
    return Z


def _score_grad(method, S, y, Ypm):
    """``dF/dS`` (unweighted) for rows of scores S (n, K); y, Ypm the rows' labels."""
    Z = _margins(method, S, y, Ypm)
    if method == "ova":
        np.maximum(Z, 0.0, out=Z)
        Z *= Ypm
        Z *= -2.0
        return Z
    ar = np.arange(S.shape[0])
    if method == "square":
        np.maximum(Z, 0.0, out=Z)
        Z *= 2.0
        Z[ar, y] = -Z.sum(axis=1)
        return Z
    Z -= Z.max(axis=1, keepdims=True)
    np.exp(Z, out=Z)
    Z /= Z.sum(axis=1, keepdims=True)
    Z[ar, y] -= 1.0
    return Z


def _score_hessian(method, S, y, Ypm):
    """Blocks ``H_l`` (L, K, K) of the (generalised) Hessian of the loss w.r.t. a row of scores."""
    L, K = S.shape
    ar = np.arange(L)
    Z = _margins(method, S, y, Ypm)
    if method == "ova":
        return 2.0 * (Z > 0)[:, :, None] * np.eye(K)[None]
    if method == "square":
        act = (Z > 0).astype(float)
        H = 2.0 * act[:, :, None] * np.eye(K)[None]          # sum_k a_k e_k e_k^T
        H[ar, y, :] -= 2.0 * act                               # - a_k (e_z e_k^T + e_k e_z^T)
        H[ar, :, y] -= 2.0 * act
        H[ar, y, y] += 2.0 * act.sum(axis=1)                   # + a_k e_z e_z^T
        return H
    Z -= Z.max(axis=1, keepdims=True)
    P = np.exp(Z)
    P /= P.sum(axis=1, keepdims=True)
    return P[:, :, None] * np.eye(K)[None] - P[:, :, None] * P[:, None, :]


#: largest L*K for which l2 uses the Newton method in sample space (it solves
#: dense linear systems of that size)
KERNEL_MAX = 1500
#: Newton iterations without halving the certified gap after which it stops
NEWTON_STALL = 50


def _l2_kernel_newton(method, Phi, y, Ypm, geo, lam, tol, max_iter, deadline):
    """l2 problems in sample space, by Newton's method.

    With the thin SVD ``Phi = U diag(sig) V^T`` (rank r <= L), the solution has
    ``W = V C`` (representer theorem) and the problem is
    ``1/2 ||C||^2 + lam F(J C + 1 b^T)``, ``J = U diag(sig)`` (L, r): r K + K
    variables. Newton steps with the (generalised, for the squared hinges)
    Hessian ``I + lam J^T H J`` (H: the blocks of :func:`_score_hessian`),
    solved by least squares, and an Armijo line search; stops on the
    certified gap of ``W = V C``.
    """
    L, K = Ypm.shape
    P = Phi.toarray() if issparse(Phi) else Phi
    U, sig, Vt = np.linalg.svd(P, full_matrices=False)
    keep = sig > sig[0] * 1e-13 if sig.size else sig > 0
    J = U[:, keep] * sig[keep]
    Vt = Vt[keep]
    r = J.shape[1]
    C = np.zeros((r, K))
    b = np.zeros(K)
    nC = r * K

    def obj(C, b):
        S = J @ C + b
        return 0.5 * float(np.vdot(C, C)) + lam * _loss(method, S, y, Ypm), S

    f, S = obj(C, b)
    it = 0
    res = None
    best = (np.inf, 0)
    for it in range(1, max_iter + 1):
        res = smooth_gap_scores(method, Phi, y, S, Vt.T @ C, geo, lam)
        if res.rel_gap < 0.5 * best[0]:
            best = (res.rel_gap, it)
        if res.rel_gap <= tol or time.perf_counter() > deadline or it - best[1] > NEWTON_STALL:
            break
        Gs = _score_grad(method, S, y, Ypm)
        H = _score_hessian(method, S, y, Ypm)
        gC = C + lam * (J.T @ Gs)
        gb = lam * Gs.sum(axis=0)
        HJ = np.einsum("lkm,li->likm", H, J)            # (L, r, K, K)
        Hcc = lam * np.einsum("lj,likm->ikjm", J, HJ).reshape(nC, nC) + np.eye(nC)
        Hcb = lam * HJ.sum(axis=0).reshape(nC, K)
        Hbb = lam * H.sum(axis=0)
        Hfull = np.block([[Hcc, Hcb], [Hcb.T, Hbb]])
        g = np.concatenate([gC.ravel(), gb])
        # symmetric diagonal scaling: the weight and bias blocks differ in scale by
        # up to lam ||Phi||^2 (1e7 on leukemia), which costs least squares its accuracy
        dg = np.sqrt(np.maximum(np.abs(np.diag(Hfull)), 1e-300))
        d = -np.linalg.lstsq(Hfull / dg[:, None] / dg[None, :], g / dg, rcond=None)[0] / dg
        dC, db = d[:nC].reshape(r, K), d[nC:]
        slope = float(g @ d)
        t = 1.0
        while t > 1e-12:
            fn, Sn = obj(C + t * dC, b + t * db)
            # (rounding: an objective that changes below its own precision is accepted)
            if fn <= f + 1e-4 * t * min(slope, 0.0) + 1e-13 * abs(f):
                break
            t *= 0.5
        if t <= 1e-12:
            break
        C, b, f, S = C + t * dC, b + t * db, fn, Sn
    W = Vt.T @ C
    if res is None or res.rel_gap > tol:
        res = smooth_gap_scores(method, Phi, y, S, W, geo, lam)
    return W, b, S, it, res


def _l1_newton(method, Phi, y, Ypm, lam, W, b, S, iters=20):
    """Active-set Newton polish for g = l1 (in place): on the support of W with
    its signs fixed, ``g`` is linear and the problem is smooth in the
    non-zero entries and the biases; Newton steps (least squares on the
    generalised Hessian) with a line search that stops where an entry
    reaches 0 (it leaves the support). Returns the new scores S (the
    caller's certificate decides whether the point is better)."""
    L, K = S.shape
    js, ks = np.nonzero(W)
    n = js.size
    if n == 0:
        return S
    P = Phi[:, js]
    P = P.toarray() if issparse(P) else np.asarray(P)
    sg = np.sign(W[js, ks])

    def obj(w, bb):
        Sn = S0 + P_scatter(w - w0) + (bb - b0)
        return float(np.abs(w).sum()) + lam * _loss(method, Sn, y, Ypm), Sn

    def P_scatter(dw):
        out = np.zeros((L, K))
        np.add.at(out.T, ks, (P * dw).T)
        return out

    w0, b0, S0 = W[js, ks].copy(), b.copy(), S.copy()
    w, bb = w0.copy(), b0.copy()
    f, Sc = obj(w, bb)
    for _ in range(iters):
        Gs = _score_grad(method, Sc, y, Ypm)
        H = _score_hessian(method, Sc, y, Ypm)
        gw = sg + lam * np.einsum("le,le->e", P, Gs[:, ks])
        gb = lam * Gs.sum(axis=0)
        Hk = H[:, ks][:, :, ks]                                   # (L, n, n)
        Hww = lam * np.einsum("le,lf,lef->ef", P, P, Hk)
        Hwb = lam * np.einsum("le,lek->ek", P, H[:, ks, :])
        Hbb = lam * H.sum(axis=0)
        Hf = np.block([[Hww, Hwb], [Hwb.T, Hbb]])
        g = np.concatenate([gw, gb])
        d = -np.linalg.lstsq(Hf, g, rcond=None)[0]
        dw, db = d[:n], d[n:]
        slope = float(g @ d)
        if not slope < 0:
            break
        # largest step keeping the signs
        with np.errstate(divide="ignore", invalid="ignore"):
            lim = np.where(sg * dw < 0, -w / dw, np.inf)
        tmax = min(1.0, float(lim.min())) if n else 1.0
        t = tmax
        while t > 1e-10 * tmax:
            wn = w + t * dw
            if t == tmax and tmax < 1.0:
                wn[lim <= tmax * (1 + 1e-12)] = 0.0
            fn, Sn = obj(wn, bb + t * db)
            if fn <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            break
        w, bb, f, Sc = wn, bb + t * db, fn, Sn
        if np.linalg.norm(t * d) <= 1e-13 * (np.linalg.norm(np.concatenate([w, bb])) + 1e-300):
            break
    W[js, ks] = w
    b[:] = bb
    return Sc


def _loss(method, S, y, Ypm):
    Z = _margins(method, S, y, Ypm)
    if method != "logit":
        np.maximum(Z, 0.0, out=Z)
        return float(np.vdot(Z, Z))
    m = Z.max(axis=1)
    return float(np.sum(m + np.log(np.exp(Z - m[:, None]).sum(axis=1))))


def _loss_change(method, S, dS, y, Ypm):
    """``loss(S + dS) - loss(S)``, term by term, so that its rounding scales with the change
    and not with the loss: for a squared hinge ``z+ -> (z + dz)+`` the change is
    ``d (z+ + (z + dz)+)`` with ``d = (z + dz)+ - z+`` taken as ``max(dz, -z)`` where
    ``z >= 0`` (no cancellation); for logit ``log(1 + sum_k p_k expm1(dz_k))`` per row
    (``p`` the softmax). ``dz``: the margins' change.

    Parameters
    ----------
    S, dS : ndarray (L, K)
        Scores and their change.

    Returns
    -------
    float
    """
    Z = _margins(method, S, y, Ypm)
    if method == "ova":
        dZ = -Ypm * dS
    else:
        dZ = dS - dS[np.arange(S.shape[0]), y][:, None]
    if method == "logit":
        Z -= Z.max(axis=1, keepdims=True)
        np.exp(Z, out=Z)
        Z /= Z.sum(axis=1, keepdims=True)
        return float(np.sum(np.log1p(np.sum(Z * np.expm1(dZ), axis=1))))
    a = np.maximum(Z, 0.0)                 # (square: z = -inf at k = z_l, no term)
    Z += dZ
    an = np.maximum(Z, 0.0, out=Z)
    d = np.maximum(dZ, -a, out=dZ)
    np.minimum(d, an, out=d)               # max(dz, -z) where z >= 0, (z + dz)+ elsewhere
    a += an
    return float(np.vdot(d, a))


def _weight_change(geo, W, Wn):
    """``g(Wn) - g(W)`` group by group (the rounding of :func:`_loss_change`); W, Wn (m, K)
    for the penalty ``geo`` made for (m, K)."""
    if geo.name == "l2":
        return 0.5 * float(np.vdot(Wn - W, Wn + W))
    if geo.name == "l1":
        return float(np.sum(np.abs(Wn) - np.abs(W)))
    A, B = geo.to_groups(W), geo.to_groups(Wn)
    if geo.name == "l1inf":
        return float(np.sum(np.abs(B).max(axis=1) - np.abs(A).max(axis=1)))
    den = _group_norms(A) + _group_norms(B)
    num = np.einsum("ijk,ijk->ik", B - A, B + A)
    return float(np.sum(np.divide(num, den, out=np.zeros_like(num), where=den > 0)))


def _group_norms(A):
    """The l2 norms (n1, n2) of the groups of ``A = geo.to_groups(W)`` (axis 1: one group)."""
    return np.sqrt(np.einsum("ijk,ijk->ik", A, A))


class _Face:
    """The smooth face of an l1, l1,2 or l1,inf penalty ``geo`` at the weights ``W`` (m, K)
    (the rows of the non-zero units, with their own penalty: :meth:`_Units.sub_geo`), in
    the coordinates ``z`` (``n`` of them) of :meth:`_CoordinateDescent.support_newton`.

    l1 and l1,2: ``z`` holds the entries of the non-zero groups, where the penalty is
    smooth. l1,inf: per non-zero group, one variable moves its largest entries together
    (``sign * tau``; the penalty is ``tau`` there, linear) and the group's other entries are
    free (``z`` holds those entries, then the groups' ``tau``). Zero groups stay 0.

    Attributes
    ----------
    n : int
    pen_grad, pen_diag : ndarray (n,)
        The penalty's gradient and Hessian diagonal in ``z``.
    """

    PENALTIES = ("l1", "l12", "l1inf")

    def __init__(self, geo, W):
        self.geo = geo
        A = geo.to_groups(W)
        real = geo.to_groups(np.ones(W.shape, dtype=bool))       # (not the blocks' padding)
        if geo.name == "l1inf":
            top_val = np.abs(A).max(axis=1)
            self.tau = top_val > 0                                 # (n1, n2): groups moving
            # the largest entries, tied to FACE_TIES (a QP's or coordinate descent's ties
            # may differ in their last digits; FISTA's prox ties them exactly)
            top = (np.abs(A) >= (1.0 - FACE_TIES) * top_val[:, None, :]) & self.tau[:, None, :]
            self.sign = np.sign(A) * top
            self.top_val = top_val
            self.free = self.tau[:, None, :] & ~top & real
            self.U = None
        elif geo.name in ("l1", "l12"):
            nrm = _group_norms(A)[:, None, :]
            self.tau = np.zeros(nrm[:, 0].shape, dtype=bool)
            self.free = np.broadcast_to(nrm > 0, A.shape) & real
            self.inv = np.where(nrm > 0, 1.0 / np.where(nrm > 0, nrm, 1.0), 0.0)
            self.U = A * self.inv
        else:
            raise ValueError(f"no face Newton steps for the {geo.name} penalty")
        self.nf, self.nt = int(self.free.sum()), int(self.tau.sum())
        self.n = self.nf + self.nt
        if self.U is None:
            self.pen_grad = np.concatenate([np.zeros(self.nf), np.ones(self.nt)])
            self.pen_diag = np.zeros(self.n)
        else:
            self.pen_grad = self.U[self.free]
            self.pen_diag = ((1.0 - self.U * self.U) * self.inv)[self.free]

    def snap(self, W):
        """``W`` (m, K) with l1,inf's tied entries made exactly equal (the face's point; a
        copy)."""
        A = self.geo.to_groups(W.copy())
        if self.nt:
            on = self.sign != 0
            A[on] = (self.sign * self.top_val[:, None, :])[on]
        return self.geo.from_groups(A).copy()

    def _groups(self, z):
        D = np.zeros(self.free.shape)
        D[self.free] = z[:self.nf]
        if self.nt:
            T = np.zeros(self.tau.shape)
            T[self.tau] = z[self.nf:]
            D += self.sign * T[:, None, :]
        return D

    def expand(self, z):
        """The weights' change (m, K) of a move ``z``."""
        return self.geo.from_groups(self._groups(z))

    def restrict(self, V, squared=False):
        """The transpose of :meth:`expand` applied to ``V`` (m, K); ``squared``: with the
        squares of its coefficients (a Hessian diagonal's, cross terms left out)."""
        A = self.geo.to_groups(V)
        out = A[self.free]
        if not self.nt:
            return out
        S = np.abs(self.sign) if squared else self.sign
        return np.concatenate([out, np.einsum("ijk,ijk->ik", S, A)[self.tau]])

    def pen_hv(self, z):
        """The penalty's Hessian times ``z`` (0 on l1,inf's faces and for l1)."""
        if self.U is None:
            return np.zeros(self.n)
        D = self._groups(z)
        return ((D - self.U * np.einsum("ijk,ijk->ik", self.U, D)[:, None, :]) * self.inv)[self.free]


class _Units:
    """The coordinate blocks of W, their columns of Phi and their steps."""

    def __init__(self, Phi, geo):
        M = geo.n_features
        self.size = geo.group_shape[1] if geo.layout == "blocks" else 1
        self.starts = np.arange(0, M, self.size)
        self.stops = np.minimum(self.starts + self.size, M)
        self.n = self.starts.size
        self.sparse = issparse(Phi)
        self.Phi = Phi.tocsc() if self.sparse else Phi
        self.geo = geo
        self._geos = {}
        self._cols = {}
        # ||Phi_u||_2^2: exact for dense units, Frobenius (an upper bound) for sparse blocks
        if self.sparse:
            sq = np.asarray(self.Phi.multiply(self.Phi).sum(axis=0)).ravel()
            self.norm2 = np.add.reduceat(sq, self.starts)
        elif self.size == 1:
            self.norm2 = np.einsum("ij,ij->j", Phi, Phi)
        else:
            L = Phi.shape[0]
            pad = self.n * self.size - M
            P = np.hstack([Phi, np.zeros((L, pad))]) if pad else Phi
            blocks = P.reshape(L, self.n, self.size).transpose(1, 0, 2)
            self.norm2 = np.linalg.norm(blocks, ord=2, axis=(1, 2)) ** 2

    def nonzero(self, W):
        """Whether each unit has a non-zero weight in ``W`` (M, K): bool (n,)."""
        return np.abs(self.geo.to_groups(W)).reshape(self.n, -1).max(axis=1) > 0

    def rows(self, units):
        """Feature indices (sorted) of the given units (sorted)."""
        if self.size == 1:
            return np.asarray(units)
        return np.concatenate([np.arange(self.starts[u], self.stops[u]) for u in units]) \
            if len(units) else np.zeros(0, dtype=np.int64)

    def unit_geo(self, n_rows):
        """Geometry of one unit of ``n_rows`` rows (shape (n_rows, K))."""
        g = self._geos.get(n_rows)
        if g is None:
            geo = self.geo
            if geo.layout == "entry":
                g = make_penalty(geo.name, None, n_rows, geo.n_classes)
            elif geo.layout == "features":
                g = make_penalty(geo.name, "features", n_rows, geo.n_classes)
            else:
                g = make_penalty(geo.name, n_rows, n_rows, geo.n_classes)
            self._geos[n_rows] = g
        return g

    def sub_geo(self, rows):
        """Geometry of the working-set problem on the given rows."""
        geo, m = self.geo, len(rows)
        if geo.layout == "blocks":
            return make_penalty(geo.name, min(geo.group_shape[1], m), m, geo.n_classes)
        return make_penalty(geo.name, geo.groups, m, geo.n_classes)

    def cols(self, u):
        """``(idx, P)``: the rows of samples the unit touches (slice for dense) and
        the dense block of Phi on them, shape (n_idx, n_rows_of_unit)."""
        c = self._cols.get(u)
        if c is None:
            a, b = self.starts[u], self.stops[u]
            if self.sparse:
                blk = self.Phi[:, a:b]
                idx = np.unique(blk.indices)
                c = (idx, blk[idx].toarray())
            else:
                c = (slice(None), np.ascontiguousarray(self.Phi[:, a:b]))
            self._cols[u] = c
        return c


class SmoothResult:
    """Outcome of :func:`solve` (attributes as :class:`sparsesvm.solvers.SolverResult`,
    plus ``dual_objective`` and ``n_outer``, the working-set rounds)."""

    def __init__(self, X, n_iter, converged, objective, dual_objective, rel_gap, time_,
                 n_outer, trace):
        self.X, self.n_iter, self.converged = X, n_iter, converged
        self.objective, self.dual_objective, self.rel_gap = objective, dual_objective, rel_gap
        self.time, self.n_outer, self.trace = time_, n_outer, trace


def _anderson(xs):
    """Anderson extrapolation of the last iterates ``xs`` (list of 1-D arrays)."""
    X = np.array(xs)
    U = np.diff(X, axis=0)
    C = U @ U.T
    try:
        z = np.linalg.solve(C + 1e-10 * np.trace(C) * np.eye(C.shape[0]) / C.shape[0],
                            np.ones(C.shape[0]))
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(z)) or z.sum() == 0:
        return None
    c = z / z.sum()
    return c @ X[1:]


class _SmoothTrace:
    """The history of :func:`solve` (see its ``trace`` parameter), filled at each full gap check.

    Parameters
    ----------
    trace : bool
    reference : ndarray (M+1, K) or None
    X : ndarray (M+1, K)
        The starting point (the first ``rel_change`` is measured from it).
    """

    def __init__(self, trace, reference, X):
        self.on = trace
        self.tr = {"iteration": [], "time": [], "objective": [], "rel_gap": [], "rel_change": []}
        self.ref = None
        if reference is not None:
            self.ref = np.asarray(reference, dtype=float)
            self.tr["rel_dist"] = []
        self.X_last = X.copy()

    def add(self, epochs, t, full, X, W, mu, first_point=False):
        """Record a check at ``epochs`` with certificate ``full``; ``X`` is in the centred
        parametrisation (``mu`` the feature means, or None). ``first_point``: the
        Newton solution of the l2 kernel path (``rel_change`` NaN)."""
        tr = self.tr
        tr["iteration"].append(epochs)
        tr["time"].append(t)
        tr["objective"].append(full.primal)
        tr["rel_gap"].append(full.rel_gap)
        Xo = X.copy()
        if mu is not None:
            Xo[-1] -= mu @ W
        if first_point:
            tr["rel_change"].append(np.nan)
        else:
            nx = np.linalg.norm(Xo)
            tr["rel_change"].append(float(np.linalg.norm(Xo - self.X_last) / nx) if nx > 0 else np.inf)
            self.X_last = Xo
        if self.ref is not None:
            tr["rel_dist"].append(float(np.linalg.norm(Xo - self.ref) / np.linalg.norm(self.ref)))

    def result(self):
        return {k: np.asarray(v) for k, v in self.tr.items()} if self.on else None


class _CoordinateDescent:
    """Working-set coordinate descent on ``g(W) + lam * loss(Phi W + b)`` (the state of :func:`solve`).

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    Phi : ndarray (L, M) or CSR
        Centred features (dense) or the features (sparse).
    y : int ndarray (L,)
    geo : Penalty
    lam : float
    units : _Units
    X : ndarray (M+1, K)
        The iterate, updated in place (``W``, ``b`` are its views).

    Attributes
    ----------
    S, Gs : ndarray (L, K)
        The scores ``Phi W + b`` and their loss gradient.
    """

    def __init__(self, method, Phi, y, geo, lam, units, X):
        L = Phi.shape[0]
        K = X.shape[1]
        self.method, self.Phi, self.y, self.geo, self.lam, self.units = method, Phi, y, geo, lam, units
        self.Ypm = -np.ones((L, K))
        self.Ypm[np.arange(L), y] = 1.0
        c = _curvature(method, K)
        self.lip = lam * c * units.norm2
        self.lip_b = lam * c * L
        self.W, self.b = X[:-1], X[-1]
        self._fista_L = None  # the FISTA path's last step constant (kept across working sets)

    def start(self):
        self.S = np.asarray(self.Phi @ self.W) + self.b
        self.refresh()

    def refresh(self):
        self.Gs = _score_grad(self.method, self.S, self.y, self.Ypm)

    def loss(self, S):
        return _loss(self.method, S, self.y, self.Ypm)

    def bias_step(self):
        d = -(self.lam / self.lip_b) * self.Gs.sum(axis=0)
        self.b[...] += d
        self.S += d
        self.refresh()

    def working_set(self, ws_size):
        """The units to descend on (all for l2, else the violators, at most ``ws_size``) and the next size."""
        geo, units = self.geo, self.units
        if geo.name == "l2":
            return np.arange(units.n), ws_size
        V = self.lam * np.asarray(self.Phi.T @ self.Gs)
        score = geo.group_dual_norms(V).reshape(units.n, -1).max(axis=1)
        nz = units.nonzero(self.W)
        score[nz] = np.inf
        n_nz = int(nz.sum())
        ws_size = min(units.n, max(MIN_WS, 2 * n_nz, ws_size))
        order = np.argsort(-score, kind="stable")[:ws_size]
        keep = order[(score[order] > 1.0)]
        ws = np.sort(keep)
        if ws.size < ws_size:   # no more violators than that: grow the set next time
            return ws, max(MIN_WS, ws.size)
        return ws, min(units.n, 2 * ws_size)

    def epoch(self, ws):
        """One proximal coordinate pass over the units ``ws``."""
        units, W, lam, method, y, Ypm = self.units, self.W, self.lam, self.method, self.y, self.Ypm
        for u in ws:
            idx, P = units.cols(u)
            a, e = units.starts[u], units.stops[u]
            Wu = W[a:e]
            step = 1.0 / self.lip[u]
            grad = P.T @ self.Gs[idx]
            new = units.unit_geo(e - a).weight_prox(Wu - (step * lam) * grad, step)
            d = new - Wu
            if np.any(d):
                W[a:e] = new
                dS = P @ d
                if units.sparse:
                    self.S[idx] += dS
                    self.Gs[idx] = _score_grad(method, self.S[idx], y[idx], Ypm[idx])
                else:
                    self.S += dS
                    self.refresh()

    def anderson(self, hist, rows, Phi_ws, sub_geo):
        """Anderson extrapolation of the last iterates on ``rows`` (kept if it lowers the objective)."""
        K = self.W.shape[1]
        xa = _anderson(hist)
        if xa is None:
            return
        Wa = xa[:-K].reshape(rows.size, K)
        ba = xa[-K:]
        Sa = np.asarray(Phi_ws @ Wa) + ba
        cur = sub_geo.weight_value(self.W[rows]) + self.lam * self.loss(self.S)
        new_obj = sub_geo.weight_value(Wa) + self.lam * self.loss(Sa)
        if new_obj < cur:
            self.W[rows] = Wa
            self.b[:] = ba
            self.S = Sa
            self.refresh()

    def l1_newton(self, cur):
        """Active-set Newton on the current support (l1), kept if it lowers the objective ``cur``."""
        W, b = self.W, self.b
        Wk, bk = W.copy(), b.copy()
        Sn = _l1_newton(self.method, self.Phi, self.y, self.Ypm, self.lam, W, b, self.S)
        new = float(np.abs(W).sum()) + self.lam * self.loss(Sn)
        if new < cur:
            self.S = Sn
            self.refresh()
        else:
            W[:] = Wk
            b[:] = bk

    def biases_done(self, epochs):
        """Whether the biases-only subproblem is solved (or 200 epochs passed)."""
        Gs = self.Gs
        gb = np.abs(Gs.sum(axis=0)).max()
        return gb <= 1e-9 * max(np.abs(Gs).sum(axis=0).max(), 1e-300) or epochs % 200 == 0

    def exact_subproblem(self, rows, inner_tol, deadline, terms=False):
        """Solve the subproblem on the feature ``rows`` (those of the working set, not
        empty) as conic QPs (:mod:`.smooth_qp`; l1, l12, l1inf): the number of QPs solved,
        or 0 when they did not lower the objective (the caller then runs :meth:`subproblem`
        or :meth:`accelerated`). ``terms``: by term generation
        (:func:`~.smooth_qp.solve_terms`; square and one-vs-all), which also gives 0 while
        too many terms are near-active."""
        sub_geo = self.units.sub_geo(rows)
        P = self.units.Phi[:, rows]
        P = P.toarray() if self.units.sparse else np.ascontiguousarray(P)
        method, y, Ypm, lam = self.method, self.y, self.Ypm, self.lam

        def objective(W, S):
            return sub_geo.weight_value(W) + lam * _loss(method, S, y, Ypm)

        if terms:
            out = smooth_qp.solve_terms(
                method, P, y, self.W.shape[1], sub_geo, lam, self.W[rows], self.b,
                objective=objective, margins=lambda S: _margins(method, S, y, Ypm),
                score_grad=lambda S: _score_grad(method, S, y, Ypm), deadline=deadline)
        else:
            out = smooth_qp.solve_subproblem(
                method, P, y, self.W.shape[1], sub_geo, lam, self.W[rows], self.b,
                objective=objective,
                score_grad=lambda S: _score_grad(method, S, y, Ypm),
                score_hessian=lambda S: _score_hessian(method, S, y, Ypm),
                certify=lambda W, S: smooth_gap_scores(method, P, y, S, W, sub_geo, lam).rel_gap,
                inner_tol=inner_tol, deadline=deadline)
        if out is None:
            return 0
        Wn, bn, n_qp = out
        self.W[rows] = Wn
        self.b[:] = bn
        self.start()
        return n_qp

    def accelerated(self, ws, inner_tol, epochs, max_iter, deadline):
        """FISTA on the working set ``ws`` (all samples) until its own gap is below
        ``inner_tol`` (or it stalls, or the caps); returns the epochs done in all (one a
        FISTA iteration).

        The large problems' engine (``L K >`` :data:`FISTA_MIN_SCORES`): on MNIST's
        scattering features (L = 1000, l1,inf/81) the curvature bound ``c ||Phi_u||^2`` of
        the coordinate steps is far above the curvature met along the iterates (most
        squared hinges are inactive), and coordinate descent crawls. Here the step is
        found by **backtracking** (it may shrink and grow again), the momentum is
        dropped when the objective rises (function restart, O'Donoghue and Candes 2015),
        and the biases get their own step in the same metric (``diag(I, L / nP2)``,
        exact for centred features, where ``1`` is orthogonal to ``Phi``).
        """
        units, lam, method, y, Ypm = self.units, self.lam, self.method, self.y, self.Ypm
        rows = units.rows(ws)
        sub_geo = units.sub_geo(rows)
        P = units.Phi[:, rows]
        L = P.shape[0]
        S_rest = self.S - np.asarray(P @ self.W[rows]) - self.b    # other rows' scores
        nP2 = float(units.norm2[ws].sum())                          # >= ||P||_2^2
        c = _curvature(method, self.W.shape[1])
        nP2 = max(nP2, 1e-12 * L)                                   # (all-zero columns)
        Lmax = lam * c * nP2 * (2.0 if units.sparse else 1.0)
        # the biases' weight in the metric: L / ||P||_2^2 (an overestimate of ||P|| makes
        # the bias steps too long and the backtracking then shortens every step; Lmax
        # stays a bound since est <= nP2)
        est = power_norm(lambda v: np.asarray(P @ v).ravel(), lambda u: np.asarray(P.T @ u).ravel(),
                         (rows.size,), max_iter=30) ** 2
        sb = L / (min(est, nP2) if est > 0 else nP2)
        Lc = Lmax / 64.0 if self._fista_L is None else min(self._fista_L, Lmax)
        W, b, S = self.W[rows].copy(), self.b.copy(), self.S.copy()
        Zw, Zb, DZ = W.copy(), b.copy(), np.zeros_like(S)     # DZ: the extrapolated scores - S
        t = 1.0
        best = (np.inf, epochs)
        it = 0
        while epochs < max_iter:
            epochs += 1
            it += 1
            ZS = S + DZ
            Gs = _score_grad(method, ZS, y, Ypm)
            gw = lam * np.asarray(P.T @ Gs)
            gb = lam * Gs.sum(axis=0)
            while True:
                Wn = sub_geo.weight_prox(Zw - gw / Lc, 1.0 / Lc)
                bn = Zb - gb / (Lc * sb)
                dW, db = Wn - Zw, bn - Zb
                dS = np.asarray(P @ dW) + db
                # both tests compare changes computed as changes (_loss_change,
                # _weight_change): near the optimum they are about 1e-13 of the objective,
                # its own rounding, and tests on differences of objectives then fail at
                # random (News20 L = 1000 square stalled at a certified 1.9e-5 so)
                df = lam * _loss_change(method, ZS, dS, y, Ypm)
                model = np.vdot(gw, dW) + gb @ db + 0.5 * Lc * (np.vdot(dW, dW) + sb * (db @ db))
                if df <= model or Lc >= Lmax:
                    break
                Lc = min(2.0 * Lc, Lmax)
            step = DZ + dS                                           # Sn - S
            if t > 1.0 and (_weight_change(sub_geo, W, Wn)
                            + lam * _loss_change(method, S, step, y, Ypm)) > 0:
                # the objective rose: restart (drop the momentum, step from the iterate)
                Zw, Zb, DZ, t = W.copy(), b.copy(), np.zeros_like(S), 1.0
                continue
            tn = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            beta = (t - 1.0) / tn
            Zw = Wn + beta * (Wn - W)
            Zb = bn + beta * (bn - b)
            W, b, S, DZ, t = Wn, bn, S + step, beta * step, tn
            Lc = max(Lc / 1.25, Lmax * 1e-8)
            if it % (2 * ANDERSON):
                continue
            S = np.asarray(P @ W) + b + S_rest      # the scores of W exactly again (no drift)
            sub = smooth_gap_scores(method, P, y, S, W, sub_geo, lam)
            if sub.rel_gap < 0.5 * best[0]:
                best = (sub.rel_gap, epochs)
            if (sub.rel_gap <= inner_tol or epochs - best[1] > FISTA_STALL
                    or time.perf_counter() > deadline):
                break
        self._fista_L = Lc
        self.W[rows] = W
        self.b[:] = b
        self.S = np.asarray(P @ W) + b + S_rest
        self.refresh()
        return epochs

    def support_newton(self):
        """One damped Newton step on the smooth face of the penalty where the weights lie,
        and the biases (in place): whether it lowered the objective.

        The face (:class:`_Face`): l1 and l1,2 on their non-zero groups, whose other weights
        stay 0 (the penalty is smooth there: Hessian ``(I - u u^T) / ||w_G||``, ``u = w_G /
        ||w_G||``, 0 for l1); l1,inf on its non-zero groups with their largest entries
        moving together (one variable per group, where the penalty is linear) and the others
        free. The loss has the generalised Hessian blocks of :func:`_score_hessian`; the
        Newton system, damped by 1e-10 of its largest diagonal entry (directions without
        curvature), is solved by conjugate gradients (Hessian-vector products, Jacobi
        preconditioner, at most :data:`NEWTON_CG_ITER` iterations) and the step by an Armijo
        search on the objective's change (:func:`_loss_change`, :func:`_weight_change`),
        which is the true objective's wherever the step leaves the face. Why: on News20
        (L = 1000, square) FISTA stalled at a certified 1.1e-6: the residual sat on rows
        whose columns are nearly parallel, coupled through the documents to nearly every
        non-zero row, where FISTA's steps are tiny (README, "Deviations").
        """
        lam, method, y, Ypm, W, units = self.lam, self.method, self.y, self.Ypm, self.W, self.units
        rows = units.rows(np.flatnonzero(units.nonzero(W)))
        if not rows.size:
            return False
        geo = units.sub_geo(rows)
        face = _Face(geo, W[rows])
        n, K = face.n, W.shape[1]
        P = units.Phi[:, rows]
        if units.sparse:
            P, PT = P.tocsr(), P.T.tocsr()
            P2T = P.multiply(P).T.tocsr()
        else:
            PT, P2T = P.T, (P * P).T
        G = _score_grad(method, self.S, y, Ypm)
        H = _score_hessian(method, self.S, y, Ypm)
        g = np.concatenate([lam * face.restrict(np.asarray(PT @ G)) + face.pen_grad,
                            lam * G.sum(axis=0)])
        diag = np.concatenate([
            lam * face.restrict(np.asarray(P2T @ np.einsum("lkk->lk", H)), squared=True)
            + face.pen_diag, lam * np.einsum("lkk->k", H)])
        damp = 1e-10 * diag.max()

        def hv(x):
            dw, db = face.expand(x[:n]), x[n:]
            HdS = lam * np.einsum("lij,lj->li", H, np.asarray(P @ dw) + db)
            return np.concatenate([face.restrict(np.asarray(PT @ HdS)) + face.pen_hv(x[:n]),
                                   HdS.sum(axis=0)]) + damp * x

        op = LinearOperator((n + K, n + K), matvec=hv, dtype=float)
        pre = LinearOperator((n + K, n + K), matvec=lambda x: x / (diag + damp), dtype=float)
        d = cg(op, -g, rtol=1e-6, maxiter=NEWTON_CG_ITER, M=pre)[0]
        slope = float(g @ d)
        if not slope < 0:
            return False
        dw, db = face.expand(d[:n]), d[n:]
        t = 1.0
        Wr = W[rows]
        W0 = face.snap(Wr)
        while t > 1e-10:
            Wn = W0 + t * dw
            dS = np.asarray(P @ (Wn - Wr)) + t * db
            change = _weight_change(geo, Wr, Wn) + lam * _loss_change(method, self.S, dS, y, Ypm)
            if change < 0 and change <= 1e-4 * t * slope:
                W[rows] = Wn
                self.b += t * db
                self.start()
                return True
            t *= 0.5
        return False

    def subproblem(self, ws, inner_tol, epochs, max_iter, deadline):
        """Descend on the working set ``ws`` until its own gap is below ``inner_tol``
        (or it stalls, or the caps); returns the epochs done in all."""
        rows = self.units.rows(ws)
        sub_geo = self.units.sub_geo(rows) if rows.size else None
        Phi_ws = self.Phi[:, rows] if rows.size else None
        hist = []
        sub_best = (np.inf, epochs)
        while epochs < max_iter:
            epochs += 1
            self.epoch(ws)
            self.bias_step()
            if not rows.size:   # biases only: their optimality is the whole subproblem
                if self.biases_done(epochs):
                    break
                continue
            hist.append(np.concatenate([self.W[rows].ravel(), self.b]))
            if epochs % ANDERSON:
                continue
            if len(hist) >= ANDERSON:
                self.anderson(hist[-ANDERSON:], rows, Phi_ws, sub_geo)
                hist = []
            sub = smooth_gap_scores(self.method, Phi_ws, self.y, self.S, self.W[rows], sub_geo, self.lam)
            if sub.rel_gap < 0.5 * sub_best[0]:
                sub_best = (sub.rel_gap, epochs)
            if epochs - sub_best[1] > STALL_EPOCHS:
                break
            if sub.rel_gap <= inner_tol or time.perf_counter() > deadline:
                break
            if self.geo.name == "l1" and epochs % (4 * ANDERSON) == 0:
                self.l1_newton(sub.primal)
        return epochs


def solve(method, Phi, y_idx, n_classes, geo, lam, *, tol=1e-6, max_iter=100000,
          max_time=None, trace=False, reference=None, X0=None):
    """Minimise a smooth baseline to a certified relative duality gap ``tol``.

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    Phi : ndarray (L, M) or sparse matrix
        Features (float64).
    y_idx : int ndarray (L,)
    n_classes : int
        K.
    geo : Penalty
        The penalty, for (M, K) (``"features"`` groups not with ova).
    lam : float > 0
        lambda = 1 / alpha.
    tol : float >= 0
        Target certified relative gap of the full problem.
    max_iter : int
        Cap on coordinate-descent epochs (over the working sets, all rounds).
    max_time : float, optional
        Wall-time cap in seconds.
    trace : bool
        Record, at each full gap check, ``iteration`` (epochs so far),
        ``time``, ``objective``, ``rel_gap``, ``rel_change`` (between checks)
        and with a reference ``rel_dist``.
    reference : ndarray (M+1, K), optional
    X0 : ndarray (M+1, K), optional
        Starting point (default 0).

    Returns
    -------
    SmoothResult
    """
    if method not in SMOOTH_METHODS:
        raise ValueError(f"method must be one of {SMOOTH_METHODS}, got {method!r}")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    if method == "ova" and geo.layout == "features":
        raise ValueError("ova cannot use across-class groups (groups='features')")
    t0 = time.perf_counter()
    L, M = Phi.shape
    K = int(n_classes)
    y = np.asarray(y_idx)
    # free biases: centring the features is an exact reparametrisation
    # (Phi W + 1 b^T = (Phi - 1 mu^T) W + 1 (b + W^T mu)^T) that removes the
    # features' common component, collinear with the bias (raw expression
    # values: all positive, means in the thousands); the certificate is
    # unchanged (same scores; V = Phi^T G once 1^T G = 0)
    mu = None
    if not issparse(Phi):
        mu = Phi.mean(axis=0)
        Phi = Phi - mu
    X = np.zeros((M + 1, K)) if X0 is None else np.array(X0, dtype=float)
    cd = _CoordinateDescent(method, Phi, y, geo, lam, _Units(Phi, geo), X)
    if mu is not None:
        cd.b += mu @ cd.W
    cd.start()
    rec = _SmoothTrace(trace, reference, X)
    deadline = np.inf if max_time is None else t0 + max_time
    if geo.name == "l2" and L * K <= KERNEL_MAX and X0 is None:
        Wn, bn, cd.S, epochs, full = _l2_kernel_newton(method, Phi, y, cd.Ypm, geo, lam, tol,
                                                       max_iter, deadline)
        cd.W[:] = Wn
        cd.b[:] = bn
        n_outer = epochs
        if rec.on:
            rec.add(epochs, time.perf_counter() - t0, full, X, cd.W, mu, first_point=True)
    else:  # no coordinate descent after the kernel path
        epochs, n_outer, full = _outer_loop(cd, rec, X, mu, tol, max_iter, deadline, t0)
    if mu is not None:
        cd.b -= mu @ cd.W
    clock = time.perf_counter() - t0
    return SmoothResult(X, epochs, bool(full.rel_gap <= tol), full.primal, full.dual,
                        float(full.rel_gap), clock, n_outer, rec.result())


def _outer_loop(cd, rec, X, mu, tol, max_iter, deadline, t0):
    """Full certificate, working set, subproblem, until the full gap meets ``tol`` (or the
    caps, or no progress for :data:`STALL_EPOCHS` epochs): ``(epochs, rounds, last certificate)``."""
    epochs = 0
    n_outer = 0
    ws_size = MIN_WS
    best = (np.inf, 0)
    # square and one-vs-all (l1, l1inf) from smooth_qp.TERMS_MIN_SCORES scores on: FISTA, then
    # term generation once the gap is at most TERMS_MAX_GAP; logit (l1, l12, l1inf; with
    # LOGIT_FISTA): FISTA at every size; the others: full QPs up to smooth_qp.QP_MAX_SCORES,
    # above that FISTA
    terms = smooth_qp.terms_available(cd.method, cd.geo, *cd.S.shape)
    logit_fista = LOGIT_FISTA and cd.method == "logit" and cd.geo.name in _Face.PENALTIES
    exact = terms or (not logit_fista and smooth_qp.available(cd.geo, *cd.S.shape))
    fista = terms or logit_fista or (not exact and cd.S.size > FISTA_MIN_SCORES)
    terms_tried = np.inf   # the full gap at the last term generation that gave no point
    # on the FISTA path without term generation (which solves exactly): Newton steps on the
    # penalty's face from NEWTON_CG_MAX_GAP on, again only after the gap has fallen tenfold
    # since a step that did not halve it
    newton = fista and not terms and cd.geo.name in _Face.PENALTIES
    newton_from, newton_tried = None, np.inf
    stall_after = FISTA_STALL if fista else STALL_EPOCHS
    last_ws = None
    while True:
        full = smooth_gap_scores(cd.method, cd.Phi, cd.y, cd.S, cd.W, cd.geo, cd.lam)
        n_outer += 1
        if rec.on:
            rec.add(epochs, time.perf_counter() - t0, full, X, cd.W, mu)
        if full.rel_gap < 0.5 * best[0]:
            best = (full.rel_gap, epochs)
        stalled = epochs - best[1] > stall_after
        if (full.rel_gap <= tol or epochs >= max_iter or stalled
                or time.perf_counter() > deadline):
            return epochs, n_outer, full
        if newton_from is not None and full.rel_gap > 0.5 * newton_from:
            newton_tried = newton_from
        newton_from = None
        if (newton and full.rel_gap <= NEWTON_CG_MAX_GAP and full.rel_gap <= 0.1 * newton_tried
                and cd.support_newton()):
            epochs += 1
            newton_from = full.rel_gap
            continue
        ws, ws_size = cd.working_set(ws_size)
        inner_tol = max(INNER_RATIO * full.rel_gap, 0.5 * tol)
        if (exact and last_ws is not None and np.array_equal(ws, last_ws[0])
                and (cd.method != "logit" or full.rel_gap > 0.5 * last_ws[1])):
            # the same working set as the last QP, solved as exactly as the QP solver
            # allows (its tolerance smooth_qp.TOL; logit: the Newton steps no longer halve
            # the gap): coordinate descent polishes from here
            exact, best = False, (full.rel_gap, epochs)
        # term generation waits for a point whose near-active terms are the final ones
        qp_now = exact and not (terms and (full.rel_gap > TERMS_MAX_GAP
                                           or full.rel_gap > 0.1 * terms_tried))
        rows = cd.units.rows(ws) if qp_now else None
        if qp_now and 0 < rows.size * cd.W.shape[1] <= smooth_qp.QP_MAX_WEIGHTS:
            n_qp = cd.exact_subproblem(rows, inner_tol, deadline, terms=terms)
            if n_qp:
                epochs += n_qp
                last_ws = (ws, full.rel_gap)
                continue
            terms_tried = full.rel_gap
        if fista and ws.size:
            epochs = cd.accelerated(ws, inner_tol, epochs, max_iter, deadline)
        else:
            epochs = cd.subproblem(ws, inner_tol, epochs, max_iter, deadline)


# ---------------------------------------------------------------------------
# plug into SparseSVC(solver="accelerated", stopping="gap")
def _estimator_adapter(method):
    """``run(op, penalty, alpha, **)`` -> SolverResult for :data:`sparsesvm.solvers.registry.SOLVERS`."""

    def run(op, penalty, alpha, *, tol, max_iter, step_ratio, trace, reference, stopping):
        from ...solvers import SolverResult

        if stopping != "gap":
            raise ValueError(f"solver 'accelerated' supports stopping='gap' only, got {stopping!r}")
        check_double(op, "solver 'accelerated'")
        _, lam = model_parameters(method, alpha, op.n_samples)
        r = solve(method, op.Phi, op.y_idx, op.n_classes, penalty, lam, tol=tol,
                  max_iter=max_iter, trace=bool(trace), reference=reference)
        tr = None
        if trace:
            tr = {k: r.trace[k] for k in ("iteration", "time", "rel_change", "objective")}
            tr["iteration"] = tr["iteration"].astype(np.int64)
            if reference is not None:
                tr["rel_dist"] = r.trace["rel_dist"]
        return SolverResult(r.X, r.n_iter, r.converged, r.objective, 0.0, r.time, tr,
                            rel_gap=float(r.rel_gap))

    return run


register_solver("accelerated", {m: _estimator_adapter(m) for m in SMOOTH_METHODS}, ("gap",))
