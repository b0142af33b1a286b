"""Accelerated, certified solvers for the exact-hinge problems (issue 6).

Same problems as the paper's Algorithms 1 and 2 (spec sections 1-3),
solved to a *certified* accuracy: every stop is decided by the relative
duality gap of the full problem (:mod:`sparsesvm.model.certificates`), so the
result is the exact-hinge optimum to the stated tolerance.

Five inner engines and a portfolio of two (option ``inner``; the default ``"auto"`` takes
``"portfolio"`` for l1 and l1inf, ``"cg"`` for l12 with groups of at most
:data:`L12_CG_MAX_GROUP` entries and at most :data:`L12_CG_MAX_ROWS` hinge rows L(K-1)
(``"portfolio"`` above), or with groups of at most :data:`L12_CG_MAX_GROUP_WIDE` entries
and at least :data:`L12_CG_GROUPS_PER_ROW` groups per hinge row (``"portfolio"``, PDHG
first, with fewer groups), ``"pdhg"`` for l12 with larger groups; for l2 ``"qp"`` when
L(K-1) <= :data:`QP_MAX_VARS`, M >= L (then the Gram matrix generically has
full rank) and HiGHS' incremental interface is there, ``"dcd"`` otherwise):

* ``"cg"``: **column generation** over group atoms whose conic hull gives
  the penalty: sign vectors on one group for l1 and l1inf (finitely many:
  the master is exact), unit l2 vectors on one group for l12 (the master
  is then a polyhedral inner approximation of the l12 ball, refined by
  each pricing round: measured, a certified 1e-9 gap in about 30 rounds
  on leukemia with blocks of 5, and 1e-5 to 1e-4 in at most 4 s on raw leukemia
  and MNIST scattering features with blocks of 9 and 10, where the groups
  far outnumber the hinge rows (:data:`L12_CG_MAX_GROUP_WIDE`); slower than
  PDHG for groups of 10 or more entries that are not much more numerous than
  the rows, whose balls need many more
  directions, and for large masters). The restricted master LP (variables: atom weights,
  biases, hinge values; rows: the L(K-1) hinge constraints, or above
  :data:`~sparsesvm.solvers.accelerated.colgen.ROWGEN_MIN_ROWS` of them
  a generated subset) is solved by
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
* ``"ipm"`` (l1, l1inf): an **interior-point method on the whole LP** in sample space
  (:mod:`~sparsesvm.solvers.accelerated.hinge_ipm`): Mehrotra's predictor-corrector
  iterations, each a factor of an L(K-1)-square matrix assembled from the K class Gram
  matrices; 12 to 48 iterations to a certified 1e-4 (measured: ``bench_family.py``'s
  problems, real MNIST features), whatever the number of support vectors,
  at a cost per iteration known from the problem's size
  (:func:`~sparsesvm.solvers.accelerated.hinge_ipm.predicted_seconds`).
* ``"portfolio"`` (l1, l12, l1inf): ``"cg"`` and ``"pdhg"`` **in turns**, or for l1 and
  l1inf ``"cg"`` and ``"ipm"`` where the interior point is predicted to take at most
  :data:`PORTFOLIO_IPM_MAX_S` seconds (PDHG replaces it if it stalls)
  (:class:`_Portfolio`): column generation alone for :data:`PORTFOLIO_FIRST_SLICE`
  seconds (with the interior point, :data:`PORTFOLIO_IPM_FIRST_SHARE` of its predicted
  time, if less, but at least :data:`PORTFOLIO_IPM_HEAD` of it; PDHG alone first for l12
  with groups of more than
  :data:`L12_CG_MAX_GROUP` entries, see :data:`L12_CG_MAX_GROUP_WIDE`), then turns that double each
  engine's total time, each engine resuming where
  it paused, and an engine whose certified gap falls fast enough to meet ``tol`` soon
  keeps its turn (:data:`PORTFOLIO_EXTEND`, :data:`PORTFOLIO_EXTEND_IPM`; the first turn of
  the engine other than column generation is run in two halves, so that its rate is known at
  its end), the interior point goes first once its gap fell (:data:`PORTFOLIO_IPM_FIRST`),
  while PDHG,
  trailing, whose gap predicts a finish
  long after column generation's time so far runs only a share of that time
  (:data:`PORTFOLIO_SLOW`); the first to certify ``tol`` gives the result. The turns are
  timed on a work clock (:class:`~sparsesvm.solvers.accelerated.clock.WorkClock`: the
  engines' products, iterations and simplex / interior-point iterations, priced in seconds
  of a reference machine), so the result does not depend on the machine's speed or load.
  No rule on the problem's
  size separates the l1 / l1inf problems that column generation certifies in seconds
  (real MNIST scattering, load_digits) from those where it stalls and PDHG does not
  (dense noisy problems with many support vectors): measured by
  ``benchmarks/bench_engines.py``, the engines differ by 5x to more than 98x either way;
  the portfolio costs 1.11 to 3.12 times the faster one (:class:`_Portfolio`; 10.8 times
  where PDHG needs 0.11 s; the README's run of 9194b86).
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
    paper's epigraphical splitting;
  - without preconditioning (the default), the compiled steps of the paper's
    loops where numba is available (the fused primal step and hinge-reg's
    simplex step), and hinge-con's dual step compiled
    (:mod:`~sparsesvm.solvers.accelerated.pdhg`), loaded when PDHG first runs
    in the solve, off its clock.

The returned point for hinge-con is the feasible scaled point theta * X of
the certificate (the constraint holds exactly). Importing this module
registers ``SparseSVC(solver="accelerated", stopping="gap")`` for hinge-reg
and hinge-con.

This module is the driver (options, engine choice, history, the working-set
loop, the public :func:`hinge_reg` and :func:`hinge_con`); the engines are
:mod:`~sparsesvm.solvers.accelerated.colgen`,
:mod:`~sparsesvm.solvers.accelerated.hinge_ipm`,
:mod:`~sparsesvm.solvers.accelerated.qp`,
:mod:`~sparsesvm.solvers.accelerated.l2dual` and
:mod:`~sparsesvm.solvers.accelerated.pdhg`.
"""

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...model.certificates import hinge_con_gap, hinge_reg_gap
from ...model.operator import MulticlassOperator, check_double
from ...model.penalties import make_penalty
from ..registry import model_parameters, register_solver
from . import highs
from . import l2dual as _l2dual
from .clock import WALL, WorkClock
from .colgen import _column_generation, _ColumnGeneration
from .hinge_ipm import LP_PENALTIES, InteriorPoint, cost_shape, predicted_seconds
from .pdhg import _pdhg, _Problem, load_kernels
from .qp import QP_MAX_VARS, QP_TIME_LIMIT, _best_biases, _l2_dual_qp

