"""The exact-hinge LP (l1, l1inf) by an interior-point method in sample space.

For l1 and l1,inf both problems are linear programs. With the group bounds t_g
(a group's largest weight) and the hinge values xi_l they read (hinge-reg)::

    min  sum_g t_g + lam * sum_l xi_l
    s.t. (T X)[l, k] + R[l, k] - xi_l <= 0       (l, k != z_l)   hinge rows, multipliers Y[l, k]
          W_e - t_g <= 0,  -W_e - t_g <= 0      (e in group g)  bound rows
          xi >= 0;  W, b, t free

and hinge-con minimises ``sum_g t_g`` with one more row ``sum_l xi_l <= eta`` (l1: every
weight its own group). :class:`InteriorPoint` solves it by Mehrotra's predictor-corrector
method (Mehrotra 1992; Wright, *Primal-Dual Interior-Point Methods*, 1997, ch. 10) with
Gondzio's multiple centrality correctors (Gondzio 1996; Colombo and Gondzio 2008: up to
:data:`MAX_CORRECTORS` more solves with the same factor where they lengthen the step) from
an infeasible start, and stops on the certified gap of :mod:`sparsesvm.model.certificates`
at its iterates, like every accelerated engine: at the requested tolerance, not at the LP's
optimum.

Its Newton system ``(A^T D A + Z / xi) dx = g`` (D = y / s for every row) is solved in
*sample space*: the bound rows' part P is block-diagonal, one arrow block per group (its
weights and t_g), inverted in closed form; the hinge rows are added by the Woodbury
identity, which leaves the symmetric positive definite matrix

    S = A_W P^{-1} A_W^T + diag(s / y)      (L(K-1) rows)

to factor (Cholesky, ``S = C C^T``, in place in the array S was assembled in, which each
iteration reuses). ``A_W P^{-1} A_W^T`` is assembled from the K class Gram matrices
``Phi diag(d_c) Phi^T`` (BLAS ``syrk``) by the hinge rows' difference pattern
``e_k - e_{z_l}``, and the groups' rank-one terms. A *border* of columns B is solved apart
through S, in a small dense system ``F = V^T V + E`` (``V = C^{-1} B``, which also lets a
solve make one substitution through C each way): the hinge values xi and the biases (the
biases have a common-shift null direction, closed by a rank-one term), and, once they stand
out, the weights of the groups with the largest bounds (at most :data:`BORDER_MAX`): near the
optimum their arrow blocks are nearly singular (a weight at its group's bound moves freely
with the bound) and through P^{-1} the Woodbury identity cancelled huge terms (measured on
6f70625 at tol 1e-7, ``bench_family.py``'s l1 rows: without the border the iterations stop
at certified gaps of 2.4e-6 to 8.7e-5, with it at 3.1e-9 to 4.0e-7). Hinge-con's row enters
F by its scalar Schur complement. The factor holds a small primal regularisation of the weights
(:data:`PRIMAL_REGULARISATION`); Mehrotra's direction is refined against the
unregularised system, applied by products, not the predictor (only its step lengths are
used) nor Gondzio's corrections to it. An iteration costs about ``K L^2 M / 2 + (L(K-1))^3 / 6``
multiply-adds (:func:`iteration_madds`), whatever the number of support vectors: cheap where
L(K-1) is a few hundred and the features many (the dense noisy problems of
``benchmarks/bench_family.py``, where column generation's masters grow with the support
vectors and PDHG needs thousands of iterations), dear for large L, where the other engines
take over (:func:`predicted_seconds`, used by the accelerated solver's engine portfolio).
"""

import time

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.linalg.blas import dsyrk

from . import clock as prices
from .clock import WALL
from .ipm import STEP_FRACTION, _step_to_boundary

__all__ = ["LP_PENALTIES", "InteriorPoint", "cost_shape", "iteration_madds",
           "iteration_seconds", "predicted_seconds"]

#: the penalties whose problems are linear programs, the ones this engine solves
LP_PENALTIES = ("l1", "l1inf")

#: S's diagonal is multiplied by 1 + REGULARISATION (each entry relative to itself: near the
#: optimum s / y spreads over many orders of magnitude, and a shift relative to the largest
#: entry swamped the active rows)
REGULARISATION = 1e-13
#: the weights' primal regularisation in the Newton systems' factor, divided by the largest
#: group bound. Measured (6f70625, tol 1e-7, bench_family's l1,inf rows): without it the
#: iterations stop at certified gaps of 5.2e-5 to 8.4e-5 on MNIST-like features (groups of 81
#: weights, most of them strictly inside the bound at the optimum) and 8.9e-6 to 2.4e-5 on
#: the dense noisy problem; with it at 1.4e-6 to 6.8e-6 on both; its l1 rows alike (2.4e-9 to
#: 4.0e-7 without, 3.1e-9 to 4.0e-7 with)
PRIMAL_REGULARISATION = 1e-5
#: iterations without a smaller (finite) certified gap after which the method gives up (its
#: Newton systems' rounding then moves the iterates more than the steps improve them)
STALL_ITERATIONS = 6
#: groups whose bound t_g is at least BORDER_REL times the largest are solved with the
#: border (:meth:`_HingeLP._choose_border`) when they hold at most as many weights as there
#: are hinge rows L(K - 1) and at most BORDER_MAX: a wider border's own factor, of L + K + its
#: weights columns, costs more than S's. Once a direction's relative residual after its
#: refinement exceeds WIDEN_RESIDUAL with such a border left out, the iteration is done again
#: with it, and so are the next ones (:meth:`InteriorPoint._iterate`). Measured on
#: ``benchmarks/bench_family.py``'s 100 x 500 x 3 problem, l1,inf hinge-con (490-500 such
#: weights from its 11th iteration on, 200 hinge rows), the engine alone at tol 1e-4 (least of
#: 3, fresh clones of 5038d8e and of 912e159, whose border took them): 0.075 s against
#: 0.117 s, the same 14 iterations and support (51 groups); its l1 rows 0.056-0.064 s against
#: 0.065-0.072 s (the early iterations' borders of every weight gone). At tol 1e-7 the residuals
#: without that border grow from 1e-11 to 1.6e-8 at a gap of 3e-6, then 7e-5, and that step
#: threw the gap from 4e-7 back to 2e-3; with the widening all six rows stop where 912e159's
#: did (l1,inf hinge-con at 2.0e-8 in 21 iterations, against 2.5e-8)
BORDER_REL = 1e-2
BORDER_MAX = 500
WIDEN_RESIDUAL = 1e-6
#: blocks of samples in the border's forward solve (:meth:`_HingeLP._forward_border`)
XI_BLOCKS = 8
#: iterations assumed by :func:`predicted_seconds`: measured at tol 1e-4 (6f70625, with the
#: iterations for exact zeros), 12-22 on ``benchmarks/bench_family.py``'s dense noisy
#: problem, 14-21 (l1) and 29-40 (l1,inf) on its MNIST-like one, 37 and 40 alone on real
#: MNIST features (L = 100 and 30, l1,inf with the 81 channels)
PREDICTED_ITERATIONS = 30
#: Gondzio's centrality correctors (:func:`_centrality_correctors`): at most MAX_CORRECTORS
#: an iteration, each aiming CORRECTOR_REACH beyond the current steps, the products kept in
#: CORRECTOR_BOX times the centring target, kept if the shorter step grows by CORRECTOR_GAIN
#: times the reach
MAX_CORRECTORS = 2
CORRECTOR_REACH = 0.3
CORRECTOR_BOX = (0.1, 10.0)
CORRECTOR_GAIN = 0.1
#: the returned point's exact zeros (:meth:`InteriorPoint._round`): in each iterate certified
#: within the tolerance, the groups whose largest weight is at most ROUND_THRESHOLDS[i] times
#: the largest of all are set to 0, for the first i (the sparsest) whose point the certificate
#: still puts within the tolerance. So that the groups that vanish at the optimum are small
#: enough to drop, the iterations go on after the first certificate within tol, to
#: ROUND_TIGHTEN times tol or for ROUND_EXTRA iterations
ROUND_THRESHOLDS = tuple(10.0 ** -np.arange(3, 10))
ROUND_TIGHTEN = 0.05
ROUND_EXTRA = 5


