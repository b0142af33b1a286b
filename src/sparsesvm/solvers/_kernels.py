"""Fused primal step of the primal-dual solvers, compiled with numba (optional).

One iteration of Algorithms 1 and 2 spends its time outside the two products
with ``Phi`` in the primal update ``X+ = prox_{tau g}(X - tau V)`` with
``V = T^T Y``, and in the stopping measure. With numpy, that update is about
ten passes over the (M + 1, K) parameter array (the shifted point, the group
transpose in and out, abs, sums, maxima, candidate masks, the clip, two inner
products). Here it is one compiled call that keeps each part of the array in
cache while it is shifted, thresholded and written, and accumulates the two
inner products of the stopping measure
(:class:`sparsesvm.solvers._loop.RelChange`) on the way: l2 and l1 in one
flat pass, groups of one row (across classes) in one pass per row, and
within-class groups in chunks of whole blocks, each chunk through a few short
loops that the compiler vectorises (:func:`sparsesvm.solvers._kernels_jit.step`).

The same module compiles the dual updates of Algorithms 1 and 2
(:func:`simplex_step`, :func:`epigraph_step`), FISTA's momentum (:func:`momentum`),
the products of :mod:`sparsesvm.model.operator` that skip zero weights, and, for a
sparse ``Phi`` and a row-separable penalty (E3's), the primal step that forms ``T^T Y``
row by row without storing it (:func:`sparse_step`).

The kernels compute exactly the proximity operators of
:mod:`sparsesvm.model.penalties` (tests compare them with those, which are checked
against CVXPY); only the order of the floating-point operations differs. Each
penalty class names the branch of the kernel that computes its prox
(:meth:`~sparsesvm.model.penalties.Penalty.compiled_form`).

numba is an optional dependency (``pip install sparsesvm[fast]``; the
workflow's conda environment has it). Without it, or with
``SPARSESVM_NUMBA=0`` in the environment, :func:`fused_step` returns None and
the solvers use the numpy path. It is used only for problems with at least
:data:`MIN_SIZE` parameters: below that, numpy's passes cost less than
importing numba and loading the compiled kernel. (The accelerated solver's PDHG
takes the primal and dual steps at every size, loading them when it first runs in
a solve, off its clock: :mod:`sparsesvm.solvers.accelerated.pdhg`.)

Compile once: the kernels are module-level functions of
:mod:`sparsesvm.solvers._kernels_jit` with numba's on-disk cache, so a new process
loads them instead of compiling them again. The cache lives in
:func:`cache_dir` (a user cache directory, not the installed package), unless
the user set numba's own ``NUMBA_CACHE_DIR``, which is respected. The kernel
is compiled or loaded by :func:`fused_step`, i.e. when a solver sets up, before
its clock starts: no ``fit_time`` ever includes compiling or loading it.
"""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np

#: smallest (M + 1) * K for which the compiled step is used
MIN_SIZE = 10_000

_kernel = None

#: no row marks: what ``csr_step`` takes as ``xrows`` and ``csc_forward`` as ``rows`` when
#: nothing is known of the rows (every row summed; the zero rows found from the bits)
NO_MARKS = np.zeros(0, dtype=np.uint8)


def cache_dir():
    """Directory of the compiled kernels' cache (numba's ``.nbi``/``.nbc`` files).

    ``$SPARSESVM_CACHE_DIR/numba`` if set, else ``sparsesvm/numba`` under the
    user's cache directory: ``$XDG_CACHE_HOME`` or ``~/.cache`` (Linux and
    other POSIX), ``~/Library/Caches`` (macOS), ``%LOCALAPPDATA%`` (Windows).
    Not used when numba's own ``NUMBA_CACHE_DIR`` is set.
    """
    root = os.environ.get("SPARSESVM_CACHE_DIR")
    if not root:
        if sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        elif sys.platform == "darwin":
            base = os.path.expanduser("~/Library/Caches")
        else:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        root = os.path.join(base, "sparsesvm")
    return os.path.join(root, "numba")


