"""The column-generation engine of ``solver="accelerated"`` (``inner="cg"``; l1, l12, l1inf).

The penalty is the atomic norm of group atoms (sign vectors on one group for
l1 and l1inf, unit l2 vectors on one group for l12); :class:`_Master` is the
restricted master LP over the generated atoms (HiGHS, warm-started), and
:class:`_Pricing` turns its solution into a primal-dual point and prices new
atoms against the full dual ``T^T Y``; :func:`_column_generation` alternates
them until the certified gap of the full problem meets the tolerance. Atom
columns that stay nonbasic at 0 for :data:`ATOM_DROP_AFTER` solves are deleted
(and may be priced again), so that the master holds about the atoms in use.

On large problems (more than :data:`ROWGEN_MIN_ROWS` hinge pieces L(K-1))
the master also generates its rows: it starts from one hinge piece per
sample and adds, after each master solve, the most violated missing piece of
each sample (of at most :data:`ROWGEN_MAX_ADD` samples, the most violated), priced in the
same round as new atoms; rows (the initial ones included)
that stay loose with a zero multiplier for :data:`ROWGEN_DROP_AFTER` solves are
dropped, so that the master holds about the rows of the support vectors
(a minority of the samples on MNIST's larger training sets); a warm start of such a master
that stalls, when it is large (:data:`IPM_MIN_NNZ`), is replaced by an interior-point
method: the dense one of :mod:`.ipm` on masters of at most :data:`DENSE_IPM_MAX_ROWS` rows,
HiGHS' with crossover on larger ones. Absent rows have multiplier 0,
so pricing and the certificate keep their form; the certificate's primal
objective is always evaluated on all L samples.
"""

import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ...model.certificates import hinge_con_gap, hinge_reg_gap
from . import highs
from .clock import WALL
from .ipm import interior_point

__all__ = ["_Master", "_Pricing", "_column_generation", "_ColumnGeneration", "SLACK_COST_START",
           "SLACK_COST_MAX", "ROWGEN_MIN_ROWS", "ROWGEN_TOL", "ROWGEN_MAX_ADD", "ROWGEN_DROP_AFTER"]

#: first cost of the elastic slack of the hinge-con master (it is multiplied by 10
#: while the slack stays in use with no atom left to price, up to SLACK_COST_MAX)
SLACK_COST_START = 1.0
SLACK_COST_MAX = 1e12

#: row generation over the hinge pieces when L(K-1) exceeds this; at or below it
#: the master carries all L(K-1) rows from the start (the exact path used before
#: row generation existed, kept for the small problems of the record experiment:
#: L <= 100 at K = 10 is 900 rows). Measured on MNIST scattering features,
#: l1inf/81, tol 1e-4, inner="cg" (hinge-reg lam = 1 and 0.1, hinge-con eta = 0.1 L):
#: 1.0-1.3x slower with it at L = 100 (900 rows), 1.7-2.4x faster at L = 500
#: (4500 rows) and 2.9-4.7x faster at L = 1000 (9000 rows; more than 5.1x where all
#: rows took the 60 s cap)
ROWGEN_MIN_ROWS = 2000

#: a missing hinge row is added when the master point violates it by more than this
ROWGEN_TOL = 1e-9

#: at most this many missing hinge rows are added after a master solve, the most violated
#: first (in the first rounds, with few atoms, nearly every sample violates one). Measured on
#: MNIST scattering features, l1inf/81, hinge-reg lam = 1, tol 1e-4, inner="cg", against no
#: cap (86c5900 beside its parent, one per core): L = 5000 119 s against 131 s, L = 2000 26 against 29 s,
#: L = 1000 9.7 against 10.4 s, the same at L = 500 (where it does not bind)
ROWGEN_MAX_ADD = 500

#: a hinge row whose multiplier is 0 and slack above ROWGEN_TOL at this many
#: consecutive master solutions is dropped (it is added again if violated later)
ROWGEN_DROP_AFTER = 3

#: an atom column nonbasic at 0 at this many consecutive master solutions is deleted
#: (it may be priced again later)
ATOM_DROP_AFTER = 3
#: l12: after every ATOM_STALL_ROUNDS rounds without a smaller certified gap, atoms are
#: deleted only after twice as many solves (up to ATOM_DROP_AFTER x 2^ATOM_PATIENCE_MAX). l12's
#: atoms are directions (-V_g / ||V_g||) that are never priced twice exactly, and deleting
#: them can make the rounds cycle: on ``benchmarks/bench_family.py``'s News20-like problem
#: (l12, blocks of 5, inner="cg") the certified gap wandered between 1e-3 and 0.5 for 300
#: rounds. Measured (fresh clones of 5038d8e and of 912e159, before it): hinge-reg@2 2.6 s
#: in 64 rounds against 7.6 s in 306, hinge-con 4.0 s in 44 against 9.0 s in 195, hinge-reg@5
#: the same 23 rounds (39 and 38 s); the family's other column-generation l1,2 rows (leukemia- and
#: MNIST-like) the same rounds and certified gaps, their gaps never stalling so long
ATOM_STALL_ROUNDS = 5
ATOM_PATIENCE_MAX = 4

#: iteration cap of a warm-started master solve: max(WARM_ITER_MIN, WARM_ITER_PER_ROW x rows);
#: past it the master is solved cold by the dual simplex
WARM_ITER_MIN = 10000
WARM_ITER_PER_ROW = 10

