"""Optimality certificates (duality gaps) for the exact-hinge problems.

The two problems of the paper (spec section 1), with X = [W; b^T] of shape
(M+1, K), scores S = Phi W + 1 b^T and (T X)[l, k] = S[l, k] - S[l, z_l]:

* hinge-reg:  P(X) = g(W) + lambda * sum_l h_l((T X)_l)
* hinge-con:  P(X) = g(W)  subject to  sum_l h_l((T X)_l) <= eta

with h_l(v) = max_k (v_k + r_lk).

Dual of hinge-reg (the paper's Remark)::

    maximise_Y  sum_l <r_l, Y_l> - g*(-T^T Y)   over  Y_l in S_lambda

Only the off-class entries a[l, k] = Y[l, k] (k != z_l) matter: a >= 0 with
row sums at most lambda (Y[l, z_l] takes the slack), and
<r_l, Y_l> = sum_k a[l, k]. The bias rows of T^T Y must vanish (the biases
are free): for every class c, the weight that samples of other classes put
on c equals the total weight of the samples of class c. Seen as flows
between classes, ``F[c, k] = sum_{l: z_l = c} a[l, k]`` must be a
*circulation*. For a norm g, g* is the indicator of the dual-norm unit ball.

Dual of hinge-con (Lagrangian with multiplier nu >= 0 of the constraint)::

    maximise_{nu, Y}  sum_l <r_l, Y_l> - nu * eta - g*(-T^T Y),  Y_l in S_nu

A dual iterate of a primal-dual method is turned into a *feasible* dual
point by (1) clipping a to >= 0, (2) removing the non-circulating part of
the class-to-class flow (flow decomposition: paths from excess to deficit
classes), (3) scaling by the largest factor that keeps the dual-norm and
simplex constraints (for g = l2 the optimal scale of the quadratic). The
dual value is then a lower bound on the optimum (weak duality), whatever
the iterate. For hinge-con the primal iterate is made feasible by scaling
X by the smallest theta >= 0 with sum_l h_l(theta (T X)_l) <= eta (the
loss along the ray is convex and piecewise linear; solved exactly); the
primal value theta^p g(W) (p = 1 for norms, 2 for l2) is then an upper
bound on the optimum. Hence ``gap = P - D >= P(X) - P*`` and
``rel_gap = gap / D >= (P(X) - P*) / P*`` whenever D > 0: both are
certified bounds on the suboptimality of the returned primal point.

The gap functions take the problem as a
:class:`~sparsesvm.model.operator.MulticlassOperator` (``op.T``, ``op.T_adjoint``,
``op.R``), the same object the solvers iterate with, and the regulariser as a
:class:`~sparsesvm.model.penalties.Penalty` (or its name and groups), whose
``value``, ``dual_norm`` and ``group_dual_norms`` they use; the losses are those
of :mod:`sparsesvm.model.losses`.
"""

from dataclasses import dataclass

import numpy as np

from .losses import hinge_loss, margins, ova_signs, smooth_loss
from .operator import MulticlassOperator
from .penalties import Penalty, check_groups, make_penalty

__all__ = [
    "GapResult",
    "hinge_reg_gap",
    "hinge_con_gap",
    "feasible_scaling",
    "circulation_part",
    "certify",
    "SMOOTH_METHODS",
    "smooth_gap",
    "smooth_gap_scores",
]


# ---------------------------------------------------------------------------
def circulation_part(C, tol=1e-15):
    """Largest-part circulation F <= C of a class-to-class flow C (K, K).

    Removes, by flow decomposition, flow along paths from classes whose
    outflow exceeds their inflow to classes in deficit, until every class
    is balanced. What is removed is at most (K-1) times the total
    imbalance, so F -> C as C approaches a circulation.

    Parameters
    ----------
    C : ndarray (K, K), C >= 0 (diagonal ignored)

    Returns
    -------
    F : ndarray (K, K) with 0 <= F <= C, F.sum(1) == F.sum(0) (to rounding)
    """
    F = np.array(C, dtype=float, copy=True)
    np.fill_diagonal(F, 0.0)
    K = F.shape[0]
    total = F.sum()
    if total <= 0:
        return F
    thr = tol * total
    for _ in range(4 * K * K + 8):
        e = F.sum(axis=1) - F.sum(axis=0)
        s = int(np.argmax(e))
        if e[s] <= thr:
            break
        # breadth-first search along positive edges for a class in deficit
        prev = -np.ones(K, dtype=int)
        prev[s] = s
        queue, t = [s], -1
        while queue and t < 0:
            u = queue.pop(0)
            for v in np.flatnonzero(F[u] > 0):
                if prev[v] < 0:
                    prev[v] = u
                    if e[v] < 0:
                        t = v
                        break
                    queue.append(v)
        if t < 0:  # rounding: nothing reachable in deficit; drop the excess
            F[s] *= max(0.0, 1.0 - e[s] / max(F[s].sum(), 1e-300))
            continue
        path, v = [], t
        while v != s:
            path.append((prev[v], v))
            v = prev[v]
        delta = min(e[s], -e[t], min(F[u, v] for u, v in path))
        for u, v in path:
            F[u, v] = max(F[u, v] - delta, 0.0)
    return F