def import_compiled(module):
    """Import a module of compiled kernels with numba's cache in :func:`cache_dir`.

    numba fixes a function's cache location when it is decorated, so
    :func:`cache_dir` is set as numba's cache directory for that import only,
    unless the user set one (``NUMBA_CACHE_DIR``). Returns the module, or
    None when numba is not installed.

    Parameters
    ----------
    module : str
        Absolute module name, e.g. ``"sparsesvm.solvers._kernels_jit"``.
    """
    try:
        from numba.core import config
    except ImportError:
        return None
    own = not config.CACHE_DIR
    if own:
        config.CACHE_DIR = cache_dir()
    try:
        return importlib.import_module(module)
    finally:
        if own:
            config.CACHE_DIR = ""


def _load():
    """The module of compiled kernels, or None when numba is missing or switched off.

    The first call imports :mod:`sparsesvm.solvers._kernels_jit` (through
    :func:`import_compiled`), which compiles the kernels or loads them from
    the cache.
    """
    global _kernel
    if _kernel is None:
        if os.environ.get("SPARSESVM_NUMBA", "1") == "0":
            return None
        _kernel = import_compiled("sparsesvm.solvers._kernels_jit") or False
    return _kernel or None


def available():
    """Whether the compiled kernels can be used here."""
    return _load() is not None


def _kernels_for(size, force):
    """The compiled kernels for a problem of ``size`` parameters, or None (numpy path)."""
    if size < MIN_SIZE and not force:
        return None
    return _load()


def _step_kernels(penalty, size, force):
    """``(kernels, (kind, b))`` for a primal step of ``penalty`` on ``size`` parameters, or
    None: no kernels (:func:`_kernels_for`), or a penalty without a compiled form (not one
    of the package's own, or a subclass with a prox of its own)."""
    kernels = _kernels_for(size, force)
    if kernels is None:
        return None
    compiled_form = getattr(penalty, "compiled_form", None)
    form = compiled_form() if compiled_form is not None else None
    return None if form is None else (kernels, form)


def fused_step(penalty, size, force=False):
    """A callable ``step(X, V, tau, out) -> (||out||^2, <out, X>)``, or None.

    ``out = prox_{tau g}(X - tau V)`` (bias row: ``X - tau V``), with ``X``
    and ``V`` float64 C-contiguous arrays of shape (M + 1, K); ``out`` may be
    ``V`` itself (each entry of V is read before it is overwritten), not
    ``X``. The kernel is compiled or loaded from the cache here, not at the
    first call. The kernel's branch and block argument are the penalty's
    :meth:`~sparsesvm.model.penalties.Penalty.compiled_form`. None when the
    kernels are unavailable, when ``penalty`` has no compiled form (not one of
    :mod:`sparsesvm.model.penalties`' own classes), or when ``size`` (the
    number of parameters) is below :data:`MIN_SIZE` and ``force`` is False.
    """
    found = _step_kernels(penalty, size, force)
    if found is None:
        return None
    kernels, (kind, b) = found
    kernel = kernels.step

    def step(X, V, tau, out):
        if not (X.flags.c_contiguous and V.flags.c_contiguous and out.flags.c_contiguous):
            raise ValueError("the compiled step takes C-contiguous float64 arrays")
        return kernel(X, V, float(tau), b, kind, out)

    return step