#: with row generation and at least IPM_MIN_NNZ non-zeros in the master, the cap is
#: max(IPM_WARM_ITER_MIN, IPM_WARM_ITER_PER_ROW x rows), and past
#: it the master is solved by HiGHS' interior-point method with crossover (a basis for the next
#: warm start), and so are the next IPM_BEFORE_WARM - 1 solves before a warm start is tried
#: again. Measured on MNIST's L = 5000 (l1inf/81, hinge-reg lam = 1), masters of 700-1700 rows
#: written at rounds 10-50 of a run of this version, one solve each: with 175000-371000
#: non-zeros the warm primal simplex 3.0-18.0 s, interior point with crossover 1.2-2.1 s; with
#: 126000 (round 50, few new atoms) 0.87 against 1.61 s. Not on smaller masters (MNIST's
#: L = 500 hinge-con, at most 99000 non-zeros, measured without the threshold: 0.1-0.7 s either
#: way, more rounds), nor without row generation (a dense noisy problem, 300 x 2000 x 5, l1,
#: 1200 rows: its gap then stalled at 0.3-0.5, where the simplex alone certifies it in 5 s)
IPM_MIN_NNZ = 150000
#: l12 (with row generation): once a warm start has taken more than WARM_SLOW_PER_ROW x rows
#: simplex iterations, the master is treated as large (the rule above) whatever its
#: non-zeros; for hinge-con only on masters of density at least WARM_SLOW_DENSITY (non-zeros
#: over rows x columns). l12's atoms are directions, and each round adds ones nearly parallel
#: to those of the last: the primal simplex then crawls through degenerate pivots (seen in a
#: development trace on benchmarks/bench_family.py's MNIST-like problem of 500 images,
#: hinge-reg@5: 3-9 x rows iterations a solve, most 6-9 x, about 1 s each, on masters of
#: 490-920 rows, density 10-14 %, fewer than IPM_MIN_NNZ non-zeros; its other two l1,2 rows
#: at most 3.4 x). Column generation
#: alone there (a fresh clone of 0e596e2, one process a run, the compiled kernels' cache
#: warm; /work/notes/s46/cgknob.py in issue 16's notes): hinge-reg@5 8.1 s against 24.4 s
#: without the rule, hinge-reg@2 4.9-5.0 against 4.2 s, hinge-con 3.6 against 3.5 s. On the
#: sparse masters of its News20-like problem (density 1-2 %), hinge-reg@5, the simplex slowed
#: to about 1 ms an iteration (2000-5000 iterations, 1-2.4 s a solve of 700-930 rows and
#: 2600 columns, one warm start cut at 10000 after 12.7 s and solved again cold in 5.9 s: a
#: development trace on e5b784c, /work/notes/s47/ptrace.py); column generation alone there
#: 6.3-6.5 s with the rule and DENSE_IPM_SPARSE_ATOMS (a fresh clone of e382613, cgknob.py,
#: twice), 37.7-38.2 s without the rule (e5b784c) and 17.6 s with the atoms dense
#: (development runs of /work/notes/s47/ipx.py). Its hinge-con masters stay off the path:
#: there the interior points' certified gaps swung between 2e-4 and 0.4 from round to
#: round, and column generation alone took 45 s against 3.8 s with every warm start
#: counted slow (development runs of /work/notes/s47/ipx.py), and the portfolio's row 22.5
#: s against 8.3 s with this rule for both forms. Not for l1 and l1,inf (the News20-like
#: l1,inf hinge-reg@5 row, warm starts of 4-6 x rows, took minutes on the interior-point
#: path instead of 13-16 s: development runs)
WARM_SLOW_PER_ROW = 3.0
WARM_SLOW_DENSITY = 0.05
IPM_WARM_ITER_MIN = 500
IPM_WARM_ITER_PER_ROW = 1
IPM_BEFORE_WARM = 3

#: ... and a warm start is tried again only when at most IPM_WARM_MAX_NEW x rows atom columns
#: were added since the last solve (otherwise the interior-point method goes on). Measured on
#: the same problem (L = 5000, 1b9cddd): in its interior-point phase every warm start tried
#: after 75 to 283 new atoms (0.11 to 0.41 x rows) stalled (0.41-0.88 s each, twelve of them),
#: the twelve after at most 52 (0.07 x rows) did not; with the bound (4515210) none stalled, and
#: the warm starts took 9.7 s of the run instead of 15.6 (66 s in all against 73 s)
IPM_WARM_MAX_NEW = 0.1

#: on the interior-point path, masters of at most this many rows are solved by the dense
#: interior-point method of :mod:`.ipm` (no crossover, hence no basis: the solves after it
#: stay on the interior-point path). Measured on masters written during a run at MNIST's
#: L = 5000 (l1,inf/81, hinge-reg lam = 1; one solve each, one BLAS thread): 699-813 rows
#: and 1000-1400 atoms 0.44-0.60 s against 1.29-2.55 s for HiGHS' interior point with
#: crossover, 1299 rows 1.35 against 1.40 s; its cost grows as rows^2 x atoms
DENSE_IPM_MAX_ROWS = 1200
#: relative gap and infeasibilities at which the dense interior-point method stops: at most
#: DENSE_IPM_TOL and DENSE_IPM_TOL_FACTOR times the column generation's own tolerance (its
#: certificate cannot be tighter than the master's point); when that is below
#: DENSE_IPM_MIN_TOL, which the method does not reach reliably (its normal equations'
#: rounding), the dense method is not used (HiGHS' methods give vertices, exact to their
#: tolerances of 1e-10)
DENSE_IPM_TOL = 1e-7
DENSE_IPM_TOL_FACTOR = 1e-3
DENSE_IPM_MIN_TOL = 1e-9
#: at a dense interior point, an atom (cost 1) whose reduced cost exceeds this and its weight,
#: or a hinge row (right-hand side -1) whose slack exceeds this and its multiplier, is
#: inactive: its weight or multiplier is set to 0
DENSE_IPM_INACTIVE = 1e-6
#: the dense interior-point method takes the atom columns as sparse ones (their part of the
#: normal matrix a sparse product instead of BLAS' syrk) when fewer than this fraction of
#: their entries are non-zero (sparse features: TF-IDF). The two costs grow alike with the
#: rows and atoms (rows^2 x atoms x density^2 against rows^2 x atoms); measured on random
#: masters of 900 rows and 2500 atoms (one BLAS thread, /work/notes/s47/breakeven.py in issue
#: 16's notes, a fresh clone of e382613), one normal matrix at densities 1, 2, 5, 10 and 20 %:
#: sparse 5.4, 16.6, 34.1, 59.6 and 154 ms, dense 43-44 ms each
DENSE_IPM_SPARSE_ATOMS = 0.05