def iteration_madds(L, M, K, n_groups=0, within_class=True, border=0):
    """Multiply-adds of one iteration's dense linear algebra (module docstring): the class
    Gram matrices, the groups' rank-one terms (``n_groups`` groups of more than one weight,
    each in one class or across classes), S's Cholesky factor, and the border of
    ``L + K + border`` columns (its solves with S, its matrix and factor)."""
    m = L * (K - 1)
    nf = L + K + border
    groups = (L * L if within_class else (K * L) ** 2) * n_groups / 2.0
    return (K * L * L * M / 2.0 + groups + m ** 3 / 6.0
            + m * m * nf / 2.0 + m * nf * nf / 2.0 + nf ** 3 / 6.0)


def iteration_seconds(L, M, K, n_groups=0, within_class=True, border=0):
    """The price of one iteration on the reference machine besides its products with Phi
    (:mod:`~sparsesvm.solvers.accelerated.clock`'s ``HINGE_IPM_*`` prices: per iteration,
    per multiply-add of :func:`iteration_madds`, per entry of S and per weight)."""
    m = L * (K - 1)
    return (prices.HINGE_IPM_ITER_S
            + prices.HINGE_IPM_MADD_S * iteration_madds(L, M, K, n_groups, within_class, border)
            + prices.HINGE_IPM_ENTRY_S * m * m + prices.HINGE_IPM_WEIGHT_S * M * K)


def cost_shape(op, geo):
    """``(L, M, K, n_groups, within_class)`` of :func:`iteration_madds` for the problem: the
    groups of more than one weight (none for l1), each in one class (blocks, l1) or across
    classes (``"features"``), from the penalty's group layout."""
    L, M = op.Phi.shape
    n1, s, n2 = geo.group_shape
    return L, M, op.n_classes, n1 * n2 if s > 1 else 0, n2 == op.n_classes


def predicted_seconds(L, M, K, n_groups=0, within_class=True):
    """Seconds that :data:`PREDICTED_ITERATIONS` iterations take on the reference machine
    (without a border of weights)."""
    return PREDICTED_ITERATIONS * iteration_seconds(L, M, K, n_groups, within_class)


def _norm(parts):
    """Euclidean norm of a list of arrays."""
    return float(np.sqrt(sum(np.vdot(x, x) for x in parts)))