__all__ = ["AcceleratedResult", "hinge_reg", "hinge_con", "DEFAULTS"]


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
#: L12_CG_MAX_GROUP entries and the master has at most L12_CG_MAX_ROWS = L(K-1) rows, and
#: both engines in turns (the portfolio) with more rows; measured
#: (benchmarks/bench_l12_engines.py, News20-like): column generation much faster than PDHG
#: with groups of 5 and 76 or 400 rows, slower with groups of 10 or 20 when the groups are
#: not much more numerous than the rows. With groups of 5 and more rows neither wins
#: everywhere, and until e0a94f5 PDHG alone took them: on benchmarks/bench_family.py's
#: News20-like problem (2700 rows) PDHG did not certify hinge-reg@2 (4.4e-4 after 38 s),
#: certified hinge-con in 12.2 s and hinge-reg@5 in 12.9 s, column generation (with
#: ATOM_STALL_ROUNDS) 2.6, 4.0 and 39 s alone, the portfolio 2.2, 8.1 and 24 s (fresh clones
#: of 5038d8e and 912e159; `bench_l12_engines.py --cap 20` on 20d3613, its 200 x 5000 x 20
#: case with blocks of 5, 3800 rows: column generation 0.95 s, PDHG 11.6 s)
L12_CG_MAX_GROUP = 5
L12_CG_MAX_ROWS = 1000
#: ... and also when a group has at most L12_CG_MAX_GROUP_WIDE entries and there are at
#: least L12_CG_GROUPS_PER_ROW groups per hinge row: measured (benchmarks/bench_l12_engines.py
#: --real --cap 30, a fresh clone of the final tree), column generation certifies 1e-5 in
#: 0.02-0.18 s on raw leukemia with blocks of 5, 9 and 10 (28-56 groups a row) where PDHG stops
#: at 11-30 s at gaps of 0.26 to 14 (or none), and 1e-4 in at most 2.3 s on MNIST scattering
#: features of 30 and 100 images with blocks of 9 and 10 (4.4-16 a row) where PDHG takes
#: 0.01 s to more than 30 s (faster once: 0.04 against 0.21 s, 100 images, blocks of 9,
#: alpha = 3); with about 1 group a row
#: (benchmarks/bench_family.py's dense noisy problems, blocks of 10) PDHG wins. With groups of
#: at most L12_CG_MAX_GROUP_WIDE entries but fewer groups a row, neither engine wins by a size
#: rule, and both run in turns (the portfolio), PDHG first: on bench_family.py's MNIST-like
#: problem of 500 images (blocks of 9, 0.98 groups a row) column generation alone certifies
#: in 3.6-8.1 s (a fresh clone of 0e596e2), PDHG alone took 103-130 s (the auto engine until
#: 3c4ad48, the family's table of 5038d8e; Clarabel 67-73 s), while on its dense noisy
#: problems (0.06-2.5 groups a row) PDHG certifies in 0.04-6.4 s and column generation alone
#: took 0.5-3.2 s on the smallest (100 x 500 x 3) and had not certified after 5 s on the
#: 150 x 1200 x 5 one, nor after 275-300 s on the 1000 x 500 x 10 one (development runs on
#: 3112115, bench_family.py's forced engine). PDHG's gap falls steadily, so its first turn
#: tells (its two halves give its rate): where it wins it keeps its turn to the end. Measured (bench_family.py
#: --no-forced, a fresh clone of cf6c789 against the family's table of 5038d8e, where PDHG
#: ran alone): its dense l1,2 rows certified by PDHG in the same or fewer iterations, 0.01 s
#: slower at most, but one (the dense 1000 x 500 x 10 hinge-con row, 1.96 s against 0.95 s:
#: there column generation had a turn), its MNIST-like 500-image rows 5.9 / 13.7 / 4.1 s
#: (hinge-reg@2, @5, hinge-con; column generation's point)
L12_CG_MAX_GROUP_WIDE = 10
L12_CG_GROUPS_PER_ROW = 4

