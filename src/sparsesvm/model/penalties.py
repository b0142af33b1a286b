"""Regularisers g of the sparse multiclass SVM: value, prox, dual norm, compiled form.

The parameter matrix ``X`` has shape ``(n_features + 1, n_classes)``: column k
is ``[w_k; b_k]``, the last row holds the biases, which are never penalised and
pass through every prox unchanged.

Penalties (``W = X[:-1]``, shape (M, K); ``V`` a weight-shaped dual point):

==========  ==========================  ======================  ===========================
name        value g(X)                  dual norm of V          groups
==========  ==========================  ======================  ===========================
``l2``      (1/2) sum_k ||w_k||_2^2     (not a norm)            None
``l1``      sum_k ||w_k||_1             max_jk |V_jk|           None
``l12``     sum_G ||X_G||_2             max_G ||V_G||_2         int b or ``"features"``
``l1inf``   sum_G ||X_G||_inf           max_G ||V_G||_1         int b or ``"features"``
==========  ==========================  ======================  ===========================

Group kinds (checked by :func:`check_groups`, the one check of ``groups`` in the
package):

- ``groups = b`` (int, 1 <= b <= M): *within-class blocks*; each w_k is cut into
  consecutive blocks of b features, the last block shorter when b does not
  divide M; a group is one block of one class (K * ceil(M / b) groups).
- ``groups = "features"``: *across-class* groups; a group is row j of W, the K
  weights of feature j (M groups).

Group layout, one definition for the prox, the certificates and the
working-set solvers: :meth:`Penalty.to_groups` views W as an array of shape
``group_shape = (n1, s, n2)`` whose axis 1 holds one group -- ``(M, 1, K)``
for l2 and l1 (a group per entry), ``(ceil(M / b), b, K)`` for blocks (W
zero-padded to a multiple of b, which changes no norm and no prox),
``(M, K, 1)`` for ``"features"``. Group ``(i1, i2)`` has the flat index
``i1 * n2 + i2``, and a per-group step array has shape ``step_shape() = (n1, 1,
n2)``. The vectorised prox works on the same groups as rows (one group per
row, in that flat order).

Compiled form: the prox of each class is also computed by one branch of the
numba kernel :func:`sparsesvm.solvers._kernels_jit.step` (fused with the
solvers' shift and stopping sums); the class names its branch
(``kernel_code``) and block argument (``kernel_block``) in
:meth:`Penalty.compiled_form`, and ``tests/solvers/test_kernels.py`` checks the kernel
against :meth:`Penalty.prox` on random inputs.

``prox`` keeps the float dtype of ``X`` (float32 stays float32, integers give
float64); ``value`` is accumulated in float64.
"""

from __future__ import annotations

import abc
import numbers

import numpy as np

from .projections import _prox_linf_rows

__all__ = ["Penalty", "L2Penalty", "L1Penalty", "L12Penalty", "L1InfPenalty", "PENALTIES",
           "check_groups", "make_penalty"]

PENALTIES = ("l2", "l1", "l12", "l1inf")


def _check_step(step, step_shape):
    """``step`` as a float, or as a float64 array of ``step_shape`` (one step per group)."""
    if isinstance(step, np.ndarray) and step.ndim > 0:
        if step.shape != step_shape or step.dtype.kind not in "fiu":
            raise ValueError(f"step must be a real scalar or a real array of shape {step_shape} "
                             f"(one step per group), got {step.dtype} of shape {step.shape}")
        steps = step.astype(np.float64)
        if not np.all(np.isfinite(steps)) or np.any(steps < 0):
            raise ValueError("step must be finite and >= 0 in every group")
        return steps
    if isinstance(step, bool) or not isinstance(step, (numbers.Real, np.ndarray)) or np.ndim(step) != 0:
        raise ValueError(f"step must be a real scalar, got {step!r}")
    step = float(step)
    if not np.isfinite(step) or step < 0:
        raise ValueError(f"step must be finite and >= 0, got {step}")
    return step