class _Structure:
    """The LP's index structure: each weight's group, the hinge rows, their patterns.

    Attributes
    ----------
    gid : int ndarray (M, K)
        Flat group index of each weight.
    size : int
        Entries per group (1 for l1: the rank-one terms fold into the diagonal).
    within_class : bool
        Every group lies in one class (the groups' terms stay in the class Gram blocks).
    li, ki, zi : int ndarray (m,)
        Sample, class and sample's label of each hinge row (row-major over (L, K)).
    B0 : ndarray (m, L + K)
        The hinge rows' columns of xi and of the biases (``e_k - e_{z_l}``): the border's
        fixed part.
    xi_blocks : list of (int, int)
        The first sample of each block of samples of the border's forward solve, with its
        first hinge row, then ``(L, m)`` (:meth:`_HingeLP._forward_border`).
    """

    def __init__(self, op, geo):
        L, M = op.Phi.shape
        K = op.n_classes
        n1, s, n2 = geo.group_shape
        self.geo, self.M, self.K = geo, M, K
        self.n_groups = n1 * n2
        self._ones = np.ones(s)
        flat = (np.arange(n1)[:, None] * n2 + np.arange(n2)[None, :])[:, None, :]
        self.gid = np.ascontiguousarray(geo.from_groups(np.broadcast_to(flat, geo.group_shape)),
                                        dtype=np.intp)
        self.size = s
        self.within_class = n2 == K  # blocks and l1: (n1, s, K); "features": (M, K, 1)
        self.gclass = np.arange(self.n_groups) % n2  # a within-class group's class
        self.off = op.R > 0
        self.li, self.ki = np.nonzero(self.off)
        self.r = op.R[self.off]  # the margins (1)
        self.zi = op.y_idx[self.li]
        m = len(self.li)
        Ab = np.zeros((m, K))
        Ab[np.arange(m), self.ki] += 1.0
        Ab[np.arange(m), self.zi] -= 1.0
        # the border's fixed columns: the hinge values xi (-1) and the biases (e_k - e_{z_l})
        self.B0 = np.hstack([-(self.li[:, None] == np.arange(L)[None, :]).astype(float), Ab])
        # the blocks of samples of the border's forward solve (_HingeLP._forward_border):
        # (first sample, its first hinge row) of each, then (L, m)
        first = np.linspace(0, L, min(XI_BLOCKS, L) + 1).round().astype(np.intp)
        self.xi_blocks = list(zip(first.tolist(), np.searchsorted(self.li, first).tolist()))
        if self.within_class:
            # S's class-Gram part, entry by entry: S.flat[dest] += sign * grams.flat[src]
            # (the four blocks of each class k: the rows (l, k), +1 on class k's weights, and
            # the rows of class-k samples, -1), S's lower triangle only (its Cholesky factor
            # reads no other) from the Gram matrices' lower triangles; kept as the distinct
            # entries of S (pos) and each term's among them (inv)
            dest, src, sign = [], [], []
            for k in range(K):
                plus, minus = np.flatnonzero(self.ki == k), np.flatnonzero(self.zi == k)
                for R1, s1 in ((plus, 1.0), (minus, -1.0)):
                    for R2, s2 in ((plus, 1.0), (minus, -1.0)):
                        low = R1[:, None] >= R2[None, :]
                        l1, l2 = self.li[R1][:, None], self.li[R2][None, :]
                        dest.append((R1[:, None] * m + R2[None, :])[low])
                        src.append((k * L * L + np.maximum(l1, l2) * L + np.minimum(l1, l2))[low])
                        sign.append(np.full(int(low.sum()), s1 * s2))
            pos, inv = np.unique(np.concatenate(dest), return_inverse=True)
            self.assembly = (pos, inv, np.concatenate(src), np.concatenate(sign))
        else:  # the classes' Gram blocks coupled: S = C G C^T, row (l, k) of C +1 at (k, l),
            # -1 at (z_l, l)
            rows = np.repeat(np.arange(m), 2)
            cols = np.stack([self.ki * L + self.li, self.zi * L + self.li], axis=1).ravel()
            self.C = sp.csr_matrix((np.tile([1.0, -1.0], m), (rows, cols)), shape=(m, K * L))
        # each group's weights (flat indices j K + k; -1 for a block's padding): (n_groups, s)
        idx = geo.to_groups(np.arange(1, M * K + 1, dtype=float).reshape(M, K))
        self.members = np.rint(idx.transpose(0, 2, 1).reshape(-1, s)).astype(np.intp) - 1
        # the groups' rank-one terms V: v[j, k] at (j, column of its group); within classes
        # (M, n_groups), the groups of each class in consecutive columns (class k's from
        # class_cols[k] to class_cols[k + 1]); across classes (M, K n_groups), at
        # k n_groups + gid (the class's rows of each group)
        self.v_rows = np.repeat(np.arange(M), K)
        if self.within_class:
            order = np.argsort(self.gclass, kind="stable")
            self.v_perm = order  # column i holds group order[i]
            rank = np.empty_like(order)
            rank[order] = np.arange(self.n_groups)
            self.v_cols = rank[self.gid].ravel()
            self.class_cols = np.searchsorted(self.gclass[order], np.arange(K + 1))
        else:
            self.v_cols = (np.arange(K)[None, :] * self.n_groups + self.gid).ravel()

    def group_sum(self, A):
        """Sum of A (M, K) over each group: (n_groups,) (a product with ones over the groups'
        axis of the penalty's group layout: faster than ``bincount`` on ``gid``)."""
        return np.matmul(self._ones, self.geo.to_groups(A)).ravel()

    def spread(self, p):
        """Each weight's group's entry of p (n_groups,): ``p[gid]`` (M, K), by repetition along
        the groups' axis (faster than the gather)."""
        n1, s, n2 = self.geo.group_shape
        return np.repeat(p.reshape(n1, 1, n2), s, axis=1).reshape(-1, self.K)[:self.M]