def _balanced_offclass(Y, y, K, cap=None):
    """Off-class part a >= 0 of Y (row sums <= cap), with circulating flow.

    Returns a (L, K) with a[l, z_l] = 0.
    """
    L = Y.shape[0]
    ar = np.arange(L)
    a = np.maximum(np.asarray(Y, dtype=float), 0.0)
    a[ar, y] = 0.0
    if cap is not None:
        rs = a.sum(axis=1)
        over = rs > cap
        if np.any(over):
            a[over] *= (cap / rs[over])[:, None]
    # class-to-class flow
    E = np.zeros((L, K))
    E[ar, y] = 1.0
    C = E.T @ a  # C[c, k] = sum_{l: z_l = c} a[l, k]
    F = circulation_part(C)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(C > 0, F / np.where(C > 0, C, 1.0), 0.0)
    return a * ratio[y]


@dataclass
class GapResult:
    """Primal and dual bounds at an iterate.

    Attributes
    ----------
    primal : float
        Objective of the certified primal point (for hinge-con the scaled,
        feasible point theta * X; inf when no feasible scaling exists).
    dual : float
        Dual value of the repaired (feasible) dual point; <= optimum.
    gap : float
        primal - dual (>= 0 up to rounding).
    rel_gap : float
        gap / dual (inf when dual <= 0 < gap); bounds (P - P*) / P*.
    theta : float
        Primal scaling used (1 for hinge-reg).
    violation : float
        max(0, loss(X) - eta) of the unscaled X (0 for hinge-reg).
    loss : float
        sum of hinge losses at the unscaled X.
    """

    primal: float
    dual: float
    gap: float
    rel_gap: float
    theta: float = 1.0
    violation: float = 0.0
    loss: float = 0.0


def _rel(gap, dual):
    if dual > 0:
        return max(gap, 0.0) / dual
    return 0.0 if gap <= 0 else np.inf


def _check(op, X, Y=None):
    """``(X, Y)`` as float arrays of the operator's shapes (Y None stays None)."""
    if not isinstance(op, MulticlassOperator):
        raise ValueError(f"op must be a sparsesvm.model.operator.MulticlassOperator, got {type(op).__name__}")
    L, M, K = op.n_samples, op.n_features, op.n_classes
    X = np.asarray(X, dtype=float)
    if X.shape != (M + 1, K):
        raise ValueError(f"X must have shape ({M + 1}, {K}), got {X.shape}")
    if Y is not None:
        Y = np.asarray(Y, dtype=float)
        if Y.shape != (L, K):
            raise ValueError(f"Y must have shape ({L}, {K}), got {Y.shape}")
    return X, Y


def _as_penalty(penalty, groups, M, K):
    """The penalty object for (M, K): ``penalty`` itself, or one made from a name and ``groups``."""
    if isinstance(penalty, str):
        return make_penalty(penalty, groups, M, K)
    if not isinstance(penalty, Penalty):
        raise ValueError(f"penalty must be a penalty name or a sparsesvm.model.penalties.Penalty, "
                         f"got {type(penalty).__name__}")
    if (penalty.n_features, penalty.n_classes) != (M, K):
        raise ValueError(f"the penalty is for (M, K) = {(penalty.n_features, penalty.n_classes)}, "
                         f"the operator has {(M, K)}")
    return penalty