class Penalty(abc.ABC):
    """Base class: a regulariser on the weights of ``X`` (biases excluded).

    Parameters
    ----------
    n_features : int
        Number of features M (``X`` has M + 1 rows).
    n_classes : int
        Number of classes K (``X`` has K columns).
    groups : None, int or "features"
        Group structure (see the module docstring).

    Attributes
    ----------
    name : str
        ``"l2"``, ``"l1"``, ``"l12"`` or ``"l1inf"``.
    groups : None, int or "features"
    n_features, n_classes : int
    layout : {"entry", "blocks", "features"}
        How :meth:`to_groups` cuts W into groups.
    group_shape : tuple of int
        ``(n1, s, n2)``: shape of :meth:`to_groups`, axis 1 one group of s entries.
    kernel_code : int
        Branch of :func:`sparsesvm.solvers._kernels_jit.step` computing this
        prox (class attribute).
    kernel_block : int
        The kernel's block argument: 1 per entry, b for blocks, 0 for rows.
    """

    name = None
    kernel_code = None

    def __init__(self, n_features, n_classes, groups=None):
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)
        self.groups = groups
        self.layout = "entry"
        self.group_shape = (self.n_features, 1, self.n_classes)
        self.kernel_block = 1

    def __repr__(self):
        return (f"{type(self).__name__}(n_features={self.n_features}, "
                f"n_classes={self.n_classes}, groups={self.groups!r})")

    # -- input checks ------------------------------------------------------ #
    def _check_X(self, X):
        X = np.asarray(X)
        if X.dtype.kind not in "fiu":
            raise ValueError(f"X must be a real numeric array, got dtype {X.dtype}")
        shape = (self.n_features + 1, self.n_classes)
        if X.shape != shape:
            raise ValueError(
                f"X must have shape (n_features + 1, n_classes) = {shape}, got {X.shape}"
            )
        if not np.all(np.isfinite(X)):
            raise ValueError("X contains NaN or inf")
        if X.dtype.kind != "f" or X.dtype.itemsize < 4:
            X = X.astype(np.float64)
        return X

    # -- group layout ------------------------------------------------------ #
    def step_shape(self):
        """Shape ``(n1, 1, n2)`` of a per-group step array (broadcasts against :meth:`to_groups`)."""
        n1, _, n2 = self.group_shape
        return (n1, 1, n2)

    def to_groups(self, W):
        """The weights W (M, K) as an array of shape ``group_shape`` (axis 1 = one group).

        A view for l2, l1 and ``"features"``; a zero-padded copy for blocks
        that do not divide M.
        """
        return W.reshape(self.group_shape)

    def from_groups(self, A):
        """Inverse of :meth:`to_groups`: ``A`` of shape ``group_shape`` back to (M, K)."""
        return A.reshape(-1, self.n_classes)[: self.n_features]

    def compiled_form(self):
        """``(kernel_code, kernel_block)``: this prox in :func:`sparsesvm.solvers._kernels_jit.step`.

        Returns
        -------
        tuple of int or None
            None for a subclass that does not declare its own ``kernel_code``:
            its prox is its own, the compiled one does not apply.
        """
        if "kernel_code" not in type(self).__dict__:
            return None
        return self.kernel_code, self.kernel_block

    def _steps(self, tau, dtype, shape):
        """``tau`` as a ``dtype`` scalar, or a per-group step array as an array of ``shape``.

        ``shape`` is ``W.shape`` for the entry-wise proxes and ``(-1, 1)`` or
        ``(-1,)`` for the group rows of :class:`_GroupPenalty`.
        """
        if np.ndim(tau) == 0:
            return dtype.type(tau)
        return np.broadcast_to(np.asarray(tau, dtype=dtype), self.step_shape()).reshape(shape)

    # -- public API -------------------------------------------------------- #
    def value(self, X, *, check_input=True):
        """Value g(X) of the regulariser.

        Parameters
        ----------
        X : array_like, shape (n_features + 1, n_classes)
            Parameters; the last row (biases) is ignored.
        check_input : bool, default=True
            Validate shape, dtype and finiteness of ``X``. Solvers may pass
            False inside their loops for a float ndarray of the right shape.

        Returns
        -------
        float
        """
        if check_input:
            X = self._check_X(X)
        return self.weight_value(X[:-1])

    def weight_value(self, W):
        """g at the weights alone, unchecked.

        Parameters
        ----------
        W : ndarray, shape (n_features, n_classes)

        Returns
        -------
        float
        """
        return float(self._value(W.astype(np.float64, copy=False)))

    def prox(self, X, step, *, check_input=True):
        """Proximity operator of ``step * g``.

        Parameters
        ----------
        X : array_like, shape (n_features + 1, n_classes)
            Point; the last row (biases) is copied unchanged.
        step : float or ndarray of shape ``step_shape()``
            ``tau >= 0``, one for all groups or one per group.
        check_input : bool, default=True
            Validate ``X`` and ``step``. Solvers may pass False inside their
            loops (``X`` a float32/float64 ndarray of the right shape, ``step``
            finite and >= 0).

        Returns
        -------
        ndarray, shape (n_features + 1, n_classes)
            New array ``argmin_U step * g(U) + ||U - X||^2 / 2``, same float
            dtype as ``X``; ``X`` is not modified.
        """
        if check_input:
            X = self._check_X(X)
            tau = _check_step(step, self.step_shape())
        else:
            tau = float(step) if np.ndim(step) == 0 else step
        out = np.empty_like(X)
        out[-1] = X[-1]
        self._prox(X[:-1], tau, out[:-1])
        return out

    def weight_prox(self, W, step):
        """Proximity operator of ``step * g`` at the weights alone, unchecked.

        Parameters
        ----------
        W : ndarray, shape (n_features, n_classes)
            Float weights (others are converted to float64).
        step : float or ndarray broadcasting to ``step_shape()``
            ``>= 0``, one for all groups or one per group.

        Returns
        -------
        ndarray, shape (n_features, n_classes)
            A new array; ``W`` is not modified.
        """
        W = np.asarray(W)
        if W.dtype.kind != "f":
            W = W.astype(np.float64)
        out = np.empty_like(W)
        self._prox(W, float(step) if np.ndim(step) == 0 else step, out)
        return out

    def group_dual_norms(self, V):
        """Dual norm of every group of V.

        Parameters
        ----------
        V : ndarray, shape (n_features, n_classes)

        Returns
        -------
        ndarray, shape (n1, n2)
            Entry ``(i1, i2)`` for group ``(i1, i2)`` of :meth:`to_groups`.

        Raises
        ------
        ValueError
            For l2, which is not a norm.
        """
        raise ValueError(f"{self.name} is not a norm: no dual norm")

    def dual_norm(self, V):
        """Dual norm of V (shape (n_features, n_classes)): the largest group dual norm (float)."""
        norms = self.group_dual_norms(V)
        return float(norms.max()) if norms.size else 0.0

    @abc.abstractmethod
    def _value(self, W):
        """g at the weights W (M, K), float64."""

    @abc.abstractmethod
    def _prox(self, W, tau, out):
        """Write prox_{tau g}(W) into ``out`` (shape (M, K), not aliasing W).

        ``tau`` is a float or a per-group step array (see :meth:`_steps`).
        """