class _HingeLP:
    """The LP of the module docstring for ``op``, ``geo``, ``kind`` ("reg" or "con") and its
    parameter: residuals, products and the Newton system's solution."""

    def __init__(self, op, geo, kind, par):
        self.op, self.geo, self.kind, self.par = op, geo, kind, float(par)
        self.st = _Structure(op, geo)
        self.L, self.M = op.Phi.shape
        self.K = op.n_classes
        self.con = kind == "con"
        self.c_xi = 0.0 if self.con else self.par
        self.bflat = np.zeros(0, dtype=np.intp)  # the border's weights (none before a factor)
        # the border's width: at most the hinge rows' count, up to BORDER_MAX once a direction
        # was inaccurate without (InteriorPoint._iterate); border_cut: the last factor left
        # out a border within BORDER_MAX; residual: the last refined solve's relative residual
        # (0 where no border was cut)
        self.border_limit = min(BORDER_MAX, len(self.st.li))
        self.border_cut = False
        self.residual = 0.0
        self._S = None  # S's array, reused from iteration to iteration (_gram_rows)

    # -- the rows' products -------------------------------------------------
    def hinge_values(self, W, b):
        """``(T X)[l, k]`` on the hinge rows (m,), for X = [W; b]."""
        return self.op.T(np.vstack([W, b[None, :]]))[self.st.off]

    def hinge_adjoint(self, w):
        """``(A_W^T w, A_b^T w)`` of hinge-row values w (m,): (M, K) and (K,)."""
        Y = np.zeros((self.L, self.K))
        Y[self.st.off] = w
        G = self.op.T_adjoint(Y)
        return G[:-1], G[-1]

    def xi_adjoint(self, w, wc):
        """The xi part of ``A^T`` of the hinge rows' w (m,) and the constraint row's wc."""
        return -np.bincount(self.st.li, weights=w, minlength=self.L) + wc

    # -- the Newton system ----------------------------------------------------
    def _class_gram(self, d, full=True):
        """``Phi diag(d) Phi^T`` (L, L): both triangles, or (``full=False``) at least the
        lower one."""
        Phi = self.op.Phi
        if sp.issparse(Phi):
            return (Phi.multiply(d[None, :]) @ Phi.T).toarray()
        G = dsyrk(1.0, Phi * np.sqrt(d), lower=1)
        if full:
            G += np.tril(G, -1).T
        return G

    def _gram_rows(self, dW, vv, sigma):
        """``A_W P^{-1} A_W^T`` on the hinge rows (m, m; where the groups lie within classes,
        its lower triangle only, the upper one 0): the class Gram matrices, with the groups'
        rank-one terms, spread by the rows' pattern ``e_k - e_{z_l}``."""
        st, L, K, Phi = self.st, self.L, self.K, self.op.Phi
        # within classes, S's lower triangle from the Gram matrices' (st.assembly)
        grams = [self._class_gram(dW[:, k], full=not st.within_class) for k in range(K)]
        if st.size > 1:
            cols = st.n_groups if st.within_class else K * st.n_groups
            Vsp = sp.csc_matrix((vv.ravel(), (st.v_rows, st.v_cols)), shape=(self.M, cols))
            # Q = Phi V (L, columns), Fortran order: a class's columns are contiguous
            Q = (np.asfortranarray((Phi @ Vsp).toarray()) if sp.issparse(Phi)
                 else np.asarray((Vsp.T @ Phi.T).T))
            if st.within_class:
                Q *= 1.0 / np.sqrt(sigma[st.v_perm])
                for k in range(K):
                    grams[k] += dsyrk(1.0, Q[:, st.class_cols[k]:st.class_cols[k + 1]],
                                      lower=1)
            else:  # groups across classes: the classes' blocks are coupled
                Q = Q.reshape(L, K, st.n_groups) / np.sqrt(sigma)
                full = sl.block_diag(*grams)
                Qs = Q.transpose(1, 0, 2).reshape(K * L, st.n_groups)
                full += Qs @ Qs.T
                return np.asarray(st.C @ np.asarray(st.C @ full).T)
        # into the (m, m) array of the last iteration, whose factor it became: a new one
        # each time paid its first writes' page faults (at m = 4500 the assembly took 0.15 s
        # an iteration so, 0.04 s now: README, "The iteration's linear algebra")
        m = len(st.li)
        if self._S is None:
            self._S = np.zeros((m, m))
        S = self._S
        S.fill(0.0)
        pos, inv, src, sign = st.assembly
        S.ravel()[pos] = np.bincount(inv, weights=sign * np.stack(grams).ravel()[src],
                                     minlength=len(pos))
        return S

    def factor(self, v):
        """Factor the Newton system at the point ``v`` (a dict of the iterate)."""
        st, L, K = self.st, self.L, self.K
        d1, d2 = v["y1"] / v["s1"], v["y2"] / v["s2"]
        self.D = dict(h=v["yh"] / v["sh"], b1=d1, b2=d2)
        if self.con:
            self.D["c"] = v["yc"] / v["sc"]
        a = d1 + d2
        c = d2 - d1
        # the weights' primal regularisation in the factor (the refinement is against the
        # unregularised system): it bounds P^{-1} on the weights strictly inside their group's
        # bound, whose a -> 0 (in units of 1 / weight, as a: relative to the largest bound)
        rho = PRIMAL_REGULARISATION / v["t"].max()
        ar = a + rho
        # t_g's Schur complement in its arrow block: sum_e (a_e - c_e^2 / a_e), in the form
        # without cancellation (one of d1, d2 grows without bound near the optimum)
        sigma = st.group_sum((4.0 * d1 * d2 + rho * (2.0 * a + rho)) / ar)
        self.sigma = sigma
        # P^{-1}'s coefficients (:meth:`_p_inverse`); a + c = 2 d2 + rho and a - c = 2 d1 + rho
        # without cancellation
        self.inv_a, self.c_a = 1.0 / ar, c / ar
        self.plus_a, self.minus_a = (2.0 * d2 + rho) / ar, (2.0 * d1 + rho) / ar
        self.xz = v["xi"] / v["z"]
        self._choose_border(v["t"])
        inner = ~self.bmask
        vv = np.where(inner, self.c_a, 0.0)
        dW = np.where(inner, self.inv_a, 0.0)
        if st.size == 1:  # l1: each group's rank-one term is diagonal
            dW = dW + vv * vv / st.spread(sigma)
        S = self._gram_rows(dW, vv, sigma)
        S[np.diag_indices_from(S)] += v["sh"] / v["yh"]
        S[np.diag_indices_from(S)] *= 1.0 + REGULARISATION
        # S is symmetric (or holds its lower triangle only) and C-ordered: its transpose is
        # the Fortran-ordered array LAPACK factors in place, into the upper factor C^T (S
        # itself would be copied first: 0.1-0.4 s more at m = 4500, README)
        chol = sl.cholesky(S.T, lower=False, overwrite_a=True, check_finite=False).T
        self.chol = chol
        B, E = self._border(a, c, 4.0 * d1 * d2)
        # V = C^{-1} B (S = C C^T): F's part, and each solve's (:meth:`_solve`)
        self.V = V = self._forward_border(chol, B)
        F = V.T @ V + E
        # Jacobi scaling (xi's pinned entries are huge), and the biases' common shift, F's
        # null direction (the right-hand sides are orthogonal to it): adding u u^T makes F
        # definite without changing the solution
        self.fscale = 1.0 / np.sqrt(np.maximum(np.diag(F), np.finfo(float).tiny))
        F = F * self.fscale[:, None] * self.fscale[None, :]
        u = np.zeros(len(F))
        u[L:L + K] = 1.0 / self.fscale[L:L + K]
        u /= np.linalg.norm(u)
        F += np.outer(u, u)
        self.F = (sl.cholesky(F, lower=True, check_finite=False), True)
        if self.con:
            # hinge-con's row sum(xi) <= eta, kept out of S: near the optimum its s / y
            # vanishes, and through S^{-1} it would add a huge multiple of 1 1^T to the
            # xi block; its multiplier is the scalar Schur complement of the bordered system
            self.ones = np.zeros(len(F))
            self.ones[:L] = 1.0
            self.F_ones = self._f_solve(self.ones)
            self.con_schur = self.ones @ self.F_ones + v["sc"] / v["yc"]

    def _forward_border(self, chol, B):
        """``C^{-1} B`` for the factor C (lower) of S and the border's columns B (rows,
        L + K + bordered weights), by blocks of rows: xi's column l is 0 above sample l's
        first hinge row (the rows are sample-major), and so is its solution, so the products
        of a block of rows with the solution above it start at the first row of each
        column's block of samples (:data:`XI_BLOCKS` blocks: about 0.4 of the xi columns'
        multiply-adds of a dense triangular solve)."""
        L = self.L
        bounds = self.st.xi_blocks  # (first sample, first row) of each block, then (L, m)
        V = np.zeros_like(B)
        for i in range(len(bounds) - 1):
            (_, r0), (s1, r1) = bounds[i], bounds[i + 1]
            if r1 == r0:
                continue
            rows = slice(r0, r1)
            T = np.empty((r1 - r0, B.shape[1] - L + s1))
            # the columns that may be non-zero in these rows: xi's of samples < s1, the rest
            T[:, :s1] = B[rows, :s1]
            T[:, s1:] = B[rows, L:]
            if r0:
                T[:, s1:] -= chol[rows, :r0] @ V[:r0, L:]
                for j in range(i):  # xi's columns of the blocks above, from their first row
                    (a0, q0), (a1, _) = bounds[j], bounds[j + 1]
                    T[:, a0:a1] -= chol[rows, q0:r0] @ V[q0:r0, a0:a1]
            T = sl.solve_triangular(chol[rows, rows], T, lower=True, check_finite=False)
            V[rows, :s1] = T[:, :s1]
            V[rows, L:] = T[:, s1:]
        return V

    def _f_solve(self, g):
        """``F^{-1} g`` (F: the border's matrix, factored with its scaling)."""
        return self.fscale * sl.cho_solve(self.F, self.fscale * g, check_finite=False)

    def _choose_border(self, t):
        """The groups solved with the border instead of through P: those whose bound t_g is
        at least :data:`BORDER_REL` times the largest, when they hold at most
        :attr:`border_limit` weights (else none: early iterations, before the active groups
        stand out, and borders wider than S). Their (W, t_g) arrow blocks become nearly singular near the optimum (a
        weight at the group's bound, or strictly inside it, moves freely with t_g), and
        through P^{-1} the Woodbury identity would cancel huge terms."""
        st = self.st
        cand = t >= BORDER_REL * t.max()
        members = st.members[cand]
        width = (members >= 0).sum()
        self.border_cut = self.border_limit < width <= BORDER_MAX
        if width > self.border_limit:
            cand[:] = False
            members = st.members[:0]
        self.bgroups = np.flatnonzero(cand)
        self.bmembers = members
        self.bvalid = members >= 0
        self.bflat = members[self.bvalid]
        self.bmask = np.zeros(self.M * self.K, dtype=bool)
        self.bmask[self.bflat] = True
        self.bmask = self.bmask.reshape(self.M, self.K)

    def _border(self, a, c, d12):
        """The border's columns B (rows, L + K + bordered weights) in the hinge rows (and the
        constraint row) and its own block E: xi's Z / xi, the biases' 0, and for each
        bordered group its arrow block with t_g eliminated, ``diag(a) - c c^T / tau_g``
        (``tau_g = sum a``; the diagonal ``(a_e sum_{f != e} a_f + 4 d1_e d2_e) / tau_g``
        without cancellation)."""
        st, L, K = self.st, self.L, self.K
        nw = len(self.bflat)
        nf = L + K + nw
        B = st.B0
        E = np.zeros((nf, nf))
        E[np.arange(L), np.arange(L)] = 1.0 / self.xz
        if nw:
            j, k = np.divmod(self.bflat, K)
            pat = (st.ki[:, None] == k[None, :]).astype(float) - (st.zi[:, None] == k[None, :])
            Phi = self.op.Phi
            cols = (Phi[st.li][:, j].toarray() if sp.issparse(Phi) else Phi[np.ix_(st.li, j)])
            B = np.hstack([B, cols * pat])
            valid, mem = self.bvalid, self.bmembers
            A3 = np.where(valid, a.ravel()[mem], 0.0)
            C3 = np.where(valid, c.ravel()[mem], 0.0)
            tau = A3.sum(axis=1)
            run = np.cumsum(A3, axis=1)  # sums of the others, by running sums only
            rev = np.cumsum(A3[:, ::-1], axis=1)[:, ::-1]
            others = np.zeros_like(A3)
            others[:, 1:] += run[:, :-1]
            others[:, :-1] += rev[:, 1:]
            diag = (A3 * others + np.where(valid, d12.ravel()[mem], 0.0)) / tau[:, None]
            pos = np.full(mem.shape, -1)
            pos[valid] = L + K + np.arange(nw)
            block = -C3[:, :, None] * C3[:, None, :] / tau[:, None, None]
            pair = valid[:, :, None] & valid[:, None, :]
            rows = np.broadcast_to(pos[:, :, None], block.shape)[pair]
            cols_ = np.broadcast_to(pos[:, None, :], block.shape)[pair]
            E[rows, cols_] = block[pair]
            E[pos[valid], pos[valid]] = diag[valid]
            self.btau, self.bC3 = tau, C3
        return B, E

    def _p_inverse(self, gW, gt, weights_only=False):
        """``P^{-1} g`` over (W, t) (the bound rows' arrow blocks): ``(pW, pt, e1, e2)`` with
        the bound rows' values ``e1 = pW - pt_g`` and ``e2 = -pW - pt_g`` computed directly,
        not as differences (near the optimum one of them is tiny beside pW and pt_g, and its
        product with the huge d1 or d2 would carry their rounding into the multipliers);
        ``weights_only``: pW alone."""
        st = self.st
        pt = (gt - st.group_sum(self.c_a * gW)) / self.sigma
        ptg = st.spread(pt)
        gWa = gW * self.inv_a
        pW = gWa - self.c_a * ptg
        if weights_only:
            return pW
        return pW, pt, gWa - self.plus_a * ptg, -(gWa + self.minus_a * ptg)

    def apply(self, dW, db, dt, dxi, e1, e2):
        """``(A^T D A + Z / xi) dx`` (the Newton matrix applied: for the refinement), the
        bound rows' values ``e1``, ``e2`` of ``dx`` given (:meth:`_p_inverse`)."""
        st, D = self.st, self.D
        ah = D["h"] * (self.hinge_values(dW, db) - dxi[st.li])
        a1, a2 = D["b1"] * e1, D["b2"] * e2
        ac = D["c"] * dxi.sum() if self.con else 0.0
        hW, hb = self.hinge_adjoint(ah)
        return (hW + a1 - a2, hb, -st.group_sum(a1 + a2),
                self.xi_adjoint(ah, ac) + dxi / self.xz)

    def solve(self, gW, gb, gt, gxi, refine=2):
        """``(dW, db, dt, dxi, e1, e2)`` with ``(A^T D A + Z / xi) dx = g`` (module
        docstring; e1, e2: the bound rows' values of dx), and ``refine`` steps of iterative
        refinement against the matrix applied by products."""
        g = (gW, gb, gt, gxi)
        dx = self._solve(*g)
        if refine <= 0:
            return dx
        r = [gi - h for gi, h in zip(g, self.apply(*dx))]
        norm = _norm(r)
        for _ in range(refine):
            new = [x + e for x, e in zip(dx, self._solve(*r))]
            r_new = [gi - h for gi, h in zip(g, self.apply(*new))]
            norm_new = _norm(r_new)
            if not norm_new < norm:  # the factor is too inaccurate to refine with
                break
            dx, r, norm = new, r_new, norm_new
        # (read only where a border was cut: InteriorPoint._iterate)
        self.residual = norm / max(_norm(g), np.finfo(float).tiny) if self.border_cut else 0.0
        return dx

    def _solve(self, gW, gb, gt, gxi):
        L, K = self.L, self.K
        inner = ~self.bmask
        pW = np.where(inner, self._p_inverse(gW, gt, weights_only=True), 0.0)
        # S^{-1} h = C^{-T} u and B^T S^{-1} h = V^T u with u = C^{-1} h; then
        # S^{-1} (h + B df) = C^{-T} (u + V df): one substitution each way
        u = sl.solve_triangular(self.chol, self.hinge_values(pW, np.zeros(K)), lower=True,
                                check_finite=False)
        gb_w = []
        if len(self.bflat):  # the bordered weights' right-hand sides, t_g eliminated
            gt_b = gt[self.bgroups]
            mem = self.bmembers
            G3 = np.where(self.bvalid, gW.ravel()[mem], 0.0) - self.bC3 * (gt_b / self.btau)[:, None]
            gb_w = G3[self.bvalid]
        gf = np.concatenate([gxi, gb, gb_w]) - self.V.T @ u
        df = self._f_solve(gf)
        if self.con:  # the constraint row's multiplier wc, then the border's solution
            df -= self.F_ones * (self.ones @ df / self.con_schur)
        wh = sl.solve_triangular(self.chol, u + self.V @ df, lower=True, trans="T",
                                 check_finite=False)
        AW, _ = self.hinge_adjoint(wh)
        dW, dt, e1, e2 = self._p_inverse(gW - AW, gt)
        if len(self.bflat):  # the bordered groups' weights and bounds from the border
            dW3 = np.zeros(self.bmembers.shape)
            dW3[self.bvalid] = df[L + K:]
            dW.ravel()[self.bflat] = df[L + K:]
            dt[self.bgroups] = (gt_b - (self.bC3 * dW3).sum(axis=1)) / self.btau
            dtg = self.st.spread(dt)
            e1 = np.where(inner, e1, dW - dtg)
            e2 = np.where(inner, e2, -dW - dtg)
        return dW, df[L:L + K], dt, df[:L], e1, e2