def _aged(age, idle):
    """Consecutive solves each entry has been ``idle`` (bool, n entries): ``age`` (the counts
    of the first ``len(age)`` entries; the others are new and start from 0) plus one where
    idle, 0 elsewhere."""
    prev = np.zeros(len(idle), dtype=int)
    prev[:len(age)] = age
    return np.where(idle, prev + 1, 0)


def _atom_key(gid, sig):
    """The identity of the atom ``sig`` on group ``gid`` (the keys of :class:`_Pricing`)."""
    return int(gid), sig.tobytes()


def _atom_entries(geo, gid):
    """(j, k) index arrays of the entries of group gid (padding dropped) and their slots."""
    n1, s, n2 = geo.group_shape
    i1, i2 = divmod(int(gid), n2)
    flat = i1 * s * n2 + np.arange(s) * n2 + i2
    j, k = np.divmod(flat, geo.n_classes)
    keep = j < geo.n_features
    return j[keep], k[keep], np.flatnonzero(keep)


class _Master:
    """Restricted master LP of the column generation (min over b, xi, atoms c >= 0).

    Rows: S_atoms + b_k - b_{z_l} - xi_l <= -1 for every given (l, k != z_l)
    (all of them, or a subset grown by :meth:`add_rows`); for
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

    Hinge rows are numbered in the order given then added (:attr:`ll`,
    :attr:`kk`); in the HiGHS model the hinge-con row sits after the first
    ``nh0`` of them, so rows added later follow it.
    """

    def __init__(self, L, K, y, ll, kk, kind, par, big=None, ipm=False, clock=WALL, tol=None,
                 slow_rule=False):
        big = SLACK_COST_START if big is None else big
        self.ipm = ipm  # stalled warm starts go to the interior-point method (IPM_WARM_ITER_MIN)
        # the dense interior-point method's tolerance (None: not used), from the column
        # generation's tolerance ``tol`` (DENSE_IPM_TOL)
        self.interior_tol = None
        if ipm and tol is not None:
            t = min(DENSE_IPM_TOL, DENSE_IPM_TOL_FACTOR * tol)
            self.interior_tol = t if t >= DENSE_IPM_MIN_TOL else None
        self.L, self.K, self.kind, self.par, self.big = L, K, kind, float(par), float(big)
        self.nh = self.nh0 = len(ll)
        self.ll, self.kk, self.y = ll, kk, y
        self.xi = None
        self.deadline = None  # perf_counter() time: HiGHS' time limit (set after the first solve)
        self.hard_deadline = None  # the same for the interior-point method: the run's own deadline
        self.clock = clock  # charged with the solves' work (a WorkClock counts it)
        self._dual_next = False
        self._ipm_run = 0  # interior-point solves since the last warm start that stalled (0: none)
        self.slow_rule = slow_rule  # a slow warm start makes the master large (WARM_SLOW_PER_ROW)
        self._slow_warm = False  # ... and one was seen
        self._new_cols = 0  # atom columns added since the last solve
        self.exact_next = False  # the next solve by the simplex method, uncapped (see solve())
        self.last_ipm = False  # whether the last solve ended in the interior-point method
        self.interior = None  # (x, multipliers) of the last solve when the dense IPM made it
        self._stale_basis = False  # HiGHS' basis predates the last solves (dense IPM)
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
        self._atom_age = np.zeros(0, dtype=int)
        self._atom_value = np.zeros(0)
        self.h = None
        if highs.highspy is not None:
            h = highs.Highs()
            h.setOptionValue("output_flag", False)
            h.setOptionValue("primal_feasibility_tolerance", 1e-10)
            h.setOptionValue("dual_feasibility_tolerance", 1e-10)
            h.setOptionValue("threads", 1)
            h.setOptionValue("presolve", "off")
            h.setOptionValue("solver", "simplex")
            h.setOptionValue("simplex_strategy", 4)  # primal simplex: warm start after adding columns
            inf = highs.highspy.kHighsInf
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
        """Append atom columns (list of (nh,) arrays, hinge rows only).

        The next solve is a primal simplex from the current basis (primal feasible
        with the new columns at 0, unless rows were also added since the last solve:
        HiGHS' primal simplex then starts by restoring feasibility; with both, a dual
        simplex was measured several times slower on MNIST's L = 500 and 1000).
        """
        if not cols:
            return
        self._dual_next = False
        self._new_cols += len(cols)
        self.atom_cols.extend(cols)
        if self.h is not None:
            C = np.column_stack(cols)
            if self.kind == "con" and self.nh > self.nh0:  # the hinge-con row sits at nh0
                C = np.insert(C, self.nh0, 0.0, axis=0)
            C = sp.csc_matrix(C)
            if C.shape[0] < self.nrow:
                C = sp.vstack([C, sp.csc_matrix((self.nrow - C.shape[0], C.shape[1]))], format="csc")
            C.sort_indices()
            n = C.shape[1]
            self.h.addCols(n, np.ones(n), np.zeros(n), np.full(n, highs.highspy.kHighsInf), C.nnz,
                           C.indptr[:-1].astype(np.int32), C.indices.astype(np.int32),
                           C.data.astype(float))

    def add_rows(self, ll, kk, entries):
        """Append hinge rows (l, k) with the atoms' coefficients ``entries`` (n, n_atoms).

        The next solve is a dual simplex from the current basis (it stays dual
        feasible when rows are added).
        """
        n, K = len(ll), self.K
        if n == 0:
            return
        r = np.repeat(np.arange(n), 3)
        c = np.column_stack([kk, self.y[ll], K + ll]).ravel()
        v = np.tile([1.0, -1.0, -1.0], n)
        base = sp.csr_matrix((v, (r, c)), shape=(n, self.nbase))
        self.ll, self.kk = np.concatenate([self.ll, ll]), np.concatenate([self.kk, kk])
        self.atom_cols = [np.concatenate([col, entries[:, i]]) for i, col in enumerate(self.atom_cols)]
        old = self.base.tocsr()
        if self.kind == "con":  # linprog's layout: hinge rows, then the hinge-con row
            old = sp.vstack([old[:self.nh], base, old[self.nh:]], format="csr")
        else:
            old = sp.vstack([old, base], format="csr")
        self.base = old.tocsc()
        self.nh += n
        self.nrow += n
        self.rub = np.concatenate([-np.ones(self.nh), self.rub[self.nh - n:]])  # [hinge rows, eta]
        if self.h is not None:
            R = sp.hstack([base, sp.csr_matrix(entries)], format="csr")
            R.sort_indices()
            inf = highs.highspy.kHighsInf
            self.h.addRows(n, np.full(n, -inf), -np.ones(n), R.nnz, R.indptr[:-1].astype(np.int32),
                           R.indices.astype(np.int32), R.data.astype(float))
            self._dual_next = True

    def stale_atoms(self, patience=ATOM_DROP_AFTER):
        """Mask of the atom columns nonbasic at 0 at ``patience`` consecutive solves (HiGHS
        only: the linprog fallback keeps every atom)."""
        n = len(self.atom_cols)
        if self.h is None or n == 0:
            return np.zeros(n, dtype=bool)
        idle = self._atom_value == 0.0
        if self.interior is None:  # a basis: nonbasic at 0
            status = self.h.getBasis().col_status[self.nbase:]
            basic = highs.highspy.HighsBasisStatus.kBasic
            idle &= np.array([st != basic for st in status])
        self._atom_age = _aged(self._atom_age, idle)
        return self._atom_age >= patience

    def drop_atoms(self, drop):
        """Delete the atom columns of mask ``drop``."""
        idx = np.flatnonzero(drop)
        if len(idx) == 0:
            return
        if self.h is not None:
            self.h.deleteCols(len(idx), (self.nbase + idx).astype(np.int32))
        self.atom_cols = [c for c, d in zip(self.atom_cols, drop) if not d]
        self._atom_age = self._atom_age[~drop]

    def drop_rows(self, drop):
        """Delete the hinge rows of mask ``drop`` (the first ``nh0`` shrinks by those among them)."""
        idx = np.flatnonzero(drop)
        n = len(idx)
        if n == 0:
            return
        con = 1 if self.kind == "con" else 0
        keep = ~drop
        if self.h is not None:  # in HiGHS the hinge-con row sits at nh0
            self.h.deleteRows(n, (idx + con * (idx >= self.nh0)).astype(np.int32))
        self.nh0 -= int(np.count_nonzero(idx < self.nh0))
        self.ll, self.kk = self.ll[keep], self.kk[keep]
        self.atom_cols = [col[keep] for col in self.atom_cols]
        self.base = self.base.tocsr()[np.concatenate([np.flatnonzero(keep),
                                                      np.arange(self.nh, self.nh + con)])].tocsc()
        self.nh -= n
        self.nrow -= n
        self.rub = self.rub[n:]

    def _atom_block(self):
        """The atom columns as one (rows, atoms) array in linprog's layout (a zero hinge-con
        row last), and the costs of all the columns (base, then atoms)."""
        na = len(self.atom_cols)
        C = np.column_stack(self.atom_cols) if na else np.zeros((self.nh, 0))
        if C.shape[0] < self.nrow:
            C = np.vstack([C, np.zeros((self.nrow - C.shape[0], na))])
        return C, np.concatenate([self.cost, np.ones(na)])

    def _solve_linprog(self):
        C, c = self._atom_block()
        na = C.shape[1]
        A = sp.hstack([self.base, sp.csc_matrix(C)], format="csr")
        lb = np.concatenate([self.lb, np.zeros(na)])
        bounds = [(None if np.isinf(v) else v, None) for v in lb]
        res = linprog(c, A_ub=A, b_ub=self.rub, bounds=bounds, method="highs",
                      options={"primal_feasibility_tolerance": 1e-10,
                               "dual_feasibility_tolerance": 1e-10})
        self.clock.lp(int(getattr(res, "nit", 0) or 0), 0, A.shape[0], A.shape[1], A.nnz)
        if res.status != 0 or res.x is None:
            raise RuntimeError(f"master LP failed: {res.message}")
        return res.x, -np.asarray(res.ineqlin.marginals)

    def _run_cold(self):
        """HiGHS' dual simplex from scratch (the basis dropped)."""
        self.h.clearSolver()
        self.h.setOptionValue("simplex_strategy", 1)
        self.h.run()
        self.h.setOptionValue("simplex_strategy", 4)
        self._charge()

    def _charge(self):
        """Charge the last HiGHS run's iterations to :attr:`clock`."""
        if self.clock.counted:
            info = self.h.getInfo()
            self.clock.lp(info.simplex_iteration_count, info.ipm_iteration_count,
                          self.h.getNumRow(), self.h.getNumCol(), self.h.getNumNz())

    def _limit(self, t):
        """HiGHS' time limit at ``time.perf_counter()`` time ``t`` (None: none); the limit is
        on HiGHS' run clock, which adds up over the runs."""
        left = np.inf if t is None else max(t - time.perf_counter(), 1e-3)
        self.h.setOptionValue("time_limit", self.h.getRunTime() + left)

    def _run_ipm(self):
        """An interior-point method from scratch, counted in :attr:`_ipm_run`: the dense one
        (:meth:`_run_dense`) on masters of at most :data:`DENSE_IPM_MAX_ROWS` rows, else (or
        where it does not converge) HiGHS' with crossover to a basis. Limited by
        :attr:`hard_deadline` only (stopped, it would start again from scratch, where a
        simplex goes on from its basis: an engine portfolio's turn may end inside it)."""
        self._ipm_run += 1
        self.last_ipm = True
        if self.interior_tol is not None and self.nrow <= DENSE_IPM_MAX_ROWS and self._run_dense():
            return
        self._run_crossover()

    def _run_crossover(self):
        """HiGHS' interior-point method (IPX) with crossover to a basis."""
        self._limit(self.hard_deadline)
        self.h.setOptionValue("solver", "ipm")
        self.h.run()
        self.h.setOptionValue("solver", "simplex")
        self._charge()
        self._stale_basis = False
        self.last_ipm = True

    def _run_dense(self):
        """:func:`~sparsesvm.solvers.accelerated.ipm.interior_point` on the master (the base
        columns sparse, the atoms dense but below :data:`DENSE_IPM_SPARSE_ATOMS`) to
        :attr:`interior_tol`: sets :attr:`interior` (the
        point and the multipliers, in linprog's layout) and returns True, or False where it
        did not converge. HiGHS' model is not solved: its basis is then stale.

        An interior point is not a vertex: the entries that are 0 at the optimum are small,
        not 0. An atom weight below its reduced cost, and a row multiplier below its row's
        slack, are set to 0 (the usual indicator of the inactive entries, El-Bakry, Tapia and
        Zhang 1994: at the optimum one of each pair is 0) where that reduced cost or slack
        exceeds :data:`DENSE_IPM_INACTIVE`, so that idle atoms and loose rows are seen as such
        and dropped (:meth:`stale_atoms`, :meth:`_RowGeneration.stale`); an atom or row with
        both near 0 (a degenerate master) is kept: dropping those made the rounds cycle on
        load_digits (the same four masters again and again)."""
        C, c = self._atom_block()
        nnz = np.count_nonzero(C, axis=0)
        if nnz.sum() < DENSE_IPM_SPARSE_ATOMS * C.size:  # sparse features' atoms
            A_sparse, A_dense = sp.hstack([self.base, sp.csc_matrix(C)], format="csc"), C[:, :0]
            pairs = float(nnz @ nnz)
        else:
            A_sparse, A_dense, pairs = self.base, C, 0.0
        res = interior_point(A_sparse, A_dense, c, np.flatnonzero(np.isinf(self.lb)), self.rub,
                             tol=self.interior_tol, deadline=self.hard_deadline)
        self.clock.interior(res.iterations, self.nrow, A_dense.shape[1], pairs)
        if res.status == "time":
            raise TimeoutError("master LP: time limit")
        if not res.converged:
            return False
        x, mult = res.x, np.where((res.y < res.slack) & (res.slack > DENSE_IPM_INACTIVE), 0.0, res.y)
        atoms, z = x[self.nbase:], res.z[self.nbase:]
        atoms[(atoms < z) & (z > DENSE_IPM_INACTIVE)] = 0.0
        self.interior = (x, mult)  # linprog's layout, as _solve_incremental returns
        self._stale_basis = True
        return True

    def _large(self):
        """Whether stalled warm starts go to the interior-point method (:data:`IPM_MIN_NNZ`,
        :data:`WARM_SLOW_PER_ROW`)."""
        return self.ipm and (self._slow_warm or self.h.getNumNz() >= IPM_MIN_NNZ)

    def _run_warm(self, capped):
        """The simplex method from the current basis (primal after new atoms, dual after new
        rows only), ``capped`` at :data:`WARM_ITER_MIN` / :data:`WARM_ITER_PER_ROW`."""
        limit = 2**31 - 1
        if capped:
            limit = (max(IPM_WARM_ITER_MIN, IPM_WARM_ITER_PER_ROW * self.nrow) if self._large()
                     else max(WARM_ITER_MIN, WARM_ITER_PER_ROW * self.nrow))
        self.h.setOptionValue("simplex_iteration_limit", limit)
        if self._dual_next:  # rows were added: the basis is dual feasible
            self.h.setOptionValue("simplex_strategy", 1)
            self.h.run()
            self.h.setOptionValue("simplex_strategy", 4)
        else:
            self.h.run()
        self.h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
        self._charge()

    def _solve_incremental(self):
        """A warm-started simplex, or the interior-point method where warm starts stall
        (:data:`IPM_BEFORE_WARM`); on numerical trouble a cold dual simplex."""
        status = highs.highspy.HighsModelStatus
        opt = status.kOptimal
        self._limit(self.deadline)
        self.last_ipm = False
        self.interior = None
        if self.exact_next and self._stale_basis:  # a vertex first: crossover
            self._run_crossover()
        elif self.exact_next:
            self._run_warm(capped=False)
        elif self._stale_basis or (self._ipm_run > 0 and self._large() and (
                self._ipm_run < IPM_BEFORE_WARM or self._new_cols > IPM_WARM_MAX_NEW * self.nrow)):
            # HiGHS has no basis of the master (the dense interior-point method made the last
            # solves), or a warm start stalled lately, or would after this many new atoms
            self._run_ipm()
        else:
            self._run_warm(capped=True)
            self._ipm_run = 0
            if self.slow_rule and not self._slow_warm:  # (once seen, it stays)
                self._slow_warm = (self.h.getModelStatus() == status.kOptimal
                                   and self.h.getInfo().simplex_iteration_count
                                   > WARM_SLOW_PER_ROW * self.nrow
                                   and (self.kind == "reg" or self.h.getNumNz()
                                        >= WARM_SLOW_DENSITY * self.nrow * self.h.getNumCol()))
            if self._large() and self.h.getModelStatus() == status.kIterationLimit:
                # a warm start that stalls (seen: 3000-4000 primal iterations after 200 new
                # atoms, a dual simplex cycling through degenerate ones) is cut
                self._run_ipm()
        self.exact_next = False
        self._new_cols = 0
        if self.interior is not None:
            self._dual_next = False
            return self.interior
        if self.deadline is not None and self.h.getModelStatus() == status.kTimeLimit:
            raise TimeoutError("master LP: time limit")  # solve() again goes on from HiGHS' basis
        self._dual_next = False
        if self.h.getModelStatus() != opt:
            self.last_ipm = False
            self._run_cold()
            if self.deadline is not None and self.h.getModelStatus() == status.kTimeLimit:
                raise TimeoutError("master LP: time limit")
            if self.h.getModelStatus() != opt:
                return None
        sol = self.h.getSolution()
        mult = -np.asarray(sol.row_dual)
        if self.kind == "con" and self.nh > self.nh0:  # to linprog's layout: the hinge-con row last
            mult = np.concatenate([mult[:self.nh0], mult[self.nh0 + 1:], mult[self.nh0:self.nh0 + 1]])
        return np.asarray(sol.col_value), mult

    def solve(self):
        """Returns (atom weights c, b, row multipliers >= 0, slack s)."""
        K, L = self.K, self.L
        out = self._solve_incremental() if self.h is not None else None
        if out is None:  # no incremental HiGHS, or it failed twice: rebuild with linprog
            out = self._solve_linprog()
        x, mult = out
        self.xi = x[K:K + L]
        self._atom_value = x[self.nbase:]
        slack = float(x[K + L]) if self.kind == "con" else 0.0
        return x[self.nbase:], x[:K].copy(), np.maximum(mult, 0.0), slack