def sparse_step(penalty, size, force=False):
    """A callable ``step(arrays, G, X, tau, out, rows, xrows=None) -> (||out||^2, <out, X>)``, or None.

    :func:`fused_step` with ``V = A G`` formed row by row inside the step, never stored
    (:func:`sparsesvm.solvers._kernels_jit.csr_step`: the values of the product and the
    step one after the other, to rounding): ``arrays`` are the uint64 ``indptr`` and ``indices`` and
    the float64 ``data`` of a CSR ``A`` of shape (M + 1, L) (``[Phi^T; 1^T]`` of a sparse
    ``Phi``, :meth:`sparsesvm.model.operator.MulticlassOperator.T_adjoint_rows`), ``G``
    (L, K), ``X`` and ``out`` (M + 1, K) float64 C-contiguous, ``out`` not ``X``; ``rows``
    (M + 1,) uint8, the kernel's marks of the rows of ``out`` that hold zeros (0), kept
    with ``out`` from one call to the next; ``xrows`` (M + 1,) uint8 or None, 0 on the rows
    of ``X`` that hold +0.0 (``X`` the other buffer of a pair, as the kernel marks it),
    whose shift l1,2 forms without reading them, most settled by a bound (the same bits). For
    row-separable penalties (l2, l1, groups of one row across classes); None for
    within-class groups, and where :func:`fused_step` is None.
    """
    found = _step_kernels(penalty, size, force)
    if found is None:
        return None
    kernels, (kind, b) = found
    if b > 1:  # within-class groups span rows: whole blocks of V
        return None
    kernel = kernels.csr_step

    def step(arrays, G, X, tau, out, rows, xrows=None):
        for a in (G, X, out):
            if not a.flags.c_contiguous:
                raise ValueError("the compiled step takes C-contiguous float64 arrays")
        n = X.shape[0]
        if not (X.shape == out.shape and rows.shape == (n,) and G.shape[1] == X.shape[1]
                and arrays[0].shape == (n + 1,)
                and (xrows is None or xrows.shape == (n,))):  # the kernel does not check indices
            raise ValueError(f"shapes do not match: X {X.shape}, out {out.shape}, rows "
                             f"{rows.shape}, xrows {None if xrows is None else xrows.shape}, "
                             f"G {G.shape}, A with {arrays[0].shape[0] - 1} rows")
        if np.shares_memory(out, X):
            raise ValueError("out must not share memory with X")
        if xrows is None:
            xrows = NO_MARKS
        elif np.shares_memory(xrows, rows):
            raise ValueError("xrows (X's marks) must not share memory with rows (out's)")
        return kernel(*arrays, G, X, float(tau), kind, out, rows, xrows)

    return step


def momentum(size, force=False):
    """FISTA's compiled momentum ``step(X, Xn, V, c) -> (dd, rs)``, or None.

    In one pass: ``dd = ||Xn - X||^2`` (the stopping measure's numerator), ``rs = <V -
    Xn, Xn - X>`` (the adaptive restart's test, with the ``V`` passed in), and ``V`` is
    overwritten with the extrapolated point ``Xn + c (Xn - X)``, rounded as numpy rounds
    it (:func:`sparsesvm.solvers._kernels_jit.momentum_step`). Arrays float64 C-contiguous
    of one shape (M + 1, K); ``V`` must share memory with neither ``X`` nor ``Xn``. None
    when the kernels are unavailable or ``size`` (the number of parameters) is below
    :data:`MIN_SIZE` and ``force`` is False (FISTA then uses the numpy path).
    """
    kernels = _kernels_for(size, force)
    if kernels is None:
        return None
    kernel = kernels.momentum_step

    def step(X, Xn, V, c):
        for a in (X, Xn, V):
            if not a.flags.c_contiguous:
                raise ValueError("the compiled momentum takes C-contiguous float64 arrays")
        if not X.shape == Xn.shape == V.shape:  # the kernel does not check its indices
            raise ValueError(f"X, Xn and V must have one shape; got {X.shape}, {Xn.shape}, {V.shape}")
        if np.shares_memory(V, X) or np.shares_memory(V, Xn):
            raise ValueError("V must not share memory with X or Xn")
        return kernel(X, Xn, V, float(c))

    return step


def column_momentum(size, force=False):
    """One-vs-all FISTA's compiled momentum, ``(sums, extrapolate)``, or None.

    ``sums(X, Xn, V) -> (nx, nd, rs)``: each class's (column's) ``||Xn||^2``, ``||Xn -
    X||^2`` and ``<V - Xn, Xn - X>`` in one pass (:func:`sparsesvm.solvers._kernels_jit.column_sums`);
    ``extrapolate(X, Xn, V, coef)``: ``V = Xn + coef (Xn - X)`` column by column, rounded as
    numpy rounds it, and ``X = Xn``, in another (:func:`~sparsesvm.solvers._kernels_jit.column_extrapolate`).
    Arrays float64 C-contiguous of one shape (M + 1, n), ``coef`` of shape (n,); ``V`` and
    ``X`` share memory with no other argument. None when the kernels are unavailable or
    ``size`` (the number of parameters) is below :data:`MIN_SIZE` and ``force`` is False
    (:func:`sparsesvm.solvers.ova` then uses the numpy path).
    """
    kernels = _kernels_for(size, force)
    if kernels is None:
        return None
    ksums, kextra = kernels.column_sums, kernels.column_extrapolate

    def check(X, Xn, V):
        for a in (X, Xn, V):
            if not a.flags.c_contiguous:
                raise ValueError("the compiled momentum takes C-contiguous float64 arrays")
        if not X.shape == Xn.shape == V.shape:  # the kernels do not check their indices
            raise ValueError(f"X, Xn and V must have one shape; got {X.shape}, {Xn.shape}, {V.shape}")

    def sums(X, Xn, V):
        check(X, Xn, V)
        out = np.empty((3, X.shape[1]))
        ksums(X, Xn, V, out)
        return out[0], out[1], out[2]

    def extrapolate(X, Xn, V, coef):
        check(X, Xn, V)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        if coef.shape != (X.shape[1],):
            raise ValueError(f"coef must have shape ({X.shape[1]},), got {coef.shape}")
        if np.shares_memory(V, X) or np.shares_memory(V, Xn) or np.shares_memory(X, Xn):
            raise ValueError("X, Xn and V must not share memory")
        kextra(X, Xn, V, coef)

    return sums, extrapolate