def _start(lp):
    """The primal-dual iterate, a dict: W, b, t, xi, the slacks sh, s1, s2 (sc), the
    multipliers yh, y1, y2 (yc) and z (xi's reduced costs); a start near the central path's
    scale: dual feasible for t and xi (y1 = y2 = 1 / (2 s)
    on a group of s weights; yh = nu / (2 (K - 1)), z = nu / 2, nu = lam, or 1 for hinge-con),
    primal W = 0, b = 0, xi = 2 (hinge slacks 1), t balancing the bound rows' products with
    the hinge rows'."""
    L, M, K = lp.L, lp.M, lp.K
    st = lp.st
    m = len(st.li)
    nu = 1.0 if lp.con else lp.par
    size = st.group_sum(np.ones((M, K)))  # each group's weights
    y1 = 1.0 / (2.0 * st.spread(size))
    t0 = nu / (K - 1) * size
    v = dict(W=np.zeros((M, K)), b=np.zeros(K), t=t0, xi=np.full(L, 2.0),
             sh=np.ones(m), s1=st.spread(t0), s2=st.spread(t0),
             yh=np.full(m, nu / (2.0 * (K - 1))), y1=y1, y2=y1.copy(), z=np.full(L, nu / 2.0))
    if lp.con:
        v["sc"], v["yc"] = max(lp.par - 2.0 * L, 1.0), nu / 2.0
    return v