#: inner="portfolio": seconds that column generation runs alone before PDHG's first turn
#: (a problem that column generation certifies within it never starts PDHG). The portfolio's
#: seconds are those of its work clock (:class:`~sparsesvm.solvers.accelerated.clock.WorkClock`:
#: the engines' work priced in seconds of the reference machine), here and below
PORTFOLIO_FIRST_SLICE = 0.5

#: inner="portfolio", l1 and l1inf: where the interior-point engine
#: (:mod:`~sparsesvm.solvers.accelerated.hinge_ipm`) is predicted to take at most
#: PORTFOLIO_IPM_MAX_S seconds (:func:`~sparsesvm.solvers.accelerated.hinge_ipm.predicted_seconds`:
#: its iterations' cost is known from the problem's size, unlike column generation's or
#: PDHG's), it takes PDHG's place in the turns, and column generation's first slice is
#: PORTFOLIO_IPM_FIRST_SHARE of that prediction (at most PORTFOLIO_FIRST_SLICE): a problem
#: that column generation certifies within it never starts the interior point, and one
#: that the interior point certifies takes at most that share longer than it alone, plus
#: the turns. PDHG replaces it if it stops short of tol (it stalls where its Newton systems
#: grow too ill-conditioned to go on). 0.4 (0.25 before the prices of 121a724 lowered the
#: prediction): real MNIST's l1,inf fits at L = 30 and 50, which column generation
#: certifies in 0.1-0.2 s, took 0.19-0.34 s with 0.25 against 0.08-0.21 s (three of four;
#: the fourth 0.08 against 0.07 s), bench_family's dense l1,inf rows 0.49-0.66 s against
#: 0.59-0.72 s (measured on 6f70625). PORTFOLIO_IPM_MAX_S 4 (1 until 3f96ca4): with 1,
#: benchmarks/bench_family.py's MNIST-like problem of 100 images (predicted 1.48 s) ran
#: PDHG, which certified its l1,inf rows in 28-40 s (Clarabel: 38-45 s); with 4 the portfolio
#: takes 2.0-2.7 s there (the interior point's), on the dense 300 x 5000 x 3 problem
#: (predicted 1.9-2.0 s) 2.3-3.2 s against 2.6-7.5 s on five of its six l1 and l1,inf rows
#: (0.16 s, column generation's, on the sixth), on the dense 300 x 2000 x 5 one (2.8 s)
#: 1.5-3.4 s against 0.63-3.9 s (fresh clones of 5038d8e and 912e159). 64 since 3c4ad48:
#: on bench_family.py's MNIST-like problem of 500 images (predicted 59.6 s) PDHG certified
#: the l1,inf hinge-reg@2 row in 193 s in the portfolio (5038d8e; Clarabel 98 s), the
#: interior point in the portfolio its three l1,inf rows in 57-68 s (Clarabel 98-122 s; cf6c789).
#: Column generation alone for at least PORTFOLIO_IPM_HEAD of the predicted time (since
#: 5d73643): where the interior point's iterations take seconds, a problem that column
#: generation certifies in a few seconds would otherwise pay for its turns. Measured (fresh
#: clones of cf6c789, and of a630e60 without the head start): that problem's l1 rows
#: 0.92-1.6 s against 3.0-3.9 s, the News20-like problem's (predicted 17.7 s) l1 and l1,inf
#: rows 0.12-2.5 s against 0.17-3.7 s but hinge-reg@5 l1,inf (16.9 s against 17.8 s, the
#: interior point's), real MNIST scattering features of 500 images (E5's size, l1,inf/81;
#: /work/notes/s46/realmnist.py in issue 16's notes, cf6c789, one process, twice) 3.98-4.20 /
#: 1.58 / 2.72-3.28 s (hinge-reg lam = 1, 0.1, hinge-con eta = 0.1 L; column generation's,
#: the interior point never started) against 7.20-7.52 / 2.41-2.59 / 4.46-4.53 s with the
#: limit at 4 s (PDHG in turns, as before 3c4ad48). Predicted 2.5 s or
#: less, the head start is PORTFOLIO_IPM_FIRST_SHARE's
PORTFOLIO_IPM_MAX_S = 64.0
PORTFOLIO_IPM_FIRST_SHARE = 0.4
PORTFOLIO_IPM_HEAD = 0.2