def _column_generation(op, geo, kind, par, tol, max_rounds, deadline, record, row_generation=None):
    """Solve hinge-reg / hinge-con for l1, l1inf and l12 by column generation.

    The penalty is the atomic norm of group atoms: sign vectors on one group
    for l1 / l1inf, unit l2 vectors on one group for l12. The restricted
    master LP over the generated atoms is solved exactly (HiGHS simplex,
    warm-started); pricing uses the full dual V = T^T Y: the best atom of
    group g is -sign(V_g) (l1, l1inf) or -V_g / ||V_g||_2 (l12), with reduced
    cost 1 - (dual norm of V_g). Stops when the certified gap of the full
    problem is <= tol (for l12 the master only approximates the ball from
    inside, so the gap closes in the limit, not in finitely many rounds).

    With ``row_generation`` (default: when L(K-1) > :data:`ROWGEN_MIN_ROWS`)
    the master starts from the rows of :func:`_initial_rows` and, after each
    solve, gets the most violated missing hinge row of each sample (violation
    above :data:`ROWGEN_TOL`) with the round's new atoms (rows are first
    added once it has atoms; rows that stay loose are dropped, see
    :meth:`_RowGeneration.stale`); the certificate is that of the full
    problem either way (its primal value is the loss over all L samples).

    Returns (X (M+1, K), Y (L, K), last GapResult, rounds, converged).
    """
    cg = _ColumnGeneration(op, geo, kind, par, tol, max_rounds, deadline, record, row_generation)
    cg.advance(deadline)
    return cg.X, cg.Y, cg.best, cg.rounds, cg.converged