def _residuals(lp, v, hv=None):
    """Primal residuals ``A x + s - r`` and dual ones ``c + A^T y - z`` of the iterate
    (``hv``: its hinge values ``(T X)[l, k]`` if known)."""
    st = lp.st
    if hv is None:
        hv = lp.hinge_values(v["W"], v["b"])
    tg = st.spread(v["t"])
    rp = dict(h=hv + st.r - v["xi"][st.li] + v["sh"],
              b1=v["W"] - tg + v["s1"], b2=-v["W"] - tg + v["s2"])
    AW, Ab = lp.hinge_adjoint(v["yh"])
    yc = v["yc"] if lp.con else 0.0
    rd = dict(W=AW + v["y1"] - v["y2"], b=Ab, t=1.0 - st.group_sum(v["y1"] + v["y2"]),
              xi=lp.c_xi + lp.xi_adjoint(v["yh"], yc) - v["z"])
    if lp.con:
        rp["c"] = v["xi"].sum() + v["sc"] - lp.par
    return rp, rd


_PAIRS = (("sh", "yh", "h"), ("s1", "y1", "b1"), ("s2", "y2", "b2"))


def _direction(lp, v, rp, rd, comp, refine=2):
    """The Newton direction for complementarity residuals ``comp`` (dict of y s - target
    per row kind, and ``"xi"`` for z xi - target), its linear system refined ``refine``
    times (:meth:`_HingeLP.solve`). Linear in ``(rp, rd, comp)`` together."""
    st = lp.st
    q = {k: (v[y] * rp[k] - comp[k]) / v[s] for s, y, k in _PAIRS}
    qc = (v["yc"] * rp["c"] - comp["c"]) / v["sc"] if lp.con else 0.0
    AqW, Aqb = lp.hinge_adjoint(q["h"])
    gW = -rd["W"] - (AqW + q["b1"] - q["b2"])
    gb = -rd["b"] - Aqb
    gt = -rd["t"] + st.group_sum(q["b1"] + q["b2"])
    gxi = -rd["xi"] - lp.xi_adjoint(q["h"], qc) - comp["xi"] / v["xi"]
    dW, db, dt, dxi, e1, e2 = lp.solve(gW, gb, gt, gxi, refine)
    Adx = dict(h=lp.hinge_values(dW, db) - dxi[st.li], b1=e1, b2=e2)
    d = dict(W=dW, b=db, t=dt, xi=dxi, z=(-comp["xi"] - v["z"] * dxi) / v["xi"])
    for s, y, k in _PAIRS:
        d[y] = v[y] / v[s] * Adx[k] + q[k]
        d[s] = -rp[k] - Adx[k]
    if lp.con:
        adc = dxi.sum()
        d["yc"] = v["yc"] / v["sc"] * adc + qc
        d["sc"] = -rp["c"] - adc
    return d