def simplex_step(size, force=False):
    """A callable ``dual(Y, TX, TXn, sR, sigma, lam, out) -> (||out||^2, ||out - Y||^2)``, or None.

    The dual update of Algorithm 1 (:func:`sparsesvm.solvers.hinge_reg`) in
    one compiled pass: ``out = P_{S_lam}(Y + sigma (2 TXn - TX) + sR)``, the
    row-wise projection onto ``{y >= 0, sum(y) = lam}``, with the two sums
    of squares its stopping rule may need; arrays float64 C-contiguous of
    shape (L, K), ``out`` may be ``TX``. None when the kernels are unavailable
    or ``size`` (the number of parameters) is below :data:`MIN_SIZE` and
    ``force`` is False (the solver then uses the numpy path).
    """
    kernels = _kernels_for(size, force)
    if kernels is None:
        return None
    kernel = kernels.simplex_step

    def dual(Y, TX, TXn, sR, sigma, lam, out):
        for a in (Y, TX, TXn, sR, out):
            if not a.flags.c_contiguous:
                raise ValueError("the compiled step takes C-contiguous float64 arrays")
        return kernel(Y, TX, TXn, sR, float(sigma), float(lam), out)

    return dual


def epigraph_step(size, force=False):
    """A callable ``dual(Y, TX, TXn, R, zeta, xi, sigma, tau, eta, out, zn)``, or None.

    The dual update of Algorithm 2 (:func:`sparsesvm.solvers.hinge_con`) in
    one compiled pass: ``zn = P_{V_eta}(zeta - tau xi)`` (the half-space
    step), then the over-relaxed point ``(Y / sigma + 2 TXn - TX, xi / sigma +
    2 zn - zeta)`` projected row-wise onto the epigraph of ``h_l``, written as
    ``out`` (the new Y) and, in place, ``xi``. Matrices float64 C-contiguous
    of shape (L, K), vectors float64 contiguous of shape (L,); ``out`` may be
    ``TX``, ``zn`` must be a buffer of its own. None when the kernels are
    unavailable or ``size`` (the number of parameters) is below
    :data:`MIN_SIZE` and ``force`` is False (the solver then uses the numpy path).
    """
    kernels = _kernels_for(size, force)
    if kernels is None:
        return None
    kernel = kernels.epigraph_step

    def dual(Y, TX, TXn, R, zeta, xi, sigma, tau, eta, out, zn):
        for a in (Y, TX, TXn, R, zeta, xi, out, zn):
            if not a.flags.c_contiguous:
                raise ValueError("the compiled step takes C-contiguous float64 arrays")
        if np.shares_memory(zn, zeta) or np.shares_memory(zn, xi):
            raise ValueError("zn must not share memory with zeta or xi")
        kernel(Y, TX, TXn, R, zeta, xi, float(sigma), float(tau), float(eta), out, zn)

    return dual


