"""The clocks by which the accelerated engines pause: wall time, or counted work.

An engine run alone (``inner="cg"``, ``"pdhg"``) pauses on the wall clock
(:class:`WallClock`). The engine portfolio (``inner="portfolio"``) gives its
two engines turns on a :class:`WorkClock` instead: the work each has done,
counted from what it did (products with ``Phi`` by their multiply-adds, PDHG
iterations, column generation rounds, and the simplex and interior-point
iterations HiGHS reports for the master LPs, priced by the master's size) and
priced in seconds of a reference machine. Which engine runs when, and so
which of the optimal points of a degenerate problem the fit returns, then
no longer depends on the machine's speed or load (on the wall clock, three
runs of one E4 job gave three certified optimal points with different test
errors: the README's "work clock" paragraph).

The prices below are least-squares fits to the times of the engines'
operations on the development machine, one BLAS thread
(``benchmarks/calibrate_work_clock.py``: each engine alone on
``benchmarks/bench_engines.py``'s problems and MNIST at L = 5000). Over a
whole run of one engine the counted seconds were 0.64 to 1.19 of the wall
seconds in the same benchmark's run on this version (column generation
over-counted on MNIST and digits, under-counted on the dense noisy problems:
its simplex iterations are the least regular part; the README's "work clock"
paragraph); a mispriced engine gets that much more or less of the
portfolio's time, never a different certificate. Wall time still bounds a
fit through ``max_time``.
"""

import math
import time

from .ipm import iteration_madds

__all__ = ["WALL", "WallClock", "WorkClock", "pdhg_iteration_seconds", "simplex_iteration_seconds"]

#: seconds per multiply-add of a product with Phi (stored entries x columns) ...
PRODUCT_S = 1.02e-10
#: ... plus this per product (the call and the shift by the true class)
PRODUCT_CALL_S = 2.81e-6
#: a PDHG iteration besides its two products: a fixed part, per entry of the (L, K) dual and
#: of the (M + 1, K) primal arrays, and hinge-con's sublevel-set dual step
PDHG_ITER_S = 1.24e-4
PDHG_DUAL_ENTRY_S = 2.83e-8
PDHG_PRIMAL_ENTRY_S = 1.79e-8
PDHG_CON_S = 1.91e-4
#: a round of the column generation besides its products and master LP (pricing, the master
#: point, the certificate's bookkeeping): a fixed part and per entry of the (L, K) arrays
ROUND_S = 5.2e-3
ROUND_ENTRY_S = 6.8e-7
#: a master LP's simplex iteration: exp(c0) nnz^a rows^b cols^c seconds (HiGHS' primal or dual
#: simplex, warm-started; least squares on the logarithms of the time per iteration of 123
#: solves of at least 100 iterations: a factor of 1.65 off (standard deviation), at most 4.1)
SIMPLEX_LOG = (-18.646, 0.843, -0.348, 0.431)
#: ... and an interior-point iteration, crossover included (48 solves: 1.26, at most 1.6)
IPM_LOG = (-15.737, 1.463, -0.655, -0.076)
#: an iteration of the dense interior-point method (:mod:`.ipm`): a fixed part and per
#: multiply-add of its normal matrix and factor (:func:`.ipm.iteration_madds`)
DENSE_IPM_ITER_S = 2.0e-3
DENSE_IPM_MADD_S = 7.0e-11
#: ... and per product pair of its sparse atom columns' part of the normal matrix (sum over
#: the columns of their non-zeros squared; scipy's sparse product): on a random master of 900
#: rows and 2500 atoms of density 2 % (0.85 million such pairs, 0.87 million with the base
#: columns), 17.2 ms in the development run this price was taken from, 16.6 ms on a fresh clone
#: of e382613 (/work/notes/s47/breakeven.py in issue 16's notes): 1.9-2.0e-8 s a pair (the
#: price below came from a rougher count of the pairs, 0.82 million)
DENSE_IPM_PAIR_S = 2.1e-8
#: an iteration of the interior point on the whole LP (:mod:`.hinge_ipm`) besides its
#: products: a fixed part, per multiply-add (:func:`.hinge_ipm.iteration_madds`), per entry of
#: its L(K-1)-square matrix S and per weight (``calibrate_work_clock.py --ipm-only``: the
#: first 12 iterations of 33 runs on dense noisy problems of 30-400 samples, 300-7129
#: features, 3-10 classes, l1 and l1,inf with blocks of 10 and across classes; fitted on
#: 7240435, whose S is assembled into the array of the last iteration and factored in place
#: and whose solves take one substitution each way, as here; the README gives the same
#: command's fit on this version and on the code before, whose prices, fitted on 121a724,
#: were 2.22e-3, 6.44e-11, 1.48e-8, 2.84e-7)
HINGE_IPM_ITER_S = 2.06e-3
HINGE_IPM_MADD_S = 5.65e-11
HINGE_IPM_ENTRY_S = 8.44e-9
HINGE_IPM_WEIGHT_S = 3.09e-7