class _ColumnGeneration:
    """The column generation as a resumable loop (:func:`_column_generation` runs it to
    the end; the engine portfolio, :class:`sparsesvm.solvers.accelerated.hinge._Portfolio`,
    runs it in turns).

    Parameters
    ----------
    op, geo, kind, par, tol, max_rounds, record, row_generation
        As for :func:`_column_generation`.
    deadline : float or None
        ``time.perf_counter()`` time after which the loop is :attr:`finished`.
    clock : WallClock or WorkClock, optional
        The clock of :meth:`advance`'s ``until`` (default: the wall clock); a
        :class:`~sparsesvm.solvers.accelerated.clock.WorkClock` is charged with the
        loop's work.

    Attributes
    ----------
    X (M + 1, K), Y (L, K), best : GapResult or None
        The last master point and its certificate of the full problem.
    rounds : int
        Master solves done (``record`` gets the count before each solve's point).
    converged, finished : bool
        The gap met ``tol``; the loop ended (converged, no atom left to price,
        ``max_rounds`` or the deadline).
    """

    def __init__(self, op, geo, kind, par, tol, max_rounds, deadline, record, row_generation=None,
                 clock=None):
        Phi, y, K = op.Phi, op.y_idx, op.n_classes
        L, M = Phi.shape
        self.op, self.geo, self.kind, self.par, self.tol = op, geo, kind, par, tol
        self.max_rounds, self.deadline, self.record = int(max_rounds), deadline, record
        self.clock = WALL if clock is None else clock
        ll, kk = np.nonzero(np.arange(K)[None, :] != y[:, None])
        self.pricing = _Pricing(op, geo, ll, kk)
        if row_generation is None:
            row_generation = L * (K - 1) > ROWGEN_MIN_ROWS
        self.rows = _RowGeneration(op, _initial_rows(op)) if row_generation else None
        if row_generation:
            self.master = _Master(L, K, y, self.rows.ll, self.rows.kk, kind, par, ipm=True,
                                  clock=self.clock, tol=tol, slow_rule=geo.name == "l12")
        else:
            self.master = _Master(L, K, y, ll, kk, kind, par, clock=self.clock)
        self.best = None
        self.X = np.zeros((M + 1, K))
        self.Y = np.zeros((L, K))
        self.rounds = 0
        self.converged = self.finished = False
        # the solves nonbasic at 0 after which an atom is deleted (l12: doubled while the
        # certified gap stalls, ATOM_STALL_ROUNDS), the smallest gap so far and the rounds since
        self.patience = ATOM_DROP_AFTER
        self._least, self._stall = np.inf, 0

    def advance(self, until):
        """Run rounds until :attr:`finished` or, after a round, :attr:`clock` passes ``until``
        (None: never): then call again to go on. On the wall clock a master solve from the
        second on also stops at ``until`` (HiGHS' time limit; the next call goes on from its
        basis); on a counted clock (the engine portfolio's turns) it runs to its end, so that
        the rounds are those of an uninterrupted run: HiGHS' simplex resumed after a pause
        takes other pivots, and on a degenerate master ends at another optimal vertex, whose
        multipliers price other atoms (measured: the README's work-clock paragraph)."""
        op, geo, kind, par = self.op, self.geo, self.kind, self.par
        master, pricing, rows = self.master, self.pricing, self.rows
        clock = self.clock
        while not self.finished:
            if self.rounds >= self.max_rounds:
                self.finished = True
                break
            if self.rounds:  # from the second solve on: one point is certified
                if clock.counted:  # the run's deadline only (HiGHS' clock)
                    master.deadline = self.deadline
                else:
                    master.deadline = until
                master.hard_deadline = self.deadline
            try:
                X, Y, a, slack = pricing.master_point(master, kind, par)
            except TimeoutError:  # HiGHS stopped at the time limit: the last certified point
                self.finished = WALL.past(self.deadline)
                break
            self.rounds += 1
            clock.round(op.n_samples, op.n_classes)
            TX = op.T(X) if rows is not None else None
            if kind == "reg":
                best = hinge_reg_gap(op, X, Y, geo, lam=par, TX=TX)
            else:
                best = hinge_con_gap(op, X, Y, geo, eta=par, TX=TX)
            self.X, self.Y, self.best = X, Y, best
            self.record(best, self.rounds - 1, X)
            self._watch(best.rel_gap)
            if best.rel_gap <= self.tol:
                self.converged = self.finished = True
                break
            if WALL.past(self.deadline):
                self.finished = True
                break
            if not self._next_columns(TX, a, slack):
                self.finished = True
                break
            if clock.past(until):
                break

    def _watch(self, gap):
        """l12: double :attr:`patience` (at most :data:`ATOM_PATIENCE_MAX` times) after each
        :data:`ATOM_STALL_ROUNDS` rounds without a smaller certified gap."""
        if self.geo.name != "l12":
            return
        if gap < self._least:
            self._least, self._stall = gap, 0
            return
        self._stall += 1
        most = ATOM_DROP_AFTER * 2 ** ATOM_PATIENCE_MAX
        if self._stall >= ATOM_STALL_ROUNDS and self.patience < most:
            self.patience *= 2
            self._stall = 0

    def _next_columns(self, TX, a, slack):
        """Grow the master for its next solve (rows, atoms, or the slack's cost);
        False when nothing is left to add (the loop ends)."""
        master, pricing, rows, kind, par = self.master, self.pricing, self.rows, self.kind, self.par
        grown = False
        stale = master.stale_atoms(self.patience)  # keeps the master small too
        if master.interior is not None:  # an atom dropped before stays (_Pricing.returned)
            stale &= ~pricing.returned()
        master.drop_atoms(stale)
        pricing.drop(stale)
        if rows is not None and master.atom_cols:  # at W = 0 only the biases rank the pieces
            master.drop_rows(rows.stale(master, TX, a))  # keeps the master small
            grown = rows.grow(master, pricing, TX)
        # atoms are priced in the same round as the rows (their columns include the new
        # rows; the new rows' multipliers are 0, so the dual V is the last solve's)
        new = pricing.price(a, master.ll, master.kk)
        if rows is not None and not new and not master.atom_cols:  # W = 0 and nothing to price
            grown = rows.grow(master, pricing, TX)
        if new or grown:
            master.add(new)
            return True
        if master.last_ipm:  # nothing priced at a crossover's point: confirmed by the simplex
            master.exact_next = True
            return True
        if kind == "con" and slack > 0:
            if master.big >= SLACK_COST_MAX:
                raise ValueError(
                    f"hinge-con: eta = {par:g} cannot be met: the smallest hinge loss "
                    f"found is {par + slack:g} even with a multiplier of {master.big:g} "
                    "on the constraint (eta is below the loss that the data allow, e.g. "
                    "duplicated samples with different labels)")
            master.raise_big()  # the elastic slack is still used: penalise it more
            return True
        return False