def _hinge_setup(op, X, Y, penalty, groups, TX):
    """Checked ``(X, Y)``, the penalty object, ``T X`` and the total hinge loss at X."""
    X, Y = _check(op, X, Y)
    pen = _as_penalty(penalty, groups, op.n_features, op.n_classes)
    if TX is None:
        TX = op.T(X)
    return X, Y, pen, TX, hinge_loss(TX, op.R)


def _dual_direction(op, a):
    """Weight part V (M, K) of T^T a for an off-class dual point a (a[l, z_l] = 0).

    T^T a = [Phi^T G; 1^T G] with G = a off-class and G[l, z_l] = -sum_k a[l, k];
    the bias row 1^T G vanishes when the class-to-class flow of a circulates.
    """
    return op.T_adjoint(a)[:-1]


def hinge_reg_gap(op, X, Y, penalty, groups=None, lam=1.0, TX=None):
    """Certified duality gap of hinge-reg at (X, Y).

    Parameters
    ----------
    op : MulticlassOperator
        The operator T of the problem (features Phi (L, M), labels, K classes).
    X : ndarray (M+1, K)
        Primal point (last row = biases).
    Y : ndarray (L, K)
        Any dual iterate (repaired internally to a feasible point).
    penalty : str or Penalty
        The regulariser: a name (with ``groups``) or a
        :class:`~sparsesvm.model.penalties.Penalty` made for the operator's (M, K).
    groups : None, int or "features"
        With a penalty name only.
    lam : float
        lambda > 0.
    TX : ndarray (L, K), optional
        ``op.T(X)`` if already known (saves a product with Phi).

    Returns
    -------
    GapResult
    """
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    X, Y, pen, TX, loss = _hinge_setup(op, X, Y, penalty, groups, TX)
    primal = pen.value(X, check_input=False) + lam * loss
    a = _balanced_offclass(Y, op.y_idx, op.n_classes, cap=lam)
    A = float(a.sum())
    if A <= 0:
        dual = 0.0
    else:
        V = _dual_direction(op, a)
        cmax = lam / float(a.sum(axis=1).max())
        if pen.name == "l2":
            Q = float(np.vdot(V, V))
            c = cmax if Q <= 0 else min(cmax, A / Q)
            dual = c * A - 0.5 * c * c * Q
        else:
            dn = pen.dual_norm(V)
            c = cmax if dn <= 0 else min(cmax, 1.0 / dn)
            dual = c * A
    gap = primal - dual
    return GapResult(primal, dual, gap, _rel(gap, dual), 1.0, 0.0, loss)


def feasible_scaling(TX, R, eta):
    """Smallest theta >= 0 with sum_l max_k(theta*TX + R)[l, k] <= eta.

    The loss along the ray is convex and piecewise linear in theta; Newton
    from theta = 0 (from the left of the root) is monotone and ends in
    finitely many steps.

    Returns
    -------
    float or None
        theta, or None when no theta >= 0 is feasible.
    """
    L = TX.shape[0]
    theta = 0.0
    for _ in range(10 * L + 50):
        Z = theta * TX + R
        m = Z.max(axis=1)
        F = m.sum() - eta
        if F <= 1e-12 * max(1.0, abs(eta)):
            return theta
        # right derivative: among maximisers take the largest slope
        tie = Z >= m[:, None] - 1e-12 * (1.0 + np.abs(m[:, None]))
        slope = np.where(tie, TX, -np.inf).max(axis=1).sum()
        if slope >= 0:
            return None
        new = theta - F / slope
        if not new > theta:
            new = theta * (1 + 1e-12) + 1e-300
        theta = new
    Z = theta * TX + R
    return theta if Z.max(axis=1).sum() <= eta * (1 + 1e-9) else None