def _predictor_corrector(lp, v, rp, rd):
    """Mehrotra's direction at the iterate ``v`` (residuals ``rp``, ``rd``; ``lp`` factored
    there): the affine-scaling direction (predictor; only its step lengths are used, so it is
    unrefined), then the direction to the centring target ``(mu_aff / mu)^3 mu`` with the
    predictor's second-order term. Returns ``(d, (ap, ad), target)``, d's largest steps."""
    total, n = _complementarity(lp, v)
    mu = total / n
    comp = {k: v[y] * v[s] for s, y, k in _pairs(lp)}
    d = _direction(lp, v, rp, rd, comp, refine=0)
    ap, ad = _steps(lp, v, d)
    mu_aff = _complementarity(lp, v, d, ap, ad)[0] / n
    target = (mu_aff / mu) ** 3 * mu
    for s, y, k in _pairs(lp):
        comp[k] = comp[k] + d[y] * d[s] - target
    d = _direction(lp, v, rp, rd, comp)
    return d, _steps(lp, v, d), target


def _centrality_correctors(lp, v, rp, rd, d, ap, ad, target):
    """Gondzio's multiple centrality correctors (Gondzio 1996; Colombo and Gondzio 2008):
    up to :data:`MAX_CORRECTORS` corrections of the direction ``d`` (updated in place) that
    pull the complementarity products of a longer trial step, ``CORRECTOR_REACH`` further,
    back into ``[CORRECTOR_BOX[0], CORRECTOR_BOX[1]] * target``, each kept while it lengthens
    the shorter step by at least ``CORRECTOR_GAIN * CORRECTOR_REACH``. A correction is
    the Newton direction of its complementarity terms alone (the map is linear), with the
    factor in hand and unrefined. Returns the steps ``(ap, ad)`` of the final ``d``."""
    lo, hi = CORRECTOR_BOX[0] * target, CORRECTOR_BOX[1] * target
    no_rp, no_rd = dict.fromkeys(rp, 0.0), dict.fromkeys(rd, 0.0)
    for _ in range(MAX_CORRECTORS):
        if min(ap, ad) >= 1.0:
            break
        tp, td = min(1.0, ap + CORRECTOR_REACH), min(1.0, ad + CORRECTOR_REACH)
        comp = {}
        for s, y, k in _pairs(lp):
            prod = (v[s] + tp * d[s]) * (v[y] + td * d[y])
            # products below the box raised to it, those above lowered (by at most hi)
            comp[k] = -(np.maximum(lo - prod, 0.0) + np.maximum(hi - prod, -hi) * (prod > hi))
        dc = _direction(lp, v, no_rp, no_rd, comp, refine=0)
        trial = {k: d[k] + dc[k] for k in d}
        ap2, ad2 = _steps(lp, v, trial)
        if min(ap2, ad2) < min(ap, ad) + CORRECTOR_GAIN * CORRECTOR_REACH:
            break
        d.update(trial)
        ap, ad = ap2, ad2
    return ap, ad


def _steps(lp, v, d):
    """The largest primal and dual steps (at most 1) that keep the pairs' signs."""
    pairs = _pairs(lp)
    return tuple(min(_step_to_boundary(np.ravel(v[k]), np.ravel(d[k])) for k in keys)
                 for keys in ([s for s, _, _ in pairs], [y for _, y, _ in pairs]))


def _complementarity(lp, v, d=None, ap=0.0, ad=0.0):
    """Sum of y s and z xi at ``v + (ap, ad) d``, and the number of pairs."""
    tot, n = 0.0, 0
    for s, y, _ in _pairs(lp):
        sv, yv = np.asarray(v[s]), np.asarray(v[y])
        if d is not None:
            sv, yv = sv + ap * np.asarray(d[s]), yv + ad * np.asarray(d[y])
        tot += float(np.sum(sv * yv))
        n += np.size(sv)
    return tot, n


def _pairs(lp):
    """The complementary pairs (primal, dual, name of the complementarity residual)."""
    return _PAIRS + (("xi", "z", "xi"),) + ((("sc", "yc", "c"),) if lp.con else ())


