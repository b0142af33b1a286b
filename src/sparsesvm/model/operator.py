"""The linear operator T of the multiclass hinge loss, its adjoint and norm.

For features ``Phi`` (L, M) and labels ``z`` (L,), with parameters ``X``
(M + 1, K) whose last row holds the biases ``b``:

    S = Phi @ X[:-1] + b                      scores, (L, K)
    (T X)[l, k] = S[l, k] - S[l, z_l]         (so (T X)[l, z_l] = 0)
    T^T Y = [Phi^T G; 1^T G],  G = Y except G[l, z_l] = Y[l, z_l] - sum_k Y[l, k]

The bias is handled as a separate row (never by augmenting Phi with a column
of ones), and a CSR ``Phi`` is never densified.
"""

from __future__ import annotations

import copy
import numbers
import os
import time

import numpy as np

from .._sparse import issparse

__all__ = ["MulticlassOperator", "DenseProducts", "SparseProducts", "power_norm", "check_double",
           "EXACT_NORM_MAX_SIZE", "MAX_NORM", "PRODUCT_DTYPES", "TUNE_MIN_SIZE",
           "SPARSE_FORWARD_MAX_BYTES", "SPARSE_TUNE_DENSITY"]

#: ``MulticlassOperator.norm`` computes ``||T||`` exactly (eigenvalues of the
#: (L K) x (L K) matrix ``T T^T``) up to this ``n_samples * n_classes``, by power
#: iteration above (the exact form is cheaper up to about this size).
EXACT_NORM_MAX_SIZE = 600
#: Largest ``||T||`` the solvers can use: their step sizes and Lipschitz constants hold
#: ``||T||**2`` times ``1/alpha``, which must stay finite in float64 (max ~1.8e308).
MAX_NORM = 1e150
#: Precisions of the products with ``Phi`` that :class:`MulticlassOperator` offers
#: (its ``dtype``): float64 (the default) or float32.
PRODUCT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
#: :class:`DenseProducts` times the two BLAS orientations of a product when
#: ``n_samples * n_features * n_classes`` is at least this (below, a product takes
#: microseconds and the direct orientation is kept without timing).
TUNE_MIN_SIZE = 500_000
#: :class:`DenseProducts` considers the sparse forward product (a compiled loop over the
#: non-zero weights, on a row-major copy of ``Phi^T``) for a ``Phi`` of at most this many bytes
#: (the copy doubles its memory).
SPARSE_FORWARD_MAX_BYTES = 256 * 2**20
#: The weights' density at which :meth:`DenseProducts.tune_sparse` times the sparse forward product.
SPARSE_TUNE_DENSITY = 0.25
_SPARSE_TUNE_RUN = 32  # rows per run of zeros (or non-zeros) in that timing