def hinge_con_gap(op, X, Y, penalty, groups=None, eta=1.0, TX=None):
    """Certified duality gap of hinge-con at (X, Y).

    The primal bound is g at the feasible point theta * X (see
    :func:`feasible_scaling`); the dual bound uses the Lagrangian dual with
    multiplier nu = max row sum of the repaired dual point.

    Parameters
    ----------
    op, X, Y, penalty, groups : as :func:`hinge_reg_gap`
    eta : float
        Constraint level (> 0).
    TX : ndarray (L, K), optional

    Returns
    -------
    GapResult
        ``theta`` is the scaling applied to X; ``violation`` that of X itself.
    """
    if not eta > 0:
        raise ValueError(f"eta must be > 0, got {eta}")
    X, Y, pen, TX, loss = _hinge_setup(op, X, Y, penalty, groups, TX)
    theta = feasible_scaling(TX, op.R, eta)
    gW = pen.value(X, check_input=False)
    if theta is None:
        primal = np.inf
        theta = np.nan
    else:
        primal = gW * (theta ** 2 if pen.name == "l2" else theta)
    a = _balanced_offclass(Y, op.y_idx, op.n_classes)
    A = float(a.sum())
    dual = 0.0
    if A > 0:
        B = A - eta * float(a.sum(axis=1).max())
        if B > 0:
            V = _dual_direction(op, a)
            if pen.name == "l2":
                Q = float(np.vdot(V, V))
                dual = np.inf if Q <= 0 else 0.5 * B * B / Q
            else:
                dn = pen.dual_norm(V)
                dual = np.inf if dn <= 0 else B / dn
    gap = primal - dual
    return GapResult(primal, dual, gap, _rel(gap, dual), theta, max(0.0, loss - eta), loss)


def certify(method, op, penalty, X, Y, *, lam=None, eta=None, TX=None):
    """Certified gap of an exact-hinge iterate, from the package's objects.

    A one-call hook for any exact-hinge solver loop (e.g. the paper's
    Algorithms 1 and 2 or hinge-lin in :mod:`sparsesvm.solvers`).

    Parameters
    ----------
    method : {"hinge-reg", "hinge-con", "hinge-lin"}
        hinge-lin has the optimum of hinge-con; its dual iterate (one
        multiplier per linear constraint (l, k)) is certified the same way.
    op : MulticlassOperator
    penalty : Penalty
        Made for the operator's (M, K).
    X : ndarray (M+1, K)
    Y : ndarray (L, K)
        Dual iterate of the solver (repaired internally).
    lam : float
        For hinge-reg.
    eta : float
        For hinge-con / hinge-lin.
    TX : ndarray (L, K), optional
        ``op.T(X)`` if already known.

    Returns
    -------
    GapResult
    """
    if method == "hinge-reg":
        if lam is None:
            raise ValueError("certify: hinge-reg needs lam")
        return hinge_reg_gap(op, X, Y, penalty, lam=lam, TX=TX)
    if method in ("hinge-con", "hinge-lin"):
        if eta is None:
            raise ValueError(f"certify: {method} needs eta")
        return hinge_con_gap(op, X, Y, penalty, eta=eta, TX=TX)
    raise ValueError(f"certify: method must be hinge-reg, hinge-con or hinge-lin, got {method!r}")


# ---------------------------------------------------------------------------
# Smooth baselines: square, logit, one-vs-all (issue 13)
# ---------------------------------------------------------------------------
#: methods certified by :func:`smooth_gap`
SMOOTH_METHODS = ("square", "logit", "ova")


def _smooth_dual_point(method, S, y, lam):
    """The dual point ``U = lam * grad`` (L, K) of a smooth loss at the scores S (L, K).

    * square: ``U = 2 lam max(0, T X + R)`` off-class (0 on the class z_l);
    * logit: ``U = lam softmax(T X + R)`` off-class (0 on the class z_l);
    * ova: ``U[:, k] = 2 lam max(0, 1 - y_lk S[l, k])`` (``y_lk = +-1``),
      the multiplier magnitudes of the K binary problems.

    ``T X + R`` are the :func:`~sparsesvm.model.losses.margins` of S.
    """
    if method == "ova":
        return 2.0 * lam * np.maximum(1.0 - ova_signs(y, S.shape[1]) * S, 0.0)
    Z = margins(S, y)
    if method == "square":
        return 2.0 * lam * np.maximum(Z, 0.0)
    m = Z.max(axis=1, keepdims=True)
    E = np.exp(Z - m)
    U = lam * (E / E.sum(axis=1)[:, None])
    U[np.arange(S.shape[0]), y] = 0.0
    return U


def _xlogx(v):
    """v log v with 0 log 0 = 0 (v >= 0)."""
    return v * np.log(np.where(v > 0, v, 1.0))