#: inner="portfolio": an engine whose certified gap, at the rate it fell since its previous
#: turn, would reach tol within PORTFOLIO_EXTEND times its own time so far keeps its turn, in
#: steps of that predicted time, up to PORTFOLIO_EXTEND_CAP times the turns' allotment.
#: Measured (benchmarks/bench_engines.py): PDHG's gap falls steadily, so the rate predicts its
#: finish; column generation's stays high until it drops at once, and seldom predicts it
PORTFOLIO_EXTEND = 1.0
PORTFOLIO_EXTEND_CAP = 8.0
#: ... and for the interior point, which from its second pair of turns on goes first once its
#: gap fell within a turn (_turn_order), PORTFOLIO_EXTEND_IPM times its time so far: its
#: iterations' gap falls at a steady rate to the end, like PDHG's, and it has no rule such as
#: PDHG's hold-back (PORTFOLIO_SLOW). Measured (benchmarks/bench_family.py's rows, each with
#: and without both in one process, the README): on the MNIST-like 500-image l1,inf
#: hinge-con row without them column generation took a second turn before the interior point
#: could finish (24.4 s predicted at 20.5 s of its own); with both, column generation's time
#: 16.2 -> 7.4 s, the row 51.8 -> 42.1 s; either alone does not cut that turn, and the other 71
#: rows measured kept their engines and iterations
PORTFOLIO_EXTEND_IPM = 1.25
PORTFOLIO_IPM_FIRST = True

#: inner="portfolio": PDHG, trailing on the certified gap, whose gap at the rate it fell since
#: its previous turn would reach tol only after more than PORTFOLIO_SLOW times the leading
#: engine's time so far, while that engine has run at least PORTFOLIO_SLOW_AFTER seconds, runs
#: only up to PORTFOLIO_SLOW_SHARE of the leader's time (not the full allotment). Only PDHG's
#: prediction is used (column generation's gap drops at once, so its rate says little).
#: Measured (MNIST L = 5000, l1inf/81, hinge-reg lam = 1, 1b9cddd): after each of its turns
#: PDHG's gap predicted 3.9 to 82 times column generation's time so far, and PDHG took 34 of
#: the portfolio's 112 s without certifying; with the rule (4515210) 8.6 of 78 s. On
#: benchmarks/bench_engines.py's other problems the rule does not apply
PORTFOLIO_SLOW = 2.0
PORTFOLIO_SLOW_SHARE = 0.25
PORTFOLIO_SLOW_AFTER = 4.0