class InteriorPoint:
    """The interior-point engine, resumable (the portfolio's turns): :meth:`advance` runs
    iterations until it is :attr:`finished` or the clock passes a time.

    Parameters
    ----------
    op : MulticlassOperator
    geo : Penalty
        l1 or l1inf.
    kind : {"reg", "con"}
    par : float
        lam (hinge-reg) or eta (hinge-con).
    tol : float
        Certified relative gap at which it stops.
    max_iter : int
    deadline : float or None
        ``time.perf_counter()`` time after which it stops.
    record : callable (GapResult, n_iter, X)
        Called with each iterate's certificate.
    certify : callable (X, Y, TX) -> GapResult
        The full problem's certificate (``TX = op.T(X)``, computed once for it and the
        next iteration's residuals).
    clock : WallClock or WorkClock, optional
        The clock of :meth:`advance`'s ``until``; each iteration's dense linear algebra is
        charged to it (:func:`iteration_seconds`), its products through ``op.meter``.

    Attributes
    ----------
    X : ndarray (M + 1, K)
        The best certified point so far (its weights and biases); once finished, where tol
        was met, the iterate with the fewest non-zero groups after its vanishing groups were
        set to exact zeros within tol (:meth:`_round`).
    Y : ndarray (L, K)
        Its multipliers of the hinge rows.
    best : GapResult or None
        Its certificate.
    total : int
        Iterations done.
    finished, converged : bool
    status : str
        ``"optimal"`` (tol met, and the iterations after it for :meth:`_round`: to
        :data:`ROUND_TIGHTEN` tol, :data:`ROUND_EXTRA` of them, or a stop for one of the
        other reasons), ``"stalled"`` (no better certificate for :data:`STALL_ITERATIONS`
        iterations, or a Newton system that could not be factored), ``"max_iter"``,
        ``"time"`` or ``"running"``.
    """

    def __init__(self, op, geo, kind, par, tol, max_iter, deadline, record, certify,
                 clock=None):
        if geo.name not in LP_PENALTIES:
            raise ValueError(f"the interior-point engine solves l1 and l1inf, not {geo.name!r}")
        self._problem, self._lp, self.v = (op, geo, kind, par), None, None
        self.tol, self.max_iter, self.deadline = tol, int(max_iter), deadline
        self.record, self.certify = record, certify
        self.clock = WALL if clock is None else clock
        L, M = op.Phi.shape
        self._shape = cost_shape(op, geo)
        self._tx = None  # T X's hinge rows at the iterate, from its certificate
        self.X = np.zeros((M + 1, op.n_classes))
        self.Y = np.zeros((L, op.n_classes))
        self.best, self.best_it, self.total = None, 0, 0
        self.finished = self.converged = False
        self._candidate = None  # the sparsest rounded iterate within tol (_rounded_point)
        self.within = None  # the iteration whose certificate first met tol
        self.status = "running"

    @property
    def lp(self):
        """The :class:`_HingeLP`, made (with the starting point :attr:`v`) at its first use: an
        engine portfolio whose other engine certifies first never pays for it (the class
        Gram matrices: 0.13-0.57 s on ``benchmarks/bench_family.py``'s MNIST-like problem of
        500 images, three makings in one process on a fresh clone of cf6c789)."""
        if self._lp is None:
            self._lp = _HingeLP(*self._problem)
            self.v = _start(self._lp)
        return self._lp

    def _check(self):
        """Certify the iterate; the status to stop with (:meth:`_finish`), or None to go on."""
        lp, v = self.lp, self.v
        X = np.vstack([v["W"], v["b"][None, :]])
        Y = np.zeros((lp.L, lp.K))
        Y[lp.st.off] = v["yh"]
        TX = lp.op.T(X)
        self._tx = TX[lp.st.off]  # the next iteration's residuals start from it
        gr = self.certify(X, Y, TX)
        self.record(gr, self.total, X)
        if self.best is None or gr.rel_gap < self.best.rel_gap:
            self.best, self.best_it, self.X, self.Y = gr, self.total, X, Y
        if gr.rel_gap <= self.tol:
            if self.within is None:
                self.within = self.total
            cand = self._rounded_point(X, Y)
            if cand is not None and (self._candidate is None or cand[:2] < self._candidate[:2]):
                self._candidate = cand
        if self.within is not None and (gr.rel_gap <= ROUND_TIGHTEN * self.tol
                                        or self.total - self.within >= ROUND_EXTRA):
            return "optimal"  # (tol met: the iterations after it, for _round's sake)
        if np.isfinite(self.best.rel_gap) and self.total - self.best_it >= STALL_ITERATIONS:
            # (hinge-con's certificate is infinite until an iterate can be scaled into the
            # constraint: no stall is counted before)
            return "stalled"
        if self.total >= self.max_iter:
            return "max_iter"
        return None

    def _finish(self, status):
        """End the run with ``status``, "optimal" whatever the reason once tol was met; the
        returned point's exact zeros (:meth:`_round`)."""
        self.status = "optimal" if self.within is not None else status
        self.finished, self.converged = True, self.status == "optimal"
        self._round()

    def advance(self, until=None):
        """Iterate until :attr:`finished` or :attr:`clock` passes ``until`` (None: never)."""
        stop = self._check() if self.best is None else None
        while stop is None and not self.finished:
            if self.deadline is not None and time.perf_counter() > self.deadline:
                stop = "time"
                break
            if until is not None and self.clock.now() >= until and self.within is None:
                break  # (once tol is met, the few iterations for _round go on in this turn)
            factored = self._iterate()
            self.total += 1
            self.clock.charge(iteration_seconds(*self._shape, border=len(self.lp.bflat)))
            stop = self._check() if factored else "stalled"
        if stop is not None:
            self._finish(stop)

    def _round(self):
        """Exact zeros in the returned point: an interior point's iterates have none (every
        weight is strictly inside its bounds; the groups that vanish at the optimum only tend
        to 0), unlike column generation's vertices and PDHG's proxes, and a sparse model's
        zeros are what its users count. Each iterate certified within tol was rounded
        (:meth:`_rounded_point`); the one with the fewest non-zero groups (then the smallest
        certified gap) replaces the best point, if any was certified."""
        if self._candidate is not None:
            X, Y, gr = self._candidate[2:]
            self.record(gr, self.total, X)
            self.X, self.Y, self.best = X, Y, gr

    def _rounded_point(self, X, Y):
        """``X`` with the groups whose largest weight is at most ``ROUND_THRESHOLDS[i]`` times
        the largest of all set to 0, for the first (largest) threshold whose point is
        certified within tol with the dual point ``Y``: ``(non-zero groups, gap, X, Y,
        certificate)``, or None (no threshold is, or nothing to drop)."""
        geo, op = self.lp.geo, self.lp.op
        bound = geo.to_groups(np.abs(X[:-1])).max(axis=1)  # (n1, n2): each group's max
        top = bound.max()
        for tau in ROUND_THRESHOLDS if top > 0 else ():
            drop = bound <= tau * top
            if not drop.any():
                return None  # the smaller thresholds drop nothing either
            zero = geo.from_groups(np.broadcast_to(drop[:, None, :], geo.group_shape))
            Xr = X.copy()
            Xr[:-1][zero] = 0.0
            gr = self.certify(Xr, Y, op.T(Xr))
            if gr.rel_gap <= self.tol:
                return int((~drop).sum()), gr.rel_gap, Xr, Y, gr
        return None

    def _iterate(self):
        """One predictor-corrector iteration; False if the Newton system could not be factored."""
        lp, v = self.lp, self.v
        rp, rd = _residuals(lp, v, self._tx)
        while True:  # at most twice: once more with the wide border (BORDER_MAX)
            try:
                lp.factor(v)
            except np.linalg.LinAlgError:
                return False
            d, steps, target = _predictor_corrector(lp, v, rp, rd)
            if not (lp.border_cut and lp.residual > WIDEN_RESIDUAL):
                break
            # inaccurate without the wide border: this iteration again with it (the first
            # attempt charged to the clock too; the limit stays raised, so border_cut is off)
            self.clock.charge(iteration_seconds(*self._shape, border=len(lp.bflat)))
            lp.border_limit = BORDER_MAX
        ap, ad = _centrality_correctors(lp, v, rp, rd, d, *steps, target)
        ap, ad = STEP_FRACTION * ap, STEP_FRACTION * ad
        for k in ("W", "b", "t") + tuple(s for s, _, _ in _pairs(lp)):
            v[k] = v[k] + ap * d[k]
        for _, y, _ in _pairs(lp):
            v[y] = v[y] + ad * d[y]
        return True