def _power_law(coef, nnz, rows, cols):
    """``exp(c0) nnz^a rows^b cols^c`` for ``coef = (c0, a, b, c)``."""
    c0, a, b, c = coef
    return math.exp(c0 + a * math.log(max(nnz, 1)) + b * math.log(max(rows, 1))
                    + c * math.log(max(cols, 1)))


def pdhg_iteration_seconds(L, M, K, con):
    """The price of a PDHG iteration on an (L, M) problem with K classes, besides its
    products (``con``: hinge-con's dual step)."""
    return (PDHG_ITER_S + PDHG_DUAL_ENTRY_S * L * K + PDHG_PRIMAL_ENTRY_S * (M + 1) * K
            + (PDHG_CON_S if con else 0.0))


def simplex_iteration_seconds(rows, cols, nnz):
    """The price of one simplex iteration on a master LP of this size."""
    return _power_law(SIMPLEX_LOG, nnz, rows, cols)


class WallClock:
    """``time.perf_counter()``; the charges are ignored (an engine run alone). :data:`WALL` is
    one (it holds no state): ``WALL.past(deadline)`` for a wall-clock deadline."""

    counted = False

    @staticmethod
    def now():
        return time.perf_counter()

    def past(self, t):
        """Whether the clock is past ``t`` (None: never)."""
        return t is not None and self.now() > t

    def charge(self, seconds):
        pass

    def product(self, madds):
        pass

    def lp(self, simplex, ipm, rows, cols, nnz):
        pass

    def interior(self, iterations, rows, dense_cols, sparse_pairs=0):
        pass

    def round(self, L, K):
        pass


class WorkClock(WallClock):
    """The work done so far, priced in seconds of the reference machine (module docstring).

    Attributes
    ----------
    seconds : float
        The counted seconds so far (:meth:`now`).
    """

    counted = True

    def __init__(self):
        self.seconds = 0.0

    def now(self):
        return self.seconds

    def charge(self, seconds):
        """Add ``seconds`` of work."""
        self.seconds += seconds

    def product(self, madds):
        """A product with Phi of ``madds`` multiply-adds (a :class:`MulticlassOperator`'s
        ``meter``)."""
        self.seconds += PRODUCT_CALL_S + PRODUCT_S * madds

    def lp(self, simplex, ipm, rows, cols, nnz):
        """A master LP solve: ``simplex`` and ``ipm`` iterations (HiGHS' counts) on a
        ``rows`` x ``cols`` model with ``nnz`` non-zeros."""
        self.seconds += (simplex * simplex_iteration_seconds(rows, cols, nnz)
                         + ipm * _power_law(IPM_LOG, nnz, rows, cols))

    def interior(self, iterations, rows, dense_cols, sparse_pairs=0):
        """A master LP solved by the dense interior-point method: ``iterations`` on ``rows``
        rows with ``dense_cols`` dense columns, and sparse ones of ``sparse_pairs`` product
        pairs (their non-zeros squared, summed)."""
        self.seconds += iterations * (DENSE_IPM_ITER_S
                                      + DENSE_IPM_MADD_S * iteration_madds(rows, dense_cols)
                                      + DENSE_IPM_PAIR_S * sparse_pairs)

    def round(self, L, K):
        """A column generation round's work besides its products and master LP."""
        self.seconds += ROUND_S + ROUND_ENTRY_S * L * K


#: the wall clock (:class:`WallClock` holds no state, so one serves every engine)
WALL = WallClock()