def _initial_rows(op):
    """One hinge row per sample: ``(l, k)`` with k the nearest other class mean to Phi_l.

    At W = 0 all hinge pieces tie; the class whose mean is nearest (in the
    feature space) is the likeliest to carry a sample's hinge at the optimum.
    """
    Phi, y, K = op.Phi, op.y_idx, op.n_classes
    L = Phi.shape[0]
    cnt = np.bincount(y, minlength=K).astype(float)
    onehot = sp.csr_matrix((np.ones(L), (y, np.arange(L))), shape=(K, L))
    mu = onehot @ Phi
    mu = (mu.toarray() if sp.issparse(mu) else np.asarray(mu)) / np.maximum(cnt, 1.0)[:, None]
    # -||phi_l - mu_k||^2 / 2 up to a per-sample constant
    close = np.asarray(Phi @ mu.T) - 0.5 * np.einsum("km,km->k", mu, mu)[None, :]
    close[np.arange(L), y] = -np.inf
    return np.arange(L), np.argmax(close, axis=1)


class _RowGeneration:
    """The hinge rows ``(l, k != z_l)`` of the master, grown by the violated ones.

    Parameters
    ----------
    op : MulticlassOperator
    first : (ndarray, ndarray)
        The initial rows ``(ll, kk)``.
    """

    def __init__(self, op, first):
        self.op = op
        self.ll, self.kk = first
        self.has = np.zeros((op.n_samples, op.n_classes), dtype=bool)
        self.has[self.ll, self.kk] = True
        self.has[np.arange(op.n_samples), op.y_idx] = True  # no row for the true class
        self.age = np.zeros(len(self.ll), dtype=int)  # solves since each master row was last tight

    def stale(self, master, TX, a):
        """Mask of the master's rows to drop: rows with zero multiplier and a slack above
        :data:`ROWGEN_TOL` for :data:`ROWGEN_DROP_AFTER` consecutive solves."""
        ll, kk = master.ll, master.kk
        loose = (a[ll, kk] <= 0.0) & (master.xi[ll] - 1.0 - TX[ll, kk] > ROWGEN_TOL)
        self.age = _aged(self.age, loose)
        drop = self.age >= ROWGEN_DROP_AFTER
        self.has[ll[drop], kk[drop]] = False
        self.age = self.age[~drop]
        return drop

    def grow(self, master, pricing, TX):
        """Add the :meth:`violated` rows at the master's point to ``master``; whether there were any."""
        nl, nk = self.violated(TX, master.xi)
        if len(nl):
            master.add_rows(nl, nk, pricing.row_entries(nl, nk))
        return len(nl) > 0

    def violated(self, TX, xi):
        """The most violated missing row of each sample, where ``1 + TX[l, k] - xi_l`` exceeds
        :data:`ROWGEN_TOL` (``TX = op.T(X)`` at the master's point, ``xi`` its hinge values);
        of the :data:`ROWGEN_MAX_ADD` most violated samples when more violate one."""
        V = np.where(self.has, -np.inf, TX)
        k = np.argmax(V, axis=1)
        ar = np.arange(len(k))
        excess = 1.0 + V[ar, k] - xi
        l = np.flatnonzero(excess > ROWGEN_TOL)
        if len(l) > ROWGEN_MAX_ADD:
            l = np.sort(l[np.argsort(-excess[l], kind="stable")[:ROWGEN_MAX_ADD]])
        k = k[l]
        self.has[l, k] = True
        return l, k