class L2Penalty(Penalty):
    """``g(X) = (1/2) sum_k ||w_k||_2^2`` (squared Frobenius norm of W, halved).

    Notes
    -----
    :math:`\\mathrm{prox}_{\\tau g}(W) = W / (1 + \\tau)`. The factor 1/2 is a
    convention (it only rescales alpha). Not a norm: no dual norm (the
    certificates use ``g* = ||.||^2 / 2``). Compiled form: ``kind == 0`` of
    :func:`sparsesvm.solvers._kernels_jit.step` (the scale ``1 / (1 + tau)``).
    """

    name = "l2"
    kernel_code = 0

    def _value(self, W):
        return 0.5 * np.vdot(W, W)

    def _prox(self, W, tau, out):
        np.divide(W, self._steps(1.0 + tau, W.dtype, W.shape), out=out)


class L1Penalty(Penalty):
    """``g(X) = sum_k ||w_k||_1``.

    Notes
    -----
    Soft thresholding: :math:`\\mathrm{prox}_{\\tau g}(W) =
    \\mathrm{sign}(W) \\max(|W| - \\tau, 0)`; dual norm ``max |V|``. Compiled
    form: ``kind == 1`` of :func:`sparsesvm.solvers._kernels_jit.step`
    (:func:`~sparsesvm.solvers._kernels_jit.apply`'s branch-free soft threshold).
    """

    name = "l1"
    kernel_code = 1

    def _value(self, W):
        return np.abs(W).sum(dtype=np.float64)

    def _prox(self, W, tau, out):
        np.abs(W, out=out)
        out -= self._steps(tau, W.dtype, W.shape)
        np.maximum(out, 0, out=out)
        np.copysign(out, W, out=out)

    def group_dual_norms(self, V):
        return np.abs(V)