def slack_step(size, force=False):
    """A callable ``dual(Y, TX, TXn, sR, c, sigma, tau, eta, out, cn)``, or None.

    The dual update of hinge-lin (:func:`sparsesvm.solvers.hinge_lin`) in one compiled
    pass (:func:`sparsesvm.solvers._kernels_jit.slack_step`): ``cn = P(c + tau mean_k Y)``
    (onto ``{c >= 0, sum(c) <= eta}``), then ``out = max(0, Y + sigma (2 TXn - TX - (2 cn -
    c) 1^T) + sR)``. Matrices float64 C-contiguous of shape (L, K), vectors float64
    contiguous of shape (L,); ``out`` may be ``TX``, ``cn`` must be a buffer of its own.
    None when the kernels are unavailable or ``size`` (the number of parameters) is below
    :data:`MIN_SIZE` and ``force`` is False (the solver then uses the numpy path).
    """
    kernels = _kernels_for(size, force)
    if kernels is None:
        return None
    kernel = kernels.slack_step

    def dual(Y, TX, TXn, sR, c, sigma, tau, eta, out, cn):
        for a in (Y, TX, TXn, sR, c, out, cn):
            if not a.flags.c_contiguous:
                raise ValueError("the compiled step takes C-contiguous float64 arrays")
        if np.shares_memory(cn, c):
            raise ValueError("cn must not share memory with c")
        kernel(Y, TX, TXn, sR, c, float(sigma), float(tau), float(eta), out, cn)

    return dual


def sparse_forward():
    """The compiled ``sparse_forward(PhiT, W, outT)`` (``outT = (Phi @ W)^T`` over the
    non-zero entries of ``W``; float64 C-contiguous arrays (M, L), (M, K), (K, L)), or None
    when the kernels are unavailable. Used by
    :class:`sparsesvm.model.operator.DenseProducts` when it measures the product faster than
    BLAS' dense one for the weights' sparsity."""
    kernels = _load()
    return None if kernels is None else kernels.sparse_forward


def sparse_adjoint():
    """The compiled ``sparse_adjoint(Phi, G, bufT, out)`` (``out = Phi^T @ G`` over the
    non-zero entries of ``G``; float64 C-contiguous arrays (L, M), (L, K), (K, M) scratch,
    (M, K)), or None when the kernels are unavailable. Used by
    :class:`sparsesvm.model.operator.DenseProducts` when it measures the product faster than
    BLAS' dense one for ``G``'s sparsity."""
    kernels = _load()
    return None if kernels is None else kernels.sparse_adjoint


def nonzero_count():
    """The compiled ``nonzero_count(W)`` (``np.count_nonzero`` of a float64 C-contiguous 2-D
    array, faster), or None when the kernels are unavailable. Used by
    :class:`sparsesvm.model.operator.DenseProducts` to choose its product in every iteration."""
    kernels = _load()
    return None if kernels is None else kernels.nonzero_count


def label_kernels():
    """The compiled ``(label_shift, adjoint_input)`` of the operator ``T``, or None when the
    kernels are unavailable.

    ``label_shift(S, bias, y)`` turns the products ``S = Phi W`` into ``T X`` in place, and
    ``adjoint_input(Y, rowsum, y, G, bias)`` writes ``G`` and the bias row of ``T^T Y``
    (:func:`sparsesvm.solvers._kernels_jit.label_shift`,
    :func:`~sparsesvm.solvers._kernels_jit.adjoint_input`): numpy's results to the bit, in
    one pass each instead of several numpy calls. Used by
    :class:`sparsesvm.model.operator.MulticlassOperator` (dense float64 products) once
    :meth:`~sparsesvm.model.operator.MulticlassOperator.prepare` has loaded them.
    """
    kernels = _load()
    return None if kernels is None else (kernels.label_shift, kernels.adjoint_input)


def sparse_products():
    """The compiled products with a sparse ``Phi``, ``(csc_forward, csr_product)``, or None
    when the kernels are unavailable.

    Both take uint64 ``indptr`` and ``indices``, float64 ``data`` (the CSR arrays of
    ``[Phi^T; 1^T]``, i.e. the compressed columns of ``[Phi 1]``) and float64 C-contiguous
    dense arrays: ``csc_forward(indptr, indices, data, X, rows, out)`` writes ``[Phi 1] @ X``
    skipping the zero rows of ``X`` (those marked 0 in ``rows``, uint8, or, ``rows``
    empty, found from the bits), ``csr_product(indptr, indices, data, G, out)`` writes
    ``[Phi^T; 1^T] @ G``. :class:`sparsesvm.model.operator.MulticlassOperator` uses them
    once prepared: scipy's sums to the bit, in less time.
    """
    kernels = _load()
    return None if kernels is None else (kernels.csc_forward, kernels.csr_product)