def _logit_scale(U, s, lam, cmax, Q):
    """Best scale c in [0, cmax] of the logit dual point U (rows sums s).

    The dual value along the ray is
    ``phi(c) = -sum c U log(c U / lam) + c sum U - lam sum_l q_l log q_l - c^2 Q / 2``
    with ``q_l = 1 - c s_l / lam``: concave, so the root of its decreasing
    derivative is found by bisection (``Q = 0`` for a norm penalty).
    """
    pos = U > 0
    Up = U[pos]
    sp_ = s[s > 0]

    def dphi(c):
        q = np.maximum(1.0 - c * sp_ / lam, 1e-300)
        return (-float(np.sum(Up * np.log(c * Up / lam))) + float(np.sum(sp_ * np.log(q)))
                + float(sp_.sum()) - c * Q)

    if dphi(cmax) >= 0:
        return cmax
    lo, hi = 0.0, cmax
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if dphi(mid) > 0:
            lo = mid
        else:
            hi = mid
    return lo


def _logit_dual_value(U, s, lam, c, Q):
    """phi(c) of :func:`_logit_scale`."""
    q = np.maximum(1.0 - c * s / lam, 0.0)
    return (-float(np.sum(_xlogx(c * U / lam))) * lam + c * float(U.sum())
            - lam * float(np.sum(_xlogx(q))) - 0.5 * c * c * Q)


def _ova_balance(U, y):
    """Make each column's signed multipliers sum to zero (the bias condition).

    Column k of the binary problem k has multipliers ``u_l = -U[l, k] y_lk``
    with ``U >= 0``; ``sum_l u_l = 0`` says that the mass on the class's
    samples equals the mass on the others. The heavier side is scaled down
    to the lighter (exact, keeps ``U >= 0``).
    """
    L, K = U.shape
    U = np.maximum(U, 0.0)
    on = np.zeros((L, K), dtype=bool)
    on[np.arange(L), y] = True
    pos = np.where(on, U, 0.0).sum(axis=0)
    neg = U.sum(axis=0) - pos
    with np.errstate(divide="ignore", invalid="ignore"):
        fpos = np.where(pos > neg, np.where(pos > 0, neg / pos, 0.0), 1.0)
        fneg = np.where(neg > pos, np.where(neg > 0, pos / neg, 0.0), 1.0)
    return U * np.where(on, fpos, fneg)


def smooth_gap_scores(method, Phi, y_idx, S, W, penalty, lam):
    """Certified duality gap of a smooth baseline from its scores.

    The core of :func:`smooth_gap`, on any feature matrix (a working-set
    solver passes the columns of its working set and the penalty made for them).

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    Phi : ndarray (L, M) or sparse matrix
    y_idx : int ndarray (L,)
    S : ndarray (L, K)
        Scores ``Phi W + 1 b^T`` of the point.
    W : ndarray (M, K)
        Weights of the point (biases enter through S only).
    penalty : Penalty
        Made for (M, K).
    lam : float > 0

    Returns
    -------
    GapResult
    """
    y = np.asarray(y_idx)
    loss = smooth_loss(method, S, y)
    primal = penalty.weight_value(W) + lam * loss
    U = _smooth_dual_point(method, S, y, lam)
    if method == "ova":
        dual = _ova_dual(U, y, Phi, penalty, lam)
    else:
        dual = _multiclass_smooth_dual(method, U, y, Phi, penalty, lam)
    gap = primal - dual
    return GapResult(primal, dual, gap, _rel(gap, dual), 1.0, 0.0, loss)


def _ova_dual(U, y, Phi, penalty, lam):
    """Dual value of one-vs-all at the gradient point U (L, K): the K binary duals, each scaled best."""
    U = _ova_balance(U, y)
    V = np.asarray(Phi.T @ (U * ova_signs(y, U.shape[1])))
    A = U.sum(axis=0)
    B = (U * U).sum(axis=0) / (4.0 * lam)
    if penalty.name == "l2":
        Q = (V * V).sum(axis=0)
        den = 2.0 * B + Q
        c = np.where(den > 0, A / np.where(den > 0, den, 1.0), 0.0)
        return float(np.sum(c * A - c * c * (B + 0.5 * Q)))
    dn = penalty.group_dual_norms(V).max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(B > 0, A / (2.0 * np.where(B > 0, B, 1.0)), 0.0)
        c = np.where(dn > 0, np.minimum(c, 1.0 / np.where(dn > 0, dn, 1.0)), c)
    return float(np.sum(c * A - c * c * B))