class _GroupPenalty(Penalty):
    """Shared group bookkeeping: maps W (M, K) to group rows and back.

    For within-class blocks of size b, M = n_full * b + rem: W is reshaped to
    ``(n_blocks, b, K)`` (the last, shorter block zero-padded when rem > 0),
    transposed to ``(n_blocks, K, b)`` and viewed as ``(n_blocks * K, b)``: one
    group per row (row ``i * K + k``, the flat index of group ``(i, k)`` of
    :meth:`to_groups`), so every group is handled by one vectorised call. For
    ``"features"`` the group rows are the rows of W.
    """

    def __init__(self, n_features, n_classes, groups):
        super().__init__(n_features, n_classes, groups)
        if groups == "features":
            self._b = None
            self.layout, self.kernel_block = "features", 0
            self.group_shape = (self.n_features, self.n_classes, 1)
        else:
            self._b = int(groups)
            self._n_full, self._rem = divmod(self.n_features, self._b)
            self.layout, self.kernel_block = "blocks", self._b
            self.group_shape = (self._n_full + (self._rem > 0), self._b, self.n_classes)

    def to_groups(self, W):
        if self._b is not None and self._rem:
            pad = self._b - self._rem
            W = np.vstack([W, np.zeros((pad, self.n_classes), dtype=W.dtype)])
        return W.reshape(self.group_shape)

    def _group_rows(self, W):
        """Group matrix (a new array): one group per row, zero-padded to the block size.

        Returns an array of shape (n_blocks * K, b) (row i * K + k = block i
        of class k; the last, shorter block padded with zeros, which changes
        neither the norms nor the proxes below) or W itself for "features".
        """
        if self._b is None:
            return W
        M, K = W.shape
        b, nf, rem = self._b, self._n_full, self._rem
        # always a new array (callers may overwrite it), even when b or K is 1
        if rem == 0:
            G = np.empty((nf, K, b), dtype=W.dtype)
        else:
            G = np.zeros((nf + 1, K, b), dtype=W.dtype)
            G[nf, :, :rem] = W[nf * b:].T
        if nf:
            np.copyto(G[:nf], W[: nf * b].reshape(nf, b, K).transpose(0, 2, 1))
        return G.reshape(-1, b)

    def _apply_rows(self, W, fn, out):
        """Write a row-wise group map into ``out`` (M, K).

        ``fn(G, out)`` maps group rows (n, g) to (n, g), zeros to zeros, writing
        into ``out`` (which may alias its private input G) and returning it.
        """
        if self._b is None:
            fn(W, out)
            return out
        M, K = W.shape
        b, nf, rem = self._b, self._n_full, self._rem
        G = self._group_rows(W)  # a private copy: fn may overwrite it
        nb = nf + (rem > 0)
        res = fn(G, G).reshape(nb, K, b)
        if nf:
            np.copyto(out[: nf * b].reshape(nf, b, K), res[:nf].transpose(0, 2, 1))
        if rem:
            np.copyto(out[nf * b:], res[nf, :, :rem].T)
        return out

    def _group_reduce(self, W, fn):
        """Sum over groups of ``fn(rows, axis=1)`` (float64)."""
        return fn(self._group_rows(W), axis=1).sum(dtype=np.float64)


def _l2_along(A, axis):
    return np.sqrt((A * A).sum(axis=axis))


def _linf_along(A, axis):
    return np.abs(A).max(axis=axis)


def _l1_along(A, axis):
    return np.abs(A).sum(axis=axis)


class L12Penalty(_GroupPenalty):
    """``g(X) = sum_G ||X_G||_2`` (group lasso on the weights).

    Notes
    -----
    Group shrinkage: :math:`\\mathrm{prox}_{\\tau g}(X)_G =
    X_G \\max(0, 1 - \\tau / \\|X_G\\|_2)` (0 when :math:`X_G = 0`); the
    dual norm is the largest group l2 norm. Compiled form: ``kind == 2`` of
    :func:`sparsesvm.solvers._kernels_jit.step` (the shrink factor of
    :func:`~sparsesvm.solvers._kernels_jit.group_scale`).
    """

    name = "l12"
    kernel_code = 2

    def _value(self, W):
        return self._group_reduce(W, _l2_along)

    def _prox(self, W, tau, out):
        t = self._steps(tau, W.dtype, (-1, 1))

        def shrink(G, o):
            n = np.sqrt(np.einsum("ij,ij->i", G, G))[:, None]
            # max(0, 1 - t / n) as max(n - t, 0) / n: no overflow at n = 0 (where it is 0)
            s = np.maximum(n - t, 0)
            np.divide(s, n, out=s, where=n > 0)
            return np.multiply(G, s, out=o)

        self._apply_rows(W, shrink, out)

    def group_dual_norms(self, V):
        return _l2_along(self.to_groups(V), axis=1)