#: a restricted working-set problem whose certificate stays infinite (hinge-con: no
#: feasible scaling of the iterate) for this many consecutive checks is abandoned
#: and the working set grown (it may be infeasible: PDHG would then never stop)
WS_MAX_INFEASIBLE_CHECKS = 16



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
        Wall time of the solve in seconds (trace recording and the compiled kernels' loading
        excluded).
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
        The ingredients used; for ``inner="portfolio"`` also ``"engine"`` (the engine whose
        point is returned), ``"engine_seconds"`` (each engine's wall seconds) and
        ``"engine_work"`` (its seconds on the portfolio's work clock).
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
def _unit_scores(geo, V):
    """Score of each working-set unit (block of features, or feature) from V (M, K)."""
    if geo.name == "l2":
        return np.abs(V).max(axis=1)
    return geo.group_dual_norms(V).max(axis=1)


def _unit_columns(geo, units):
    """Feature columns of the sorted units."""
    if geo.layout == "blocks":
        s = geo.group_shape[1]
        cols = (units[:, None] * s + np.arange(s)[None, :]).ravel()
        return cols[cols < geo.n_features]
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
    if settings["inner"] not in ("auto", "cg", "pdhg", "portfolio", "ipm", "qp", "dcd"):
        raise ValueError("inner must be 'auto', 'cg', 'pdhg', 'portfolio', 'ipm', 'qp' or 'dcd', "
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
        if geo.name in ("l1", "l1inf"):  # no size rule tells which engine wins: both in turns
            inner = "portfolio"
        elif geo.name == "l12":  # polyhedral atoms approximate small groups' balls well
            size, rows = geo.group_shape[1], L * (K - 1)
            n_groups = geo.group_shape[0] * geo.group_shape[2]
            small = size <= L12_CG_MAX_GROUP
            many = size <= L12_CG_MAX_GROUP_WIDE and n_groups >= L12_CG_GROUPS_PER_ROW * rows
            if many or (small and rows <= L12_CG_MAX_ROWS):
                inner = "cg"
            elif size <= L12_CG_MAX_GROUP_WIDE:  # no size rule tells which engine wins: both
                inner = "portfolio"
            else:
                inner = "pdhg"
        else:  # the dual QP's Hessian has full rank (generically) when M >= L
            inner = ("qp" if highs.highspy is not None and L * (K - 1) <= QP_MAX_VARS and M >= L
                     else "dcd")
    if inner in ("cg", "portfolio") and geo.name == "l2":
        raise ValueError(f"inner={inner!r} needs a norm penalty (l1, l12, l1inf); for l2 use "
                         "'qp', 'dcd' or 'pdhg'")
    if inner == "ipm" and geo.name not in LP_PENALTIES:
        raise ValueError(f"inner='ipm' solves l1 and l1inf (linear programs), not {geo.name!r}")
    if inner in ("qp", "dcd") and geo.name != "l2":
        raise ValueError(f"inner={inner!r} is for penalty 'l2' only, got {geo.name!r}")
    if inner == "qp" and highs.highspy is None:
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
        self.spent = 0.0  # seconds of trace bookkeeping and set-up, excluded from the time axis
        self.n_done = 0
        self.prev = None

    def off_clock(self, fn):
        """``fn()``, its seconds excluded from the solve's time (a set-up such as loading
        compiled kernels, which no ``fit_time`` includes)."""
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.spent += time.perf_counter() - t0

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
    op = problem if isinstance(problem, MulticlassOperator) else _operator(*problem)
    check_double(op, "solver 'accelerated'")
    if not tol > 0:
        raise ValueError(f"tol must be > 0, got {tol}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    K = op.n_classes
    settings = _checked_settings(opts)
    L, M = op.Phi.shape
    geo = make_penalty(penalty, groups, M, K)
    inner = settings["inner"] = _choose_inner(settings["inner"], geo, L, M, K)
    if inner == "dcd":
        _l2dual.set_up(op)  # compiles or loads the sweep: not on the clock
    op.prepare()  # the dense products' BLAS orientations: not on the clock either
    t_start = time.perf_counter()  # the clock: input checks and kernel set-up are done
    deadline = None if max_time is None else t_start + float(max_time)
    if reference is not None:
        reference = np.asarray(reference, dtype=float)
        if reference.shape != (M + 1, K):
            raise ValueError(f"reference must have shape ({M + 1}, {K}), got {reference.shape}")
    recorder = _Recorder(t_start, trace, reference)
    if inner == "portfolio":
        return _Portfolio(op, geo, penalty, groups, kind, par, settings, recorder).run(
            tol, int(max_iter), deadline)
    if inner == "ipm":
        eng = _interior_point(op, geo, kind, par, tol, int(max_iter), deadline,
                              recorder.engine_record)
        eng.advance()
        return recorder.result(kind, eng.X, eng.Y, eng.best, eng.total, eng.converged, settings)
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


def _interior_point(op, geo, kind, par, tol, max_iter, deadline, record, clock=None):
    """The interior-point engine (:class:`~sparsesvm.solvers.accelerated.hinge_ipm.InteriorPoint`)
    on the full problem, certifying with :func:`_full_gap`."""
    return InteriorPoint(op, geo, kind, par, tol, max_iter, deadline, record,
                         lambda X, Y, TX: _full_gap(op, geo, kind, par, X, Y, TX=TX), clock=clock)


def _ipm_predicted(op, geo):
    """The interior-point engine's predicted seconds on this problem (l1 and l1inf), else inf."""
    if geo.name not in LP_PENALTIES:
        return np.inf
    return predicted_seconds(*cost_shape(op, geo))


class _Lane:
    """One engine's view of the portfolio's :class:`_Recorder`: it counts the engine's own
    iterations, and passes on a certificate only when it improves on the best one of
    the portfolio so far (the history is that of the portfolio's best point).
    ``extend``: the multiple of its own time so far within which a predicted finish keeps
    its turn (:data:`PORTFOLIO_EXTEND` by default); ``leads``: it takes the first turn of a
    pair once its gap fell within a turn, whatever the gaps (:func:`_turn_order`)."""

    def __init__(self, name, recorder, shared, clock, extend=None, leads=False):
        self.name, self.recorder, self.shared, self.clock = name, recorder, shared, clock
        self.extend = PORTFOLIO_EXTEND if extend is None else extend
        self.leads = leads
        self.trace = recorder.trace
        self.n_done = 0
        self.spent = 0.0  # the engine's seconds on the portfolio's clock
        self.wall = 0.0  # ... and on the wall clock
        self.history = []  # (spent, certified gap) at the end of each of its runs

    def run(self, eng, until):
        """Advance engine ``eng`` until the portfolio's clock passes ``until`` (or the
        engine's own deadline); counts its time and certified gap."""
        t0, w0 = self.clock.now(), time.perf_counter()
        eng.advance(until)
        self.spent += self.clock.now() - t0
        self.wall += time.perf_counter() - w0
        if eng.best is not None:
            self.history.append((self.spent, float(eng.best.rel_gap)))

    def predicted(self, tol):
        """The engine's seconds to ``tol`` if its best certified gap went on falling at the
        rate (in log) it fell since its previous turn (inf when it did not fall)."""
        if len(self.history) < 2:
            return np.inf
        t = np.array([h[0] for h in self.history])
        g = np.minimum.accumulate([h[1] for h in self.history])
        before = np.flatnonzero(t <= 0.5 * t[-1] + 1e-12)
        i = before[-1] if len(before) else 0
        if not (np.isfinite(g[i]) and g[i] > g[-1] > 0.0 and t[-1] > t[i]):
            return np.inf
        rate = np.log(g[i] / g[-1]) / (t[-1] - t[i])
        return max(np.log(g[-1] / tol), 0.0) / rate

    def record(self, gr, full, Xc=None):
        if full and gr.rel_gap < self.shared["rel_gap"]:
            self.shared["rel_gap"] = gr.rel_gap
            self.recorder.n_done = self.n_done
            self.recorder.record(gr, True, Xc)

    def engine_record(self, gr, n_done, Xc):
        self.n_done = n_done
        self.record(gr, True, Xc)

    def off_clock(self, fn):
        return self.recorder.off_clock(fn)


def _turn_order(tol):
    """The sort key of the portfolio's lanes ``(lane, engine)`` at a pair of turns: the engine
    with the smaller certified gap first (column generation first before any), but a lane
    that ``leads`` (the interior point's, :data:`PORTFOLIO_IPM_FIRST`) first once its gap
    fell within a turn."""
    def key(le):
        lane, eng = le
        lead = lane.leads and np.isfinite(lane.predicted(tol))
        return (not lead, eng.best.rel_gap if eng.best is not None else np.inf)

    return key


class _Portfolio:
    """Column generation and working-set PDHG in turns (inner="portfolio"; l1, l12, l1inf).

    Neither engine wins everywhere, and no rule on the problem's size tells
    which one will (``benchmarks/bench_engines.py``): column generation
    certifies the real MNIST and digits problems in seconds where PDHG stalls,
    PDHG the dense noisy ones where the master LPs grow large. Column
    generation runs alone for :data:`PORTFOLIO_FIRST_SLICE` seconds (PDHG, for l12 with
    groups of more than :data:`L12_CG_MAX_GROUP` entries: see
    :data:`L12_CG_MAX_GROUP_WIDE`); then the
    engines take turns, each turn bringing the engine's total time to the
    allotment, which doubles after every pair of turns. Each engine resumes
    where it paused (column generation after its last round, PDHG from its iteration
    state), so that each makes the iterates it makes alone. In each pair of turns the
    engine with the smaller certified gap
    goes first (column generation before any gap; the interior point, once its gap fell
    within a turn, whatever the gaps: :data:`PORTFOLIO_IPM_FIRST`), so if the faster engine
    alone needs t seconds, the portfolio needs about 2 t when that engine also
    leads on the gap (3 t at most when it trails until its last turn), plus
    the first slice and the turns' overshoot (a round of column generation, its master
    LP included; a check interval of PDHG). An engine whose gap, at the rate it
    fell since the middle of its time so far (the first turn of the engine other than
    column generation is run in two halves, so that this rate is known at its end; column
    generation's is not: its rate says little, and when its master LPs still paused inside a
    turn, a pause there changed the rounds that followed, 46 to 84 on the News20-like l1,2
    hinge-reg@2 row of ``benchmarks/bench_family.py``, in a development run), would meet ``tol`` within
    :data:`PORTFOLIO_EXTEND` times (the interior point: :data:`PORTFOLIO_EXTEND_IPM`)
    its time so far keeps its turn, in steps of at least that time, up to
    :data:`PORTFOLIO_EXTEND_CAP` times the allotment: then the other engine does not get
    its next turn first (PDHG's gap falls steadily, so the prediction holds for it; measured
    on ``benchmarks/bench_engines.py``'s three problems where PDHG wins: 1.03-1.20 t, see the
    README). For the same reason PDHG, when it trails column generation on the gap and its
    gap predicts a finish after more than :data:`PORTFOLIO_SLOW` times column generation's
    time so far (once that is :data:`PORTFOLIO_SLOW_AFTER` seconds), runs only up to
    :data:`PORTFOLIO_SLOW_SHARE` of column generation's time (:meth:`_slow_target`): if that
    prediction fails and PDHG is the faster engine after all, the portfolio takes about 5 t
    instead of 3 t. Both stop on the certified gap of the full problem;
    the result is the first to meet ``tol``, or the one with the smaller gap.
    ``max_iter`` caps each engine's own count (rounds, iterations), and the
    result's ``n_iter`` is the count of the engine that produced it,
    ``settings["engine"]`` its name, ``settings["engine_seconds"]`` each
    engine's wall time and ``settings["engine_work"]`` its time on the portfolio's clock.

    All the times above are those of a
    :class:`~sparsesvm.solvers.accelerated.clock.WorkClock` (the engines' counted work,
    priced in seconds of a reference machine), not of the wall clock: which engine runs
    when, hence which certified point is returned (on a degenerate problem, one of many
    optimal points), does not depend on the machine's speed or load. ``max_time`` stays
    a wall-clock cap.
    """

    def __init__(self, op, geo, penalty, groups, kind, par, settings, recorder):
        self.op, self.geo, self.penalty, self.groups = op, geo, penalty, groups
        self.kind, self.par, self.settings, self.recorder = kind, par, settings, recorder

    @staticmethod
    def _slow_target(lane, leader, tol, allot):
        """The time ``lane`` (PDHG, trailing ``leader`` on the gap) may reach in this turn:
        the allotment, or :data:`PORTFOLIO_SLOW_SHARE` of the leader's time where its
        predicted time to ``tol`` exceeds :data:`PORTFOLIO_SLOW` times the leader's."""
        if leader.spent < PORTFOLIO_SLOW_AFTER:
            return allot
        left = lane.predicted(tol)
        if np.isfinite(left) and left > PORTFOLIO_SLOW * leader.spent:
            return min(allot, PORTFOLIO_SLOW_SHARE * leader.spent)
        return allot

    def run(self, tol, max_iter, deadline):
        """Solve to ``tol``; returns the :class:`AcceleratedResult`."""
        meter = self.op.meter
        clock = WorkClock()
        if meter is None:  # the engines' products, counted (and passed on to a caller's meter)
            self.op.meter = clock.product
        else:
            def both(madds):
                clock.product(madds)
                meter(madds)

            self.op.meter = both
        try:
            return self._run(clock, tol, max_iter, deadline)
        finally:
            self.op.meter = meter

    def _run(self, clock, tol, max_iter, deadline):
        op, geo, kind, par, recorder = self.op, self.geo, self.kind, self.par, self.recorder
        L, M = op.Phi.shape
        K = op.n_classes
        shared = {"rel_gap": np.inf}
        cg_lane = _Lane("cg", recorder, shared, clock)
        cg = _ColumnGeneration(op, geo, kind, par, tol, max_iter, deadline, cg_lane.engine_record,
                               clock=clock)

        def pdhg():
            lane = _Lane("pdhg", recorder, shared, clock)
            ws = _WorkingSet(op, geo, self.penalty, self.groups, kind, par,
                             bool(self.settings["working_set"]))
            ws.start(np.zeros((M + 1, K)), np.zeros((L, K)), tol, max_iter, deadline,
                     self.settings, lane, clock=clock)
            return lane, ws

        first = PORTFOLIO_FIRST_SLICE
        predicted = _ipm_predicted(op, geo)
        if predicted <= PORTFOLIO_IPM_MAX_S:  # the interior point in PDHG's place
            lane = _Lane("ipm", recorder, shared, clock, extend=PORTFOLIO_EXTEND_IPM,
                         leads=PORTFOLIO_IPM_FIRST)
            second = (lane, _interior_point(op, geo, kind, par, tol, max_iter, deadline,
                                            lane.engine_record, clock=clock))
            first = max(min(first, PORTFOLIO_IPM_FIRST_SHARE * predicted),
                        PORTFOLIO_IPM_HEAD * predicted)
        else:
            second = pdhg()
        lanes = [(cg_lane, cg), second]
        if geo.name == "l12" and geo.group_shape[1] > L12_CG_MAX_GROUP:
            lanes.reverse()  # PDHG first (see L12_CG_MAX_GROUP_WIDE)
        used = list(lanes)
        allot = max(float(first), 1e-3)
        done = None
        while done is None and not all(eng.finished for _, eng in lanes):
            # the engine nearer to tol first: it is likelier to finish within its turn, before
            # the other spends the new allotment (_turn_order)
            lanes.sort(key=_turn_order(tol))
            for i, (lane, eng) in enumerate(lanes):
                target = allot
                if lane.name == "pdhg" and lanes[0][0] is cg_lane:
                    target = self._slow_target(lane, cg_lane, tol, allot)
                if eng.finished or lane.spent >= target or WALL.past(deadline):
                    continue
                if not lane.history and lane is not cg_lane:  # a first turn in two halves: its
                    lane.run(eng, clock.now() + 0.5 * target - lane.spent)  # rate known at its end
                if not eng.finished:
                    lane.run(eng, clock.now() + target - lane.spent)
                cap = PORTFOLIO_EXTEND_CAP * allot
                while not (eng.finished or WALL.past(deadline)) and lane.spent < cap:
                    left = lane.predicted(tol)  # near tol and falling fast: the turn goes on
                    if not left <= lane.extend * lane.spent:
                        break
                    lane.run(eng, clock.now() + min(max(left, lane.spent), cap - lane.spent))
                if eng.converged:
                    done = lane, eng
                    break
                if eng.finished and lane.name == "ipm":  # it stalled: PDHG takes its place
                    lanes[i] = pdhg()
                    used.append(lanes[i])
            if WALL.past(deadline):
                break
            allot *= 2.0
        if done is None:  # neither met tol: the smaller certified gap
            tried = [(lane, eng) for lane, eng in used if eng.best is not None]
            done = min(tried, key=lambda le: le[1].best.rel_gap) if tried else lanes[0]
        lane, eng = done
        n_iter = eng.rounds if eng is cg else eng.total
        self.settings.update(engine=lane.name,
                             engine_seconds={ln.name: ln.wall for ln, _ in used},
                             engine_work={ln.name: ln.spent for ln, _ in used})
        pdhg_engines = [e for ln, e in used if ln.name == "pdhg"]
        if pdhg_engines:
            self.settings["working_set"] = pdhg_engines[0].used
        best = eng.best
        if best is None:  # no engine had a turn (the deadline passed first): X = 0's certificate
            best = _full_gap(op, geo, kind, par, eng.X, eng.Y)
        return recorder.result(kind, eng.X, eng.Y, best, n_iter, eng.converged, self.settings)


class _WorkingSet:
    """PDHG on growing sets of feature units (blocks or features) until the full problem's gap meets tol.

    Parameters
    ----------
    op : MulticlassOperator
    geo : Penalty
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
        self.compiled = None  # whether the compiled steps are available: known at the first run
        L, M = op.Phi.shape
        self.M = M
        self.n_units = geo.group_shape[0] if geo.layout == "blocks" else M
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
        op_s.meter = op.meter
        geo_s = self.geo if full else make_penalty(self.penalty, self.groups, len(cols), K)
        return op_s, _Problem(op_s, geo_s, self.kind, self.par, precondition, self.compiled)

    def run(self, X, Y, tol, max_iter, deadline, settings, recorder):
        """PDHG on the working set, grown until the full gap meets ``tol``, ``max_iter``
        iterations are spent, or the deadline passes.

        Returns
        -------
        X (M + 1, K), Y (L, K), best : GapResult of the full problem, total : int, converged : bool
        """
        self.start(X, Y, tol, max_iter, deadline, settings, recorder)
        self.advance(deadline)
        return self.X, self.Y, self.best, self.total, self.converged

    def start(self, X, Y, tol, max_iter, deadline, settings, recorder, clock=None):
        """Set the loop's start point and limits (:meth:`run`'s arguments) without running it;
        ``clock`` is that of :meth:`advance`'s ``until`` (default: the wall clock)."""
        self.X, self.Y, self.tol, self.max_iter = X, Y, tol, int(max_iter)
        self.deadline, self.settings, self.recorder = deadline, settings, recorder
        self.clock = WALL if clock is None else clock
        self.omega = self.best = self._current = None
        self.total = 0
        self.converged = self.finished = False

    def advance(self, until):
        """Run the loop until :attr:`finished` (converged, ``max_iter``, the deadline, or the
        full problem stopped) or :attr:`clock` passes ``until`` (None: never): PDHG then
        pauses after its iteration and a later call goes on from its state (the Halpern
        iterate and anchor, as if it had not stopped) on the same working set."""
        M, K, kind, par = self.M, self.op.n_classes, self.kind, self.par
        tol, recorder = self.tol, self.recorder
        if self.compiled is None:
            # the compiled steps: loaded once per process (already, before the solve's clock,
            # by op.prepare() for problems of at least MIN_SIZE weights), here when PDHG first
            # runs, so that a solve that PDHG never joins does not pay for it; off the clock
            self.compiled = recorder.off_clock(load_kernels)
        while not self.finished:
            cols = _unit_columns(self.geo, self.units)
            full = len(cols) == M
            rows = np.append(cols, M)  # restricted weights and the biases
            if self._current is None:  # the restricted problem (its norm) once per working set
                self._current = self.restricted(cols, full, self.settings["precondition"])
                self._resume = {}  # PDHG's state when paused, for the next call on this set
            op_s, prob = self._current
            if self.omega is None:
                # dual scale / primal scale at the first guess
                ydual = par if kind == "reg" else 1.0
                self.omega = ydual * prob.norm
            best = self.best
            inner_tol = tol if full else max(0.5 * tol, 0.3 * (best.rel_gap if best is not None else 1.0))
            on_check = _CheckHook(recorder, self.total, rows, full, (M + 1, K))
            Xs, self.Y, self.omega, nit, gr, reason = _pdhg(
                prob, self.X[rows], self.Y, self.omega, inner_tol, self.max_iter - self.total, until,
                self.settings, on_check, resume=self._resume, clock=self.clock, deadline=self.deadline)
            self.total += nit
            recorder.n_done = self.total
            X = np.zeros((M + 1, K))
            X[rows] = Xs
            self.X = X
            if full:
                best = gr
            else:  # the full problem's gap (T X is the restricted one's: X is 0 off the set)
                best = _full_gap(self.op, self.geo, kind, par, X, self.Y, TX=op_s.T(Xs))
            self.best = best
            recorder.record(best, True, X.copy() if recorder.trace else None)
            if best.rel_gap <= tol:
                self.converged = self.finished = True
            elif self.total >= self.max_iter:
                self.finished = True
            elif reason == "time":  # paused at ``until``, or stopped at the deadline
                self.finished = WALL.past(self.deadline)
                break
            elif full:
                self.finished = True
            else:
                self.grow(self.Y)
                self._current = None

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

    def __call__(self, Xs, Yc, gr, n_iter):
        self.recorder.n_done = self.n_done + n_iter
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
        of column generation, or on the sweeps over the samples (dcd); for
        the portfolio, on each engine's own count.
    max_time : float, optional
        Wall-clock cap in seconds.
    trace : bool
        Record the certificate history in ``result.trace``.
    reference : ndarray (M+1, K), optional
        With ``trace``, also record ``rel_dist`` = ||X_i - ref|| / ||ref||.
    **options
        Override :data:`DEFAULTS`: inner ("auto"; "cg": column generation
        with an LP master, l1, l12 and l1inf; "ipm": interior point on the whole
        LP, l1 and l1inf; "qp": dual QP, l2 only; "dcd": dual coordinate descent,
        l2 only; "pdhg"; "portfolio": "cg" and "pdhg" (or "ipm") in turns, l1, l12
        and l1inf; see the module docstring), restart
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