def _multiclass_smooth_dual(method, U, y, Phi, penalty, lam):
    """Dual value of square or logit at the gradient point U (L, K), made feasible and scaled best."""
    L, K = U.shape
    # exact bias condition: the class-to-class flow of U must circulate
    U = _balanced_offclass(U, y, K, cap=lam if method == "logit" else None)
    G = U.copy()
    G[np.arange(L), y] = -U.sum(axis=1)
    V = np.asarray(Phi.T @ G)
    if penalty.name == "l2":
        Q, cmax = float(np.vdot(V, V)), np.inf
    else:
        dn = penalty.dual_norm(V)
        Q, cmax = 0.0, (1.0 / dn if dn > 0 else np.inf)
    if method == "square":
        A, B = float(U.sum()), float(np.vdot(U, U)) / (4.0 * lam)
        den = 2.0 * B + Q
        c = min(cmax, A / den) if den > 0 else 0.0
        return c * A - c * c * (B + 0.5 * Q)
    s = U.sum(axis=1)
    smax = float(s.max())
    if smax <= 0:
        return 0.0
    c = _logit_scale(U, s, lam, min(cmax, lam / smax), Q)
    return _logit_dual_value(U, s, lam, c, Q)


def smooth_gap(method, op, X, penalty, groups=None, lam=1.0, S=None):
    """Certified duality gap of square, logit or one-vs-all at X.

    The three problems, ``P(X) = g(W) + lam * sum_l f_l(S_l)`` with scores
    ``S = Phi W + 1 b^T`` (biases free)::

        square: f_l = sum_{k != z_l} max(0, 1 + S_lk - S_lz)^2
        logit:  f_l = log(1 + sum_{k != z_l} exp(1 + S_lk - S_lz))
        ova:    f_l = sum_k max(0, 1 - y_lk S_lk)^2     (y_lk = +1 iff k = z_l)

    Fenchel dual (square, logit; ``U`` (L, K) off-class, ``G = U`` with
    ``G[l, z_l] = -sum_k U[l, k]``, ``V = Phi^T G``)::

        maximise_U  -(lam F)^*(U) - g*(V)   subject to  1^T G = 0,

    with ``(lam F)^*(U) = ||U||^2 / (4 lam) - sum U`` (``U >= 0``) for square
    and ``lam sum_l [sum_k p_lk log p_lk + q_l log q_l - sum_k p_lk]``
    (``p = U / lam``, ``q_l = 1 - sum_k p_lk >= 0``) for logit. one-vs-all is
    the sum of K binary duals: ``maximise sum_l a_l - ||a||^2 / (4 lam) -
    g_k*(Phi^T (a * y_k))`` over ``a >= 0`` with ``sum_l a_l y_lk = 0``.

    The dual point is the gradient at X (``U = lam * grad``; at the optimum
    it is the dual solution), made feasible *exactly*: the bias condition by
    removing the non-circulating part of the class-to-class flow (square,
    logit: :func:`circulation_part`, as for the hinge) or by scaling down the
    heavier side of each binary problem (ova: :func:`_ova_balance`), then
    scaled by the best factor ``c`` that keeps ``g*(c V)`` finite (dual norm
    of the penalty <= 1; for l2 ``g* = ||.||^2 / 2``): closed form for the
    quadratic duals, bisection on the concave logit dual. Weak duality then
    makes ``gap = P(X) - D >= P(X) - P*`` whatever X.

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    op : MulticlassOperator
    X : ndarray (M+1, K)
    penalty : str or Penalty
        A name (with ``groups``) or a penalty made for the operator's (M, K).
    groups : None, int or "features"
        With a penalty name only (``"features"`` is not allowed for ova).
    lam : float > 0
    S : ndarray (L, K), optional
        ``op.scores(X)`` if already known.

    Returns
    -------
    GapResult
    """
    if method not in SMOOTH_METHODS:
        raise ValueError(f"smooth_gap: method must be one of {SMOOTH_METHODS}, got {method!r}")
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam}")
    X, _ = _check(op, X)
    pen = _as_penalty(penalty, groups, op.n_features, op.n_classes)
    check_groups(pen.name, pen.groups, op.n_features, method)
    if S is None:
        S = op.scores(X)
    return smooth_gap_scores(method, op.Phi, op.y_idx, S, X[:-1], pen, lam)