class L1InfPenalty(_GroupPenalty):
    """``g(X) = sum_G ||X_G||_inf``.

    Notes
    -----
    The dual norm of :math:`\\|\\cdot\\|_\\infty` is :math:`\\|\\cdot\\|_1` (the
    dual norm of g is the largest group l1 norm), so by Moreau's identity
    :math:`\\mathrm{prox}_{\\tau\\|\\cdot\\|_\\infty}(x) =
    x - P_{B_1(\\tau)}(x)` with :math:`B_1(\\tau)` the l1 ball of radius
    :math:`\\tau`, applied to every group at once (groups whose l1 norm is at
    most tau become exactly 0). Equivalently, per group,
    :math:`\\mathrm{sign}(x)\\min(|x|, t)` with :math:`t` the simplex threshold
    of :math:`|x|` at radius :math:`\\tau` (one sort per group outside the ball).
    Compiled form: ``kind == 3`` of :func:`sparsesvm.solvers._kernels_jit.step`
    (the clip level of :func:`~sparsesvm.solvers._kernels_jit.linf_clip`).
    """

    name = "l1inf"
    kernel_code = 3

    def _value(self, W):
        return self._group_reduce(W, _linf_along)

    def _prox(self, W, tau, out):
        t = self._steps(tau, W.dtype, (-1,))
        self._apply_rows(W, lambda G, o: _prox_linf_rows(G, t, o), out)

    def group_dual_norms(self, V):
        return _l1_along(self.to_groups(V), axis=1)


_CLASSES = {"l2": L2Penalty, "l1": L1Penalty, "l12": L12Penalty, "l1inf": L1InfPenalty}


def _check_name(name):
    if not isinstance(name, str) or name not in _CLASSES:
        raise ValueError(f"unknown penalty {name!r}; expected one of {PENALTIES}")


def check_groups(penalty, groups, n_features=None, method=None):
    """Check ``groups`` against the penalty (and the method, and the number of features).

    The one check of ``groups`` in the package (:func:`make_penalty`, the fit
    core and the workflow's config checks use it).

    Parameters
    ----------
    penalty : {"l2", "l1", "l12", "l1inf"}
    groups : None, int or "features"
        ``None`` for l2 and l1; for l12 and l1inf an int block size or
        ``"features"`` (numpy integers are accepted).
    n_features : int or None, default=None
        M; ``None`` skips the check ``groups <= M`` (before the data are read).
    method : str or None, default=None
        The fit's method; ``"ova"`` rules out ``groups="features"``.

    Returns
    -------
    None, int or "features"
        The normalised groups (a Python int for a block size).

    Raises
    ------
    ValueError
        Unknown penalty; groups given to l2/l1; missing for l12/l1inf; of the
        wrong type; outside ``1..n_features``; ``"features"`` with
        ``method="ova"``.
    """
    _check_name(penalty)
    if penalty in ("l2", "l1"):
        if groups is not None:
            raise ValueError(f"penalty {penalty!r} takes groups=None, got groups={groups!r}")
        return None
    if groups is None:
        raise ValueError(f"penalty {penalty!r} needs groups: an int block size or 'features'")
    if isinstance(groups, str) and groups == "features":
        if method == "ova":
            raise ValueError("method 'ova' cannot use across-class groups (groups='features'): "
                             "one-vs-all solves each class separately")
        return groups
    if isinstance(groups, (bool, np.bool_)) or not isinstance(groups, numbers.Integral):
        raise ValueError(f"groups must be an int block size or 'features', got {groups!r}")
    bound = "" if n_features is None else f"={n_features}"
    if groups <= 0:
        raise ValueError(f"group size must be in 1..n_features{bound}, got groups={groups} "
                         "(a block holds >= 1 feature)")
    if n_features is not None and groups > n_features:
        raise ValueError(f"group size must be in 1..n_features{bound}, got groups={groups} "
                         "(larger than the number of features)")
    return int(groups)


def make_penalty(name, groups, n_features, n_classes):
    """Build a penalty object.

    Parameters
    ----------
    name : {"l2", "l1", "l12", "l1inf"}
        Regulariser.
    groups : None, int or "features"
        ``None`` for ``l2`` and ``l1``; for ``l12`` and ``l1inf`` an int b
        (within-class blocks of b consecutive features, the last one shorter,
        ``1 <= b <= n_features``) or ``"features"`` (across-class groups: one
        feature's K weights).
    n_features : int
        M >= 1.
    n_classes : int
        K >= 1.

    Returns
    -------
    Penalty
        With ``.value(X)``, ``.prox(X, step)``, ``.dual_norm(V)``, ``.name``,
        ``.groups``; ``X`` has shape (n_features + 1, n_classes).

    Raises
    ------
    ValueError
        Unknown name; invalid sizes; the errors of :func:`check_groups`.
    """
    _check_name(name)
    for label, val in (("n_features", n_features), ("n_classes", n_classes)):
        if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 1:
            raise ValueError(f"{label} must be a positive integer, got {val!r}")
    return _CLASSES[name](n_features, n_classes, check_groups(name, groups, n_features))