class DenseProducts:
    """``Phi @ W`` and ``Phi.T @ G`` for a dense C-ordered float64 ``Phi``, each in the
    faster of its two BLAS orientations.

    BLAS can compute either product in two orientations: ``Phi @ W`` directly or as
    ``(W^T Phi^T)^T``, ``Phi^T G`` directly or as ``(G^T Phi)^T`` (the small transposed
    operand and the result copied to C order). The work is the same, the speed is
    not, and which is faster depends on the shape and the BLAS: with one thread of
    OpenBLAS at MNIST's M = 3969, K = 10 the transposed adjoint is faster at every
    training size and the transposed forward product slower at L = 30, faster from
    L = 500 (README, "The library on its own"; ``python benchmarks/bench_products.py``).
    So :meth:`tune` times both orientations of each product on this ``Phi`` (the least
    of three calls each, after one call that is not timed) and keeps the faster. The
    solvers call it before their clock starts (:meth:`MulticlassOperator.prepare`);
    otherwise the first product does.

    The two orientations compute the same sums, in BLAS' own order: with OpenBLAS on
    one thread bitwise the same results at MNIST's shapes, results that differ in the
    last bit (relative 1e-16) at some others (``bench_products.py`` says which).

    Sparse weights: the paper's sparse penalties leave most of ``W`` at exactly 0 (E2's
    l1,inf jobs: 66-78 % of the weights at their support), and ``Phi @ W`` needs only
    ``Phi[:, j] * W[j, k]`` for the non-zero ones. With numba, :meth:`tune_sparse` times a
    compiled product over the non-zero weights (:func:`sparsesvm.solvers._kernels_jit.sparse_forward`,
    on a row-major copy of ``Phi^T``) at a density of :data:`SPARSE_TUNE_DENSITY`, and,
    where ``skip_zero_weights`` is set, :meth:`forward` uses it whenever ``W`` has few
    enough non-zeros for it to beat the faster BLAS orientation (its time grows about in
    proportion to the non-zeros: ``sparse_max_nnz``, with a 10 % margin). Its sums run in
    another order than BLAS': results differ from the dense product's in the last bits.
    The primal-dual solvers and logit's forward-backward set it
    (:meth:`MulticlassOperator.prepare`), whose iterates such differences leave where they
    are; FISTA's adaptive restarts are discrete decisions that they can move (README, "The
    library on its own"), so FISTA (square, logit's ``scheme="fista"``) keeps BLAS' product.
    The count of non-zeros that decides, in every product, is compiled too
    (:func:`sparsesvm.solvers._kernels.nonzero_count`: numpy's count of a float64 array is
    slow next to the product it chooses at E2's L = 30; README, "The library on its own").

    Sparse duals: likewise ``Phi^T G`` needs only ``G[l, k] * Phi[l, :]`` for the non-zero
    entries of ``G``, and at the supports of the primal-dual solvers most are 0 (a sample
    whose dual row holds only its true class has a zero row of ``G``; E2's hinge jobs:
    62-81 % zeros). :meth:`tune_sparse` times the compiled adjoint over them
    (:func:`sparsesvm.solvers._kernels_jit.sparse_adjoint`) with no non-zero and at
    :data:`SPARSE_TUNE_DENSITY`, and, with ``skip_zero_weights``, :meth:`adjoint` takes
    it whenever ``G`` has at most ``sparse_adjoint_max_nnz`` non-zeros (the line through
    the two timings below 0.9 times the faster BLAS orientation). Its sums, too, run in
    another order than BLAS'.

    Parameters
    ----------
    Phi : ndarray of float64, shape (L, M), C-contiguous
    n_classes : int
        ``K``, the number of columns of ``W`` and ``G`` (the shape that is timed).

    Attributes
    ----------
    transposed : dict or None
        ``{"forward": bool, "adjoint": bool}``, which product runs transposed;
        None until :meth:`tune` has run.
    timings : dict
        Seconds of each orientation measured by :meth:`tune` (empty when not timed), and
        of the sparse forward product at :data:`SPARSE_TUNE_DENSITY` (``"sparse_forward"``)
        and of the sparse adjoint empty and at that density (``"sparse_adjoint"``).
    sparse_max_nnz : int
        :meth:`forward` skips zero weights when ``W`` has at most this many non-zeros (0:
        never; set by :meth:`tune_sparse`) and ``skip_zero_weights`` is set.
    sparse_adjoint_max_nnz : int
        :meth:`adjoint` skips the zero entries of ``G`` when it has at most this many
        non-zeros (0: never; set by :meth:`tune_sparse`) and ``skip_zero_weights`` is set.
    skip_zero_weights : bool
        Whether :meth:`forward` and :meth:`adjoint` may take the sparse products (default
        False).
    """

    def __init__(self, Phi, n_classes):
        self.Phi = Phi
        self.n_classes = int(n_classes)
        self.transposed = None
        self.timings = {}
        self.sparse_max_nnz = 0
        self.skip_zero_weights = False
        self._PhiT = None  # row-major Phi^T and the compiled kernel of forward_sparse
        self._sparse_kernel = None
        self.sparse_adjoint_max_nnz = 0
        self._sparse_tuned = False  # tune_sparse has run
        self._adjoint_kernel = None  # the compiled kernel of adjoint_sparse and its work array
        self._bufT = None
        self._count = np.count_nonzero  # the compiled count once tune_sparse loads the kernels
        #: the compiled label kernels of ``T`` and ``T^T`` (MulticlassOperator), loaded by
        #: load_labels; None: numpy's operations (the same bits)
        self.labels = None

    def tune(self):
        """Choose each product's orientation (timed once; a no-op afterwards).

        With ``SPARSESVM_TUNE=0`` in the environment nothing is timed: the direct
        orientations, and no product over the non-zero weights (:meth:`tune_sparse`), so
        that a fit's arithmetic does not depend on timings (bitwise the same results from
        run to run on one machine, at some cost in speed).
        """
        if self.transposed is not None:
            return self.transposed
        L, M = self.Phi.shape
        K = self.n_classes
        if L * M * K < TUNE_MIN_SIZE or not _tuning():
            self.transposed = {"forward": False, "adjoint": False}
            return self.transposed
        rng = np.random.default_rng(0)
        W = rng.standard_normal((M, K))
        G = rng.standard_normal((L, K))
        out = np.empty((M, K))
        calls = {"forward": lambda t: self.forward(W, t), "adjoint": lambda t: self.adjoint(G, out, t)}
        choice = {}
        for name, call in calls.items():
            seconds = {}
            for transposed in (False, True):
                seconds[transposed] = _least_seconds(call, transposed)
            self.timings[name] = {"direct": seconds[False], "transposed": seconds[True]}
            choice[name] = bool(seconds[True] < seconds[False])
        self.transposed = choice
        return choice

    def tune_sparse(self):
        """Time the products over the non-zero weights and the non-zero entries of ``G``
        once; set ``sparse_max_nnz`` and ``sparse_adjoint_max_nnz``.

        After :meth:`tune` (called here), from its size threshold on: each compiled product
        against the faster dense orientation (:meth:`_tune_sparse_forward`,
        :meth:`_tune_sparse_adjoint`). Nothing when numba is missing, ``Phi`` is below
        :data:`TUNE_MIN_SIZE` entries (times K), with fewer weights than the compiled
        kernels' :data:`sparsesvm.solvers._kernels.MIN_SIZE`, with ``SPARSESVM_TUNE=0``, or
        when it was timed already; no forward product above
        :data:`SPARSE_FORWARD_MAX_BYTES` (its copy of ``Phi^T``). Separate from :meth:`tune`
        so that a solver that never skips zero weights does not load the compiled kernels
        for it.
        """
        self.tune()
        if self._sparse_tuned or "forward" not in self.timings:
            return  # timed already, or Phi below TUNE_MIN_SIZE, or SPARSESVM_TUNE=0
        self._sparse_tuned = True
        _kernels = _kernels_module()
        if (self.Phi.shape[1] + 1) * self.n_classes < _kernels.MIN_SIZE:
            return  # too few weights for the compiled kernels to be loaded at all
        count = _kernels.nonzero_count()
        if count is None:
            return  # no numba
        self._count = count
        rng = np.random.default_rng(1)
        if self.Phi.nbytes <= SPARSE_FORWARD_MAX_BYTES:
            self._tune_sparse_forward(rng)
        self._tune_sparse_adjoint(rng)

    def load_labels(self):
        """Load the compiled label kernels of ``T`` and ``T^T`` (:attr:`labels`) when numba is
        installed and the weights number at least :data:`sparsesvm.solvers._kernels.MIN_SIZE`
        (below, numpy's operations cost no more). They give numpy's bits, so they depend on
        no timing (``SPARSESVM_TUNE=0`` too). A no-op once loaded.
        """
        if self.labels is None:
            _kernels = _kernels_module()
            if (self.Phi.shape[1] + 1) * self.n_classes >= _kernels.MIN_SIZE:
                self.labels = _kernels.label_kernels()

    def _tune_sparse_forward(self, rng):
        """Time the product over the non-zero weights at :data:`SPARSE_TUNE_DENSITY`; set
        ``sparse_max_nnz`` (its time taken as proportional to the non-zeros, with a 10 %
        margin against the faster BLAS orientation)."""
        kernel = self._sparse_kernel = _kernels_module().sparse_forward()
        if kernel is None:
            return
        M, K = self.Phi.shape[1], self.n_classes
        dense_seconds = min(self.timings["forward"].values())
        PhiT = self.row_major_t()
        # zeros in runs of rows within a class, as group penalties leave them (an entrywise
        # random pattern would time mispredicted branches that such weights do not cause)
        runs = rng.random((-(-M // _SPARSE_TUNE_RUN), 1, K)) < SPARSE_TUNE_DENSITY
        mask = np.broadcast_to(runs, (runs.shape[0], _SPARSE_TUNE_RUN, K)).reshape(-1, K)[:M]
        Ws = np.ascontiguousarray(rng.standard_normal((M, K)) * mask)
        outT = np.empty((K, self.Phi.shape[0]))
        seconds = _least_seconds(kernel, PhiT, Ws, outT, repeats=5)
        nnz = np.count_nonzero(Ws)
        self.sparse_max_nnz = int(0.9 * nnz * dense_seconds / max(seconds, 1e-9))
        self.timings["sparse_forward"] = {"seconds": seconds, "nnz": int(nnz),
                                          "max_nnz": self.sparse_max_nnz}
        if self.sparse_max_nnz == 0:
            self._PhiT = None

    def _tune_sparse_adjoint(self, rng):
        """Time the adjoint over the non-zero entries of ``G``; set ``sparse_adjoint_max_nnz``.

        Its time is about a constant (zeroing and transposing the (M, K) result) plus a
        cost per non-zero (a pass over a row of ``Phi``): timed with no non-zero and at
        :data:`SPARSE_TUNE_DENSITY` (entries drawn at random), the line through the two
        says up to which count it beats 0.9 times the faster BLAS orientation.
        """
        kernel = _kernels_module().sparse_adjoint()
        if kernel is None:
            return
        self._adjoint_kernel = kernel
        L, M = self.Phi.shape
        K = self.n_classes
        dense_seconds = min(self.timings["adjoint"].values())
        G = rng.standard_normal((L, K)) * (rng.random((L, K)) < SPARSE_TUNE_DENSITY)
        out = np.empty((M, K))
        empty = _least_seconds(self.adjoint_sparse, np.zeros((L, K)), out, repeats=5)
        seconds = _least_seconds(self.adjoint_sparse, G, out, repeats=5)
        nnz = int(np.count_nonzero(G))
        budget = 0.9 * dense_seconds - empty
        if budget <= 0:
            limit = 0
        elif seconds <= empty or nnz == 0:
            limit = L * K
        else:
            limit = min(L * K, int(budget * nnz / (seconds - empty)))
        self.sparse_adjoint_max_nnz = limit
        self.timings["sparse_adjoint"] = {"seconds_empty": empty, "seconds": seconds, "nnz": nnz,
                                          "max_nnz": limit}
        if limit == 0:
            self._adjoint_kernel = self._bufT = None

    def row_major_t(self):
        """``Phi^T`` as a C-ordered (M, L) array, made on the first call and kept (the
        compiled product over the non-zero weights reads it; the accelerated solver's column
        generation multiplies its sparse atoms by it)."""
        if self._PhiT is None:
            self._PhiT = np.ascontiguousarray(self.Phi.T)
        return self._PhiT

    def forward_sparse(self, W):
        """``Phi @ W`` over the non-zero entries of ``W`` (compiled: numba needed).

        The kernel and the row-major copy of ``Phi^T`` are looked up and made once per
        operator (by :meth:`tune_sparse`, or by the first call), not in every iteration."""
        if self._sparse_kernel is None:
            self._sparse_kernel = _kernels_module().sparse_forward()
        outT = np.empty((self.n_classes, self.Phi.shape[0]))
        self._sparse_kernel(self.row_major_t(), np.ascontiguousarray(W, dtype=np.float64), outT)
        return np.ascontiguousarray(outT.T)

    def adjoint_sparse(self, G, out):
        """``Phi.T @ G`` over the non-zero entries of ``G``, written into ``out`` ((M, K),
        C-ordered float64; compiled: numba needed).

        The kernel is looked up, and its (K, M) work array made, once per operator."""
        if self._adjoint_kernel is None:
            self._adjoint_kernel = _kernels_module().sparse_adjoint()
        if self._bufT is None:
            self._bufT = np.empty((self.n_classes, self.Phi.shape[1]))
        self._adjoint_kernel(self.Phi, np.ascontiguousarray(G, dtype=np.float64), self._bufT, out)
        return out

    def forward(self, W, transposed=None):
        """``Phi @ W`` as a new C-ordered (L, K) array; ``W``: (M, K) float64.

        ``transposed``: None for the product :meth:`tune` chose (with
        ``skip_zero_weights``, the sparse one when ``W`` has at most ``sparse_max_nnz``
        non-zeros; else the faster orientation), else False (direct) or True
        (``(W^T Phi^T)^T``)."""
        if transposed is None:
            transposed = self.tune()["forward"]
            if (self.skip_zero_weights and self.sparse_max_nnz
                    and self._count(np.ascontiguousarray(W, dtype=np.float64)) <= self.sparse_max_nnz):
                return self.forward_sparse(W)
        if not transposed:
            return self.Phi @ W
        return np.ascontiguousarray((np.ascontiguousarray(W.T) @ self.Phi.T).T)

    def adjoint(self, G, out, transposed=None):
        """``Phi.T @ G`` written into ``out`` ((M, K) float64); ``G``: (L, K).

        ``transposed``: None for the orientation :meth:`tune` chose, else False (direct)
        or True (``(G^T Phi)^T``)."""
        if transposed is None:
            transposed = self.tune()["adjoint"]
            if (self.skip_zero_weights and self.sparse_adjoint_max_nnz and out.flags.c_contiguous
                    and self._count(np.ascontiguousarray(G, dtype=np.float64)) <= self.sparse_adjoint_max_nnz):
                return self.adjoint_sparse(G, out)
        if not transposed:
            return np.matmul(self.Phi.T, G, out=out)
        out[...] = (np.ascontiguousarray(G.T) @ self.Phi).T
        return out


class SparseProducts:
    """``[Phi 1] @ X`` and ``[Phi^T; 1^T] @ G`` for a sparse float64 ``Phi``: scipy's CSR
    products, or compiled ones where :meth:`tune` measures them faster.

    The compiled products (:func:`sparsesvm.solvers._kernels.sparse_products`, numba
    needed) work on the CSR arrays of ``[Phi^T; 1^T]``, i.e. the compressed columns of
    ``[Phi 1]``: the scores by those columns, skipping the rows of ``X`` that are 0 (most
    weight rows of a sparse solution), and the adjoint by the rows of ``[Phi^T; 1^T]``
    without scipy's zero-filled temporary. Both sum their terms in scipy's order with no
    fast-math flag: **bitwise scipy's results**, so the choice changes only the time. They are
    not faster everywhere (a pass over the rows of ``X`` and a loop per feature: with one or
    two stored entries per feature, or a small K, scipy's win; README, "The library on its
    own"), so :meth:`tune` times each against scipy's once per operator (the least of three
    calls each, after one that is not timed; the scores with a quarter of the rows of ``X``
    non-zero, :data:`SPARSE_TUNE_DENSITY`) and keeps the faster.
    :meth:`MulticlassOperator.prepare` calls it before a solver's clock starts.

    Parameters
    ----------
    Phi1 : scipy.sparse CSR matrix of float64, shape (L, M + 1)
        ``[Phi 1]``.
    PhiT1 : scipy.sparse CSR matrix of float64, shape (M + 1, L)
        ``[Phi^T; 1^T]``, sorted indices (as scipy's transpose and ``tocsr`` leave them).
    n_classes : int
        ``K``, the number of columns of ``X`` and ``G`` (the shape that is timed).

    Attributes
    ----------
    compiled : bool or None
        Whether the compiled products are loaded; None until :meth:`tune` has run, False
        when they cannot be used: numba missing, fewer than
        :data:`sparsesvm.solvers._kernels.MIN_SIZE` weights, or ``SPARSESVM_TUNE=0``
        (nothing timed: scipy's products).
    use : dict
        ``{"forward": bool, "adjoint": bool}``, which product runs compiled.
    timings : dict
        Seconds of each implementation of each product measured by :meth:`tune`
        (``{"forward": {"scipy": s, "compiled": s}, "adjoint": ...}``; empty when not timed).
    """

    def __init__(self, Phi1, PhiT1, n_classes):
        self.Phi1, self.PhiT1 = Phi1, PhiT1
        self.n_classes = int(n_classes)
        self.compiled = None
        self.use = {"forward": False, "adjoint": False}
        self.timings = {}
        self._kernels = None  # (scores kernel, adjoint kernel), once tune() loads them
        self._arrays = None  # and the CSR arrays of PhiT1 they take

    def tune(self):
        """Load the compiled products and time each against scipy's (once; a no-op afterwards).

        Returns
        -------
        dict
            :attr:`use`.
        """
        if self.compiled is not None:
            return self.use
        _kernels = _kernels_module()
        kernels = None
        if self.PhiT1.shape[0] * self.n_classes >= _kernels.MIN_SIZE and _tuning():
            kernels = _kernels.sparse_products()
        self.compiled = kernels is not None
        if not self.compiled:
            return self.use
        A = self.PhiT1
        self._kernels = kernels
        self._arrays = (A.indptr.astype(np.uint64), A.indices.astype(np.uint64),
                        np.ascontiguousarray(A.data, dtype=np.float64))
        rng = np.random.default_rng(0)
        (L, M1), K = self.Phi1.shape, self.n_classes
        X = rng.standard_normal((M1, K)) * (rng.random((M1, 1)) < SPARSE_TUNE_DENSITY)
        G = rng.standard_normal((L, K))
        calls = {"forward": lambda c: self.forward(X, c), "adjoint": lambda c: self.adjoint(G, c)}
        for name, call in calls.items():
            seconds = {c: _least_seconds(call, c) for c in (False, True)}
            self.timings[name] = {"scipy": seconds[False], "compiled": seconds[True]}
            self.use[name] = bool(seconds[True] < seconds[False])
        return self.use

    @property
    def arrays(self):
        """The CSR arrays of ``[Phi^T; 1^T]`` that the compiled products take (uint64
        ``indptr`` and ``indices``, float64 ``data``); None until :meth:`tune` loaded them."""
        return self._arrays

    def _kernel(self, which):
        if self._kernels is None:
            raise RuntimeError("the compiled sparse products are not loaded: call tune() first "
                               "(they need numba; SparseProducts.compiled says whether they are)")
        return self._kernels[which]

    def forward(self, X, compiled=None, rows=None):
        """``[Phi 1] @ X`` as a new C-ordered (L, K) array; ``X``: (M + 1, K) float64.

        ``compiled``: None for the product :meth:`tune` chose, else False (scipy's) or
        True (the compiled one; after :meth:`tune` loaded it). ``rows``: uint8 marks of
        the rows of ``X``, 0 where the row holds zeros (:func:`sparsesvm.solvers._kernels_jit.csr_step`'s),
        which the compiled product skips without reading them (the same bits)."""
        if compiled is None:
            compiled = self.use["forward"]
        if not compiled:
            return np.asarray(self.Phi1 @ X)
        if rows is None:
            rows = _kernels_module().NO_MARKS
        elif rows.dtype != np.uint8 or rows.shape != (X.shape[0],) or not rows.flags.c_contiguous:
            raise ValueError(f"rows must be a contiguous uint8 array of shape ({X.shape[0]},), "
                             f"got {rows.dtype} {rows.shape}")
        S = np.empty((self.Phi1.shape[0], X.shape[1]))
        self._kernel(0)(*self._arrays, np.ascontiguousarray(X), rows, S)
        return S

    def adjoint(self, G, compiled=None):
        """``[Phi^T; 1^T] @ G`` as a new C-ordered (M + 1, K) array; ``G``: (L, K) float64
        C-ordered.

        ``compiled`` as in :meth:`forward`."""
        if compiled is None:
            compiled = self.use["adjoint"]
        if not compiled:
            return np.asarray(self.PhiT1 @ G)
        out = np.empty((self.PhiT1.shape[0], G.shape[1]))
        self._kernel(1)(*self._arrays, G, out)
        return out


def _kernels_module():
    """:mod:`sparsesvm.solvers._kernels`, the compiled kernels (numba optional), imported
    when first needed (the solvers import this module)."""
    from ..solvers import _kernels

    return _kernels


def _tuning():
    """False when ``SPARSESVM_TUNE=0``: :class:`DenseProducts` and :class:`SparseProducts`
    time nothing."""
    return os.environ.get("SPARSESVM_TUNE", "1") != "0"


def _seconds(fn, *args):
    """Wall seconds of one call ``fn(*args)``."""
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _least_seconds(fn, *args, repeats=3):
    """The least of ``repeats`` timed calls ``fn(*args)`` (:func:`_seconds`), after one call
    that is not timed (first touch of the buffers, BLAS' or a kernel's set-up): how every
    timed choice of the products (:class:`DenseProducts`, :class:`SparseProducts`) times its
    candidates."""
    fn(*args)
    return min(_seconds(fn, *args) for _ in range(repeats))


def power_norm(matvec, rmatvec, shape, *, max_iter=200, tol=1e-6, rng=None):
    """Norm ``||A||`` (largest singular value) of a linear map by power iteration on ``A^T A``.

    Parameters
    ----------
    matvec : callable
        ``x -> A x`` for ``x`` of shape ``shape``.
    rmatvec : callable
        ``u -> A^T u``, an array of shape ``shape`` (not modified here).
    shape : tuple of int
        Shape of the domain of A (e.g. ``(M + 1, K)`` for T, ``(M + 1,)`` for a matrix).
    max_iter : int, default=200
        Maximum number of iterations (one ``matvec`` and one ``rmatvec`` each).
    tol : float, default=1e-6
        Stop when the estimate changes by at most ``tol`` times itself.
    rng : None, int or numpy.random.Generator, default=None
        Source of the random start (None: seed 0, reproducible).

    Returns
    -------
    float
        The estimate, a lower bound that increases towards ``||A||``; 0 when
        an iterate falls in the null space of A.

    Notes
    -----
    With ``x`` of unit norm, both ``||A x||`` and ``sqrt(||A^T A x||)`` are
    lower bounds of ``||A||``; the larger one is the estimate, and
    ``x <- A^T A x / ||A^T A x||`` converges to the top right singular vector.
    Callers that need ``tau * sigma * ||A||^2 <= 1`` should keep a small margin
    (e.g. multiply the estimate by 1.01).
    """
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(
        0 if rng is None else rng)
    x = gen.standard_normal(shape)
    x /= np.linalg.norm(x)
    est = 0.0
    for _ in range(max_iter):
        Ax = matvec(x)
        new = float(np.linalg.norm(Ax))
        x = rmatvec(Ax)
        nx = np.linalg.norm(x)
        if nx == 0.0:  # A x = 0: x in the null space (e.g. Phi = 0 and equal biases)
            return 0.0
        x = x / nx
        # sqrt(||A^T A x||) >= ||A x|| for unit x; use the larger one
        new = max(new, float(np.sqrt(nx)))
        if abs(new - est) <= tol * max(new, 1e-300):
            return new
        est = new
    return est


def _check_features(Phi):
    """``Phi`` as C-contiguous float64 or CSR float64 (duplicates summed), checked.

    Parameters
    ----------
    Phi : array_like or scipy.sparse matrix, shape (L, M)

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix, shape (L, M)
    """
    if issparse(Phi):
        import scipy.sparse as sp

        if Phi.ndim != 2:
            raise ValueError(f"Phi must be 2-D, got shape {Phi.shape}")
        if not (np.issubdtype(Phi.dtype, np.floating) or np.issubdtype(Phi.dtype, np.integer)
                or Phi.dtype == bool):
            raise ValueError(f"Phi must be real numeric, got dtype {Phi.dtype}")
        Phi = sp.csr_matrix(Phi, dtype=np.float64)
        if not np.all(np.isfinite(Phi.data)):
            raise ValueError("Phi contains NaN or inf")
        Phi.sum_duplicates()
    else:
        Phi = np.asarray(Phi)
        if Phi.dtype == object or not (
            np.issubdtype(Phi.dtype, np.floating) or np.issubdtype(Phi.dtype, np.integer)
            or Phi.dtype == bool
        ):
            raise ValueError(f"Phi must be real numeric, got dtype {Phi.dtype}")
        if Phi.ndim != 2:
            raise ValueError(f"Phi must be 2-D (n_samples, n_features), got shape {Phi.shape}")
        Phi = np.ascontiguousarray(Phi, dtype=np.float64)
        if not np.all(np.isfinite(Phi)):
            raise ValueError("Phi contains NaN or inf")
    L, M = Phi.shape
    if L < 1 or M < 1:
        raise ValueError(f"Phi must have at least one sample and one feature, got shape {Phi.shape}")
    return Phi


def _check_labels(y_idx, L, K):
    """Class indices as a new int64 array of shape (L,), each in ``0..K-1``."""
    y = np.asarray(y_idx)
    if y.ndim != 1:
        raise ValueError(f"y_idx must be 1-D, got shape {y.shape}")
    if y.shape[0] != L:
        raise ValueError(
            f"y_idx has length {y.shape[0]} but Phi has {L} samples"
        )
    if not np.issubdtype(y.dtype, np.integer):
        if np.issubdtype(y.dtype, np.floating) and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise ValueError(f"y_idx must contain integer class indices, got dtype {y.dtype}")
    y = y.astype(np.int64, copy=True)
    if y.size and (y.min() < 0 or y.max() >= K):
        raise ValueError(
            f"y_idx must lie in 0..{K - 1} (n_classes={K}), got range "
            f"[{y.min()}, {y.max()}]"
        )
    return y


def _as_float64(A, shape, name, shape_name):
    """``A`` as a float64 array of ``shape`` (converted only when needed); ValueError naming it otherwise."""
    A = np.asarray(A)
    if A.shape != shape:
        raise ValueError(f"{name} must have shape {shape_name} = {shape}, got {A.shape}")
    if A.dtype != np.float64:
        A = A.astype(np.float64)
    return A


def _check_dtype(dtype):
    """``dtype`` as one of :data:`PRODUCT_DTYPES`; ValueError naming the choices otherwise."""
    try:
        dt = None if dtype is None else np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or not any(dt == d for d in PRODUCT_DTYPES):
        raise ValueError(f"dtype (the precision of the products with Phi) must be float64 or float32, "
                         f"got {dtype!r}")
    return dt


def check_double(op, owner):
    """Refuse an operator whose products with ``Phi`` are not float64.

    For solvers that compute with ``op`` directly and offer no single precision.

    Parameters
    ----------
    op : MulticlassOperator
    owner : str
        The solver named in the error message.

    Raises
    ------
    ValueError
        If ``op.dtype`` is not float64.
    """
    if op.dtype != np.float64:
        raise ValueError(f"{owner} computes in float64 only; got an operator with {op.dtype} products "
                         "(build it with dtype=numpy.float64, the default)")


class MulticlassOperator:
    """Operator ``T`` of the multiclass hinge loss for features ``Phi``.

    Parameters
    ----------
    Phi : ndarray or scipy.sparse matrix, shape (n_samples, n_features)
        Feature matrix (without the constant column). Dense arrays are used as
        C-contiguous float64; sparse matrices are converted once to CSR
        float64 (never densified).
    y_idx : array_like of int, shape (n_samples,)
        Class index ``z_l`` in ``0 .. n_classes - 1`` of every sample.
    n_classes : int
        Number of classes K >= 2.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Precision of the two products with ``Phi`` in :meth:`T`, :meth:`T_adjoint`
        and :meth:`scores` (see Notes). Everything else is float64.

    Attributes
    ----------
    Phi : ndarray or scipy.sparse.csr_matrix, shape (L, M)
        The stored feature matrix (float64, whatever ``dtype``). For sparse input
        a CSR copy of ``Phi.T`` is kept as well (faster adjoint products).
    dtype : numpy.dtype
        Precision of the products with ``Phi`` (float64 or float32).
    products : DenseProducts or SparseProducts
        The float64 products with ``Phi`` (for sparse ``Phi`` on ``[Phi 1]`` and
        ``[Phi^T; 1^T]``, the biases included), set up by :meth:`prepare`.
    y_idx : ndarray of int64, shape (L,)
    n_samples, n_features, n_classes : int
        L, M, K.
    R : ndarray, shape (L, K)
        Offset r: 1 off the true class, 0 on it (``mu_l = 1``).
    norm_ : float or None
        The last value computed by :meth:`norm`.
    meter : callable or None
        None by default. When set, called after each product with ``Phi`` in
        :meth:`scores` (hence :meth:`T`), :meth:`T_adjoint` and their ``_many`` forms
        with the product's multiply-adds (stored entries of ``Phi`` times the columns
        multiplied): the accelerated solver's engine portfolio counts its work with it
        (:mod:`sparsesvm.solvers.accelerated.clock`).

    Raises
    ------
    ValueError
        If ``Phi`` is not 2-D, is empty, contains NaN/inf or is not numeric;
        if ``y_idx`` has the wrong length, is not integer or is out of range;
        if ``n_classes < 2``; if ``dtype`` is neither float64 nor float32.

    Notes
    -----
    dtype: by default all computations are in float64. A float32 (or integer)
    ``Phi`` is converted to float64 once at construction, so that the products
    inside the solver loop never copy ``Phi``; pass float64 parameters to avoid
    per-call conversions of ``X`` and ``Y`` (arrays of other dtypes are converted).

    With ``dtype=numpy.float32`` a float32 copy of ``Phi`` is stored as well (for
    dense ``Phi`` 1.5 times the memory of the float64 one alone) and the two
    products with it run in float32: ``X[:-1]`` (resp. ``G`` below) is rounded to
    float32 once per product, the float32 product is converted back, and the
    biases, the true-class shift, ``G`` and the bias row ``1^T G`` are float64.
    The results are float64 arrays with the relative accuracy of a float32
    product (about ``1e-7`` times the size of the terms). Everything that is
    not one of these two products stays float64: :meth:`norm`,
    :meth:`exact_norm` and :meth:`gram` use the float64 ``Phi`` (so do the
    solvers' step sizes), and :meth:`double` gives the same operator with
    float64 products, for the objective and the certificate of a returned point.
    For features stored as float32 the float64 ``Phi`` is their exact value, so
    :meth:`double` computes exactly what a ``dtype=numpy.float64`` operator does.

    ``T`` is the composition of ``X -> S = [Phi 1] X`` and the map
    ``S -> S - S[:, z] 1^T`` row by row, i.e. ``(I - 1 e_{z_l}^T)`` on row l,
    whose adjoint is ``(I - e_{z_l} 1^T)``: this gives ``G`` above. Hence
    ``||T|| <= ||I - 1 e_z^T|| * ||[Phi 1]|| = sqrt(K) * ||[Phi 1]||``.
    """

    def __init__(self, Phi, y_idx, n_classes, *, dtype=np.float64):
        dtype = _check_dtype(dtype)
        if isinstance(n_classes, bool) or not isinstance(n_classes, numbers.Integral):
            raise ValueError(f"n_classes must be an integer, got {n_classes!r}")
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {n_classes}")
        K = int(n_classes)

        Phi = _check_features(Phi)
        L, M = Phi.shape
        y = _check_labels(y_idx, L, K)

        self.Phi = Phi
        self._sparse = issparse(Phi)
        # CSR copy of Phi^T: scipy's csc (Phi.T) @ dense product is slower
        # (measured about 1.6x on a News20-shaped problem); costs one more
        # copy of the sparse storage,
        # and, for sparse Phi, with the row of ones of the biases appended
        # ([Phi^T; 1^T] in CSR), so that T^T writes its (M + 1, K) result in one
        # product with no copy; likewise [Phi 1] for the scores.
        if self._sparse:
            import scipy.sparse as sp

            ones = sp.csr_matrix(np.ones((L, 1)))
            self._Phi1 = sp.hstack([Phi, ones], format="csr")
            self._PhiT1 = self._Phi1.T.tocsr()
        else:
            self._Phi1 = self._PhiT1 = None
        self.products = (SparseProducts(self._Phi1, self._PhiT1, K) if self._sparse
                         else DenseProducts(Phi, K))
        self._norm_parent = None  # restrict_features: the operator whose norm this one shares
        self.y_idx = y
        self.n_samples = L
        self.n_features = M
        self.n_classes = K
        self._rows = np.arange(L)
        R = np.ones((L, K))
        R[self._rows, y] = 0.0
        self.R = R
        self.norm_ = None
        self._norm_cache = {}
        self._gram = None
        self._buffers = {}  # work arrays of the products side by side (_scratch)
        self.dtype = np.dtype(np.float64)
        self._double = self
        self.meter = None
        self._madds = (Phi.nnz if self._sparse else L * M) * K  # one product's multiply-adds
        if dtype != np.float64:
            self._set_single()

    def _set_single(self):
        """Products with a float32 copy of ``Phi`` (the float64 one kept, see the Notes)."""
        double = copy.copy(self)  # the float64 products, sharing Phi and the norm cache
        double._buffers = {}  # its own work arrays
        double._double = double
        self.dtype = np.dtype(np.float32)
        self._double = double
        if self._sparse:
            # without the row of ones: the bias row stays float64 (computed apart)
            with np.errstate(over="ignore"):
                self._Phi32 = self.Phi.astype(np.float32)
            self._PhiT32 = self._Phi32.T.tocsr()
        else:
            with np.errstate(over="ignore"):
                self._Phi32 = np.ascontiguousarray(self.Phi, dtype=np.float32)
        if not np.all(np.isfinite(self._Phi32.data if self._sparse else self._Phi32)):
            raise ValueError("Phi has entries beyond the float32 range (about 3.4e38 in absolute "
                             "value): use dtype=numpy.float64")

    def used_features(self):
        """The features some sample uses (non-zero columns of a sparse ``Phi``).

        Returns
        -------
        ndarray of int or None
            Increasing indices, or None when every feature is used or ``Phi`` is dense.
        """
        if not self._sparse:
            return None
        used = np.unique(self.Phi.indices)
        return used if used.size < self.n_features else None

    def restrict_features(self, columns):
        """The operator of the same samples on the features ``columns`` only.

        For features that no sample uses (all-zero columns of ``Phi``, e.g. the
        vocabulary absent from a small set of documents), a solver started from 0 keeps
        their weights at 0 under every penalty whose groups do not mix features (l2, l1,
        and groups of one feature's weights across classes): ``T^T Y`` is 0 on their rows
        and the proximal step maps 0 to 0. The problem on the other features has the same
        solution there, and the same ``||T||`` (the zero columns add only zero singular
        values): the restricted operator takes its norm from this one (:meth:`norm` and
        :meth:`exact_norm` delegate), so that the step sizes are those of the full problem
        to the bit.

        Parameters
        ----------
        columns : ndarray of int, shape (M',)
            Increasing feature indices to keep.

        Returns
        -------
        MulticlassOperator
            On ``Phi[:, columns]`` (same labels, classes and product precision).
        """
        columns = np.asarray(columns)
        if columns.ndim != 1 or (columns.size > 1 and np.any(np.diff(columns) <= 0)):
            raise ValueError("columns must be increasing feature indices")
        sub = MulticlassOperator(self.Phi[:, columns], self.y_idx, self.n_classes,
                                 dtype=self.dtype)
        sub._norm_parent = self
        if sub._double is not sub:
            sub._double._norm_parent = self
        return sub

    def prepare(self, skip_zero_weights=False):
        """Set up the products before a solver's clock starts.

        For a dense ``Phi``, times the two BLAS orientations of each product and keeps
        the faster, and, asked to skip zero weights, the product over the non-zero
        weights (:class:`DenseProducts`); with float64 products it also loads the compiled
        label operations of :meth:`T` and :meth:`T_adjoint` (numpy's bits,
        :meth:`DenseProducts.load_labels`). For a sparse one (float64 products), loads the
        compiled products and times each against scipy's (:class:`SparseProducts`: the
        same bits either way). Each once per operator; ``SPARSESVM_TUNE=0``: nothing timed
        (the direct orientations, scipy's sparse products).

        Parameters
        ----------
        skip_zero_weights : bool, default=False
            Whether :meth:`scores` and :meth:`T` may skip the zero weights, and
            :meth:`T_adjoint` the zero entries of ``G``, of a dense product (when measured
            faster; :class:`DenseProducts`), until the next call. The primal-dual solvers
            ask for it.

        Returns
        -------
        MulticlassOperator
            ``self``.
        """
        if not self._sparse:
            if skip_zero_weights:
                self.products.tune_sparse()
            else:
                self.products.tune()
            self.products.skip_zero_weights = bool(skip_zero_weights)
            if self.dtype == np.float64:
                self.products.load_labels()
        elif self.dtype == np.float64:
            self.products.tune()
        return self

    def double(self):
        """The same operator with float64 products (``self`` when ``dtype`` is float64).

        Shares ``Phi``, the labels, ``R`` and the cache of :meth:`norm` with ``self``.

        Returns
        -------
        MulticlassOperator
        """
        return self._double

    # ------------------------------------------------------------------ #
    def _check_X(self, X):
        return _as_float64(X, (self.n_features + 1, self.n_classes), "X",
                           "(n_features + 1, n_classes)")

    def _check_Y(self, Y):
        return _as_float64(Y, (self.n_samples, self.n_classes), "Y", "(n_samples, n_classes)")

    def scores(self, X):
        """Scores ``S = Phi @ X[:-1] + X[-1]``.

        Parameters
        ----------
        X : array_like, shape (n_features + 1, n_classes)

        Returns
        -------
        S : ndarray, shape (n_samples, n_classes)
        """
        return self._scores(self._check_X(X))

    def _scores(self, X, shift=None, rows=None):
        """:meth:`scores` of a checked ``X``; with ``shift`` (the compiled ``label_shift`` of
        :meth:`_labels`: dense float64 products only), ``T X`` instead, the biases and the
        label shift in one pass; ``rows``: :meth:`T`'s."""
        if self.meter is not None:
            self.meter(self._madds)
        if self.dtype == np.float32:
            W = X[:-1].astype(np.float32)  # the iterate rounded once per product
            S = np.asarray(self._Phi32 @ W).astype(np.float64)
            S += X[-1]
            return S
        if self._sparse:
            return self.products.forward(X, rows=rows)
        S = self.products.forward(X[:-1])
        if shift is None:
            S += X[-1]
        else:
            shift(S, np.ascontiguousarray(X[-1]), self.y_idx)
        return S

    def _labels(self):
        """The compiled label kernels ``(label_shift, adjoint_input)``
        (:func:`sparsesvm.solvers._kernels.label_kernels`) where they serve: dense float64
        products prepared by :meth:`prepare`, numba installed; else None (numpy's operations,
        the same bits)."""
        if self._sparse or self.dtype != np.float64:
            return None
        return self.products.labels

    def _adjoint_input(self, Y):
        """``G`` of ``T^T Y`` for an unchecked ``Y`` (checked here, and the product metered:
        :meth:`T_adjoint` and :meth:`T_adjoint_rows` make one each) (``Y`` with ``G[l, z_l] =
        Y[l, z_l] - sum_k Y[l, k]``) and its column sums, the bias row, from the compiled
        pass (:meth:`_labels`), or None for the caller to sum (numpy's path)."""
        Y = self._check_Y(Y)
        if self.meter is not None:
            self.meter(self._madds)
        labels = self._labels()
        if labels is None:
            G = Y.copy()
            G[self._rows, self.y_idx] -= Y.sum(axis=1)
            return G, None
        G, bias = np.empty(Y.shape), np.empty(self.n_classes)
        # Y's row sums are numpy's, on Y as given (their order of summation follows its layout)
        labels[1](np.ascontiguousarray(Y), Y.sum(axis=1), self.y_idx, G, bias)
        return G, bias

    def T(self, X, rows=None):
        """Apply T: ``(T X)[l, k] = S[l, k] - S[l, z_l]``.

        Parameters
        ----------
        X : array_like, shape (n_features + 1, n_classes)
        rows : ndarray of uint8, shape (n_features + 1,), optional
            Marks of the rows of ``X``: 0 where the row holds only zeros (as
            :func:`sparsesvm.solvers._kernels.sparse_step` keeps them). The compiled
            product of a sparse ``Phi`` skips those rows without reading them; the same
            result. Ignored by the other products.

        Returns
        -------
        ndarray, shape (n_samples, n_classes)
            Column ``z_l`` of row l is exactly 0.
        """
        X = self._check_X(X)
        labels = self._labels()
        if labels is not None:  # the biases and the label shift in one compiled pass
            return self._scores(X, shift=labels[0])
        S = self._scores(X, rows=rows)
        S -= S[self._rows, self.y_idx][:, None]
        return S

    def shares_products(self):
        """Whether :meth:`T_many` and :meth:`T_adjoint_many` make one product with ``Phi`` for
        several arguments: for a dense ``Phi`` with float64 products (otherwise one each)."""
        return not self._sparse and self.dtype == np.float64

    def _scratch(self, name, shape):
        """A work array of ``shape`` kept between calls (no allocation, hence no page faults,
        in every iteration of a loop); its content is only valid within one call."""
        buf = self._buffers.get(name)
        if buf is None or buf.shape != shape:
            buf = self._buffers[name] = np.empty(shape)
        return buf

    def _check_many(self, A, shape, name, shape_name):
        """``A`` as a float64 array of shape (n, *shape), n >= 1; ValueError naming it otherwise."""
        try:
            A = np.asarray(A)
        except ValueError:  # a sequence of arrays of different shapes
            raise ValueError(f"{name} must have shape (n, {shape_name}) = (n, {shape[0]}, {shape[1]}): "
                             "got arrays of different shapes") from None
        if A.ndim != 3 or A.shape[1:] != shape or A.shape[0] < 1:
            raise ValueError(f"{name} must have shape (n, {shape_name}) = (n, {shape[0]}, {shape[1]}) "
                             f"with n >= 1, got {A.shape}")
        return A if A.dtype == np.float64 else A.astype(np.float64)

    def T_many(self, Xs):
        """``T`` applied to several ``X``: one product with ``Phi`` for all of them.

        Where :meth:`shares_products`, the weights are laid side by side, an (M, n K)
        array, and one BLAS product serves them all: it reads ``Phi`` once instead of n
        times and multiplies wider blocks (README, "Alphas side by side"); otherwise one
        :meth:`T` each.

        Parameters
        ----------
        Xs : array_like of shape (n, n_features + 1, n_classes)
            The n weight arrays (a sequence of (n_features + 1, n_classes) arrays is stacked).

        Returns
        -------
        ndarray of shape (n, n_samples, n_classes), C-ordered
            ``T Xs[j]`` for each j: :meth:`T`'s values up to rounding (the product sums in
            another order), column ``z_l`` of row l exactly 0.
        """
        Xs = self._check_many(Xs, (self.n_features + 1, self.n_classes), "Xs",
                              "n_features + 1, n_classes")
        n, K = Xs.shape[0], self.n_classes
        if n < 2 or not self.shares_products():
            return np.stack([self.T(X) for X in Xs])
        if self.meter is not None:
            self.meter(n * self._madds)
        W = self._scratch("T_many", (self.n_features, n, K))
        np.copyto(W, Xs[:, :-1].transpose(1, 0, 2))
        S = (self.Phi @ W.reshape(self.n_features, n * K)).reshape(self.n_samples, n, K)
        S += Xs[:, -1]
        S -= S[self._rows, :, self.y_idx][:, :, None]
        return np.ascontiguousarray(S.transpose(1, 0, 2))

    def T_adjoint_many(self, Ys, out=None):
        """``T^T`` applied to several ``Y``: one product with ``Phi`` for all of them.

        As :meth:`T_many`: one product where :meth:`shares_products`, else one
        :meth:`T_adjoint` each.

        Parameters
        ----------
        Ys : array_like of shape (n, n_samples, n_classes)
            The n dual arrays (a sequence of (n_samples, n_classes) arrays is stacked).
        out : ndarray of shape (n, n_features + 1, n_classes), optional
            Where to write the result (C-ordered float64, sharing no memory with ``Ys``);
            a new array by default.

        Returns
        -------
        ndarray of shape (n, n_features + 1, n_classes)
            ``T^T Ys[j]`` for each j (:meth:`T_adjoint`'s values up to rounding); ``out``
            when given.
        """
        Ys = self._check_many(Ys, (self.n_samples, self.n_classes), "Ys", "n_samples, n_classes")
        n, K, M = Ys.shape[0], self.n_classes, self.n_features
        if out is None:
            out = np.empty((n, M + 1, K))
        elif (out.shape != (n, M + 1, K) or out.dtype != np.float64 or not out.flags.c_contiguous
              or np.shares_memory(out, Ys)):
            raise ValueError(f"out must be a C-ordered float64 array of shape {(n, M + 1, K)} "
                             "sharing no memory with Ys")
        if n < 2 or not self.shares_products():
            for j in range(n):
                out[j] = self.T_adjoint(Ys[j])
            return out
        if self.meter is not None:
            self.meter(n * self._madds)
        G = np.ascontiguousarray(Ys.transpose(1, 0, 2))  # (L, n, K); G[l, :, z_l] -= sum_k Y[:, l, k]
        G[self._rows, :, self.y_idx] -= G.sum(axis=2)
        Gw = G.reshape(self.n_samples, n * K)
        A = self._scratch("T_adjoint_many", (M, n * K))
        np.matmul(self.Phi.T, Gw, out=A)
        np.copyto(out[:, :-1], A.reshape(M, n, K).transpose(1, 0, 2))
        out[:, -1] = Gw.sum(axis=0).reshape(n, K)
        return out

    def T_adjoint(self, Y):
        """Apply the adjoint ``T^T``.

        Parameters
        ----------
        Y : array_like, shape (n_samples, n_classes)

        Returns
        -------
        ndarray, shape (n_features + 1, n_classes)
            ``[Phi^T G; 1^T G]`` with ``G = Y`` except
            ``G[l, z_l] = Y[l, z_l] - sum_k Y[l, k]``.
        """
        G, bias = self._adjoint_input(Y)
        if self._sparse and self.dtype == np.float64:
            return self.products.adjoint(G)  # [Phi^T; 1^T] G: the biases' row included
        out = np.empty((self.n_features + 1, self.n_classes))
        if self.dtype == np.float32:
            G32 = G.astype(np.float32)  # rounded once per product
            out[:-1] = self._PhiT32 @ G32 if self._sparse else self._Phi32.T @ G32
        else:
            self.products.adjoint(G, out[:-1])
        out[-1] = G.sum(axis=0) if bias is None else bias
        return out

    def T_adjoint_rows(self, Y):
        """``T^T Y`` left for a kernel to form row by row, where that serves.

        For a sparse ``Phi`` with float64 products whose compiled products :meth:`prepare`
        loaded (:attr:`SparseProducts.compiled`), the CSR arrays of ``[Phi^T; 1^T]`` and ``G``
        (``Y`` with ``G[l, z_l] = Y[l, z_l] - sum_k Y[l, k]``): row m of ``T^T Y`` is ``A[m]
        @ G``. :func:`sparsesvm.solvers._kernels.sparse_step` takes them and never stores the
        (M + 1, K) product. None otherwise (the caller uses :meth:`T_adjoint`). Whichever
        product the timing of :meth:`SparseProducts.tune` chose for :meth:`T_adjoint`: that
        times the product alone, where the row-by-row step also saves the product's pass over
        memory and the rows it settles without their sums, and at E3's L = 100 the two
        products' times are close enough for the timing to go either way (README, "E3's row
        path whatever the product's timing").

        Parameters
        ----------
        Y : array_like, shape (n_samples, n_classes)

        Returns
        -------
        tuple ``((indptr, indices, data), G)`` or None
            ``indptr`` and ``indices`` uint64, ``data`` float64, ``G`` a new C-ordered
            float64 array of shape (n_samples, n_classes).
        """
        if not (self._sparse and self.dtype == np.float64 and self.products.compiled):
            return None
        G, _ = self._adjoint_input(Y)
        return self.products.arrays, G

    def norm(self, max_iter=200, tol=1e-6, rng=None, method="auto"):
        """``||T||`` (largest singular value): exactly when small, else by power iteration.

        Parameters
        ----------
        max_iter : int, default=200
            Maximum number of power iterations.
        tol : float, default=1e-6
            Stop when the relative change of the estimate is below ``tol``.
        rng : None, int or numpy.random.Generator, default=None
            Source of the random start; None means seed 0 (reproducible).
            Results for None/int seeds are cached per (max_iter, tol, seed).
        method : {"auto", "exact", "power"}, default="auto"
            ``"exact"``: :meth:`exact_norm`; ``"power"``: :func:`power_norm` on
            ``T^T T`` (``max_iter``, ``tol``, ``rng`` apply to it only);
            ``"auto"``: exact when ``n_samples * n_classes <=``
            :data:`EXACT_NORM_MAX_SIZE` (cheaper than the power iteration there),
            power iteration otherwise.

        Returns
        -------
        float
            The norm or its estimate, also stored in ``self.norm_``.

        Notes
        -----
        With ``x`` of unit norm, ``||T x||`` increases towards ``||T||`` along
        the iterations ``x <- T^T T x / ||T^T T x||`` (it is a lower bound);
        solvers that need ``tau * sigma * ||T||^2 <= 1`` should keep a small
        margin (e.g. multiply the estimate by 1.01).
        """
        if method not in ("auto", "exact", "power"):
            raise ValueError(f"method must be 'auto', 'exact' or 'power', got {method!r}")
        if self._norm_parent is not None:  # restrict_features: the full problem's norm
            self.norm_ = self._norm_parent.norm(max_iter, tol, rng, method)
            return self.norm_
        if method == "exact" or (
            method == "auto" and self.n_samples * self.n_classes <= EXACT_NORM_MAX_SIZE
        ):
            self.norm_ = self._usable(self.exact_norm())
            return self.norm_
        if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
        if not isinstance(tol, numbers.Real) or not np.isfinite(tol) or tol < 0:
            raise ValueError(f"tol must be a finite real >= 0, got {tol!r}")
        key = None
        if rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, bool)):
            seed = 0 if rng is None else int(rng)
            key = (int(max_iter), float(tol), seed)
            if key in self._norm_cache:
                self.norm_ = self._norm_cache[key]
                return self.norm_
            gen = np.random.default_rng(seed)
        elif isinstance(rng, np.random.Generator):
            gen = rng
        else:
            raise ValueError(f"rng must be None, an int seed or a numpy Generator, got {rng!r}")

        exact = self.double()  # float64 products, whatever dtype
        est = power_norm(exact.T, exact.T_adjoint, (self.n_features + 1, self.n_classes),
                         max_iter=int(max_iter), tol=tol, rng=gen)
        est = self._usable(est)
        self.norm_ = est
        if key is not None:
            self._norm_cache[key] = est
        return est

    def _usable(self, norm):
        """``norm`` if the solvers can use it (finite, ``<= MAX_NORM``); else a ValueError saying what to do."""
        if np.isfinite(norm) and norm <= MAX_NORM:
            return norm
        amax = float(abs(self.Phi).max()) if self.Phi.size else 0.0
        raise ValueError(
            f"||T|| = {norm:.3g} is too large for float64 arithmetic (the solvers use ||T||**2, "
            f"at most {MAX_NORM:.0e}**2): X has entries up to {amax:.3g} in absolute value. "
            f"Rescale X, e.g. divide it by {amax:.3g} (its largest entry) or standardise its "
            "features (sklearn.preprocessing.StandardScaler), and fit again"
        )

    def gram(self):
        """The Gram matrix ``Phi Phi^T`` of the samples, dense, computed once.

        Returns
        -------
        ndarray, shape (n_samples, n_samples)
            Read-only (shared by :meth:`exact_norm` and the solvers that use it).
        """
        if self._double is not self:
            return self._double.gram()  # one Gram matrix for both precisions
        if self._gram is None:
            G = self.Phi @ self.Phi.T
            G = G.toarray() if self._sparse else np.asarray(G)
            G.flags.writeable = False
            self._gram = G
        return self._gram

    def exact_norm(self):
        """``||T||`` from the eigenvalues of ``T T^T``, an (L K) x (L K) matrix.

        Returns
        -------
        float

        Notes
        -----
        Row l of ``T X`` is ``A_l X^T psi_l`` with ``psi_l`` the l-th row of
        ``[Phi 1]`` and ``A_l = I - 1 e_{z_l}^T`` (K x K), so ``T T^T`` has the
        blocks ``Q[l, m] A_l A_m^T`` with ``Q = [Phi 1][Phi 1]^T`` (L x L) and
        ``A_l A_m^T = I - e_{z_m} 1^T - 1 e_{z_l}^T + [z_l = z_m] 1 1^T``.
        Costs ``O(L^2 M)`` for ``Q`` and ``O((L K)^3)`` for the eigenvalues:
        use it for small ``L K`` (about 0.015 s at L K = 300, where 200 power
        iterations on M = 3969 features take about 0.2 s). When ``Phi Phi^T``
        overflows (entries above ~1e154), ``Q`` is formed from ``Phi / s`` with ``s``
        a power of two and the result multiplied by ``s``, so the value stays right
        (and :meth:`norm` says it is too large for the solvers, instead of LAPACK
        failing on infinities).
        """
        if self._norm_parent is not None:  # restrict_features: the full problem's norm
            return self._norm_parent.exact_norm()
        if "exact" in self._norm_cache:
            return self._norm_cache["exact"]
        L, K = self.n_samples, self.n_classes
        with np.errstate(over="ignore"):
            Q = self.gram() + 1.0
        scale = 1.0
        if not np.all(np.isfinite(Q)):
            # Phi Phi^T overflows (entries of Phi above ~1e154): the same matrix divided by
            # scale**2, a power of two (exact), and lmax scaled back below
            amax = float(abs(self.Phi).max())
            scale = float(np.ldexp(1.0, int(np.frexp(amax)[1])))
            P = self.Phi / scale
            Q = P @ P.T
            Q = (Q.toarray() if self._sparse else np.asarray(Q)) + (1.0 / scale) ** 2
        Z = np.zeros((L, K))
        Z[self._rows, self.y_idx] = 1.0
        same = Z @ Z.T
        C = (np.eye(K)[None, :, None, :] - Z.T[None, :, :, None] - Z[:, None, None, :]
             + same[:, None, :, None])
        B = (Q[:, None, :, None] * C).reshape(L * K, L * K)
        lmax = float(np.linalg.eigvalsh(B)[-1])
        est = float(np.sqrt(max(lmax, 0.0))) * scale
        self._norm_cache["exact"] = est
        return est