class _Pricing:
    """The atoms of the column generation: the primal-dual point of a master
    solution, and the pricing of new atoms against the full dual.

    Parameters
    ----------
    op : MulticlassOperator
    geo : Penalty
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
        self.dropped = set()  # the keys of the atoms ever dropped
        self._group_entries = {}  # gid -> _atom_entries(geo, gid)

    def _entries(self, gid):
        """:func:`_atom_entries` of group ``gid``, made once."""
        gid = int(gid)
        out = self._group_entries.get(gid)
        if out is None:
            out = self._group_entries[gid] = _atom_entries(self.geo, gid)
        return out

    def master_point(self, master, kind, par):
        """Solve the master: ``(X (M+1, K), Y (L, K), a (L, K) the hinge multipliers, slack)``."""
        geo, op = self.geo, self.op
        y, L, K = op.y_idx, op.n_samples, op.n_classes
        cw, b, mult, slack = master.solve()
        A = np.zeros(geo.group_shape)
        for (gid, slots, sig), cv in zip(self.atoms, cw):
            if cv != 0.0:
                i1, i2 = divmod(gid, geo.group_shape[2])
                A[i1, slots, i2] += cv * sig
        X = np.vstack([geo.from_groups(A), b[None, :]])
        a = np.zeros((L, K))
        a[master.ll, master.kk] = mult[:master.nh]
        cap = par if kind == "reg" else max(float(mult[-1]), float(a.sum(axis=1).max()))
        Y = a.copy()
        Y[self.ar, y] = np.maximum(cap - a.sum(axis=1), 0.0)
        return X, Y, a, slack

    def drop(self, drop):
        """Forget the atoms of mask ``drop`` (they may be priced again)."""
        for (gid, _, sig), d in zip(self.atoms, drop):
            if d:
                key = _atom_key(gid, sig)
                self.keys.discard(key)
                self.dropped.add(key)
        self.atoms = [u for u, d in zip(self.atoms, drop) if not d]

    def returned(self):
        """Mask of the atoms that were dropped before and priced again. At the dense
        interior-point method's points they are not dropped again: its duals are central,
        not a vertex's, and an atom priced by them can leave the master's optimum unchanged
        (a degenerate master) and be idle, so dropping and pricing it again can cycle (seen
        on load_digits: the same four masters again and again, the gap at 0.1-0.5). With
        finitely many atoms (l1, l1,inf) the rounds then cannot cycle."""
        return np.array([_atom_key(gid, sig) in self.dropped for gid, _, sig in self.atoms],
                        dtype=bool)

    def row_entries(self, ll, kk):
        """The coefficients of the atoms in the hinge rows ``(ll, kk)``: (len(ll), n_atoms)."""
        return self._columns(self.atoms, ll, kk)

    def _samples_t(self, smp):
        """The columns ``smp`` of the operator's transposed features, in a layout fast for a
        sparse matrix times it: the CSR ``[Phi^T; 1^T]`` of a sparse ``Phi`` (its last row,
        the biases', is never read: the atoms have no entry there), or the C-ordered
        ``Phi^T`` of a dense one (scipy copies an F-ordered right operand into C order at
        every product), both made once per operator. A dense subset is taken by ``np.take``,
        which keeps C order (``full[:, smp]`` is F-ordered, so scipy copied it again: at
        MNIST's L = 5000, 700 of 5000 samples, 15 ms against 32 ms plus the copy)."""
        products = self.op.products
        full = products.PhiT1 if sp.issparse(self.op.Phi) else products.row_major_t()
        if len(smp) == full.shape[1]:
            return full
        return full[:, smp] if sp.issparse(full) else np.take(full, smp, axis=1)

    #: atoms per sparse product in :meth:`_columns` (bounds its (samples, atoms, K) array)
    CHUNK = 64

    def _columns(self, atoms, ll, kk):
        """The master columns of ``atoms`` (list of (gid, slots, sigma)) on the hinge rows
        ``(ll, kk)``: (len(ll), len(atoms)).

        Row (l, k) of atom u is ``(Phi_l U)_k - (Phi_l U)_{z_l}``; computed by one sparse
        product of the rows' samples with a chunk of atoms (all classes at once).
        """
        op = self.op
        y, K = op.y_idx, op.n_classes
        out = np.zeros((len(ll), len(atoms)))
        if not atoms or len(ll) == 0:
            return out
        smp, inv = np.unique(ll, return_inverse=True)
        PsT = self._samples_t(smp)
        for start in range(0, len(atoms), self.CHUNK):
            chunk = atoms[start:start + self.CHUNK]
            na = len(chunk)
            parts = [self._entries(gid)[:2] + (sig,) for gid, _, sig in chunk]
            js = np.concatenate([p[0] for p in parts])
            cols = np.concatenate([u * K + p[1] for u, p in enumerate(parts)])
            U = sp.csr_matrix((np.concatenate([p[2] for p in parts]), (cols, js)),
                              shape=(na * K, PsT.shape[0]))
            P = U @ PsT  # (na * K, n_samples)
            P = (P.toarray() if sp.issparse(P) else np.asarray(P)).T.reshape(len(smp), na, K)
            out[:, start:start + na] = P[inv, :, kk] - P[inv, :, y[ll]]
        return out

    def price(self, a, ll=None, kk=None):
        """The master columns of the best new atoms of the groups whose dual norm of
        ``V = T^T a`` exceeds 1 (at most ``max(8, n_atoms)``); appended to :attr:`atoms`.
        The columns are on the master's hinge rows ``(ll, kk)`` (default: all of them)."""
        geo, op = self.geo, self.op
        ll = self.ll if ll is None else ll
        kk = self.kk if kk is None else kk
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
            i1, i2 = divmod(int(gid), geo.group_shape[2])
            _, _, slots = self._entries(gid)
            v = Vg[i1, slots, i2]
            # best atom of the group: the minimiser of <u, V_g> over the unit ball of g_G
            sig = -v / np.sqrt(v @ v) if geo.name == "l12" else -np.sign(v)
            key = _atom_key(gid, sig)
            if key in self.keys:
                continue
            self.keys.add(key)
            new.append((int(gid), slots, sig))
        self.atoms.extend(new)
        cols = self._columns(new, ll, kk)
        new = [cols[:, i] for i in range(len(new))]
        return new
