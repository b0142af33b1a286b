"""Regularisers g of the sparse multiclass SVM and their proximity operators.

The parameter matrix ``X`` has shape ``(n_features + 1, n_classes)``: column k
is ``[w_k; b_k]``, the last row holds the biases, which are never penalised and
pass through every prox unchanged.

Penalties (``W = X[:-1]``, shape (M, K)):

==========  =============================================  ===========================
name        value g(X)                                     groups
==========  =============================================  ===========================
``l2``      (1/2) sum_k ||w_k||_2^2                        None
``l1``      sum_k ||w_k||_1                                None
``l12``     sum_G ||X_G||_2                                int b or ``"features"``
``l1inf``   sum_G ||X_G||_inf                              int b or ``"features"``
==========  =============================================  ===========================

Group kinds:

- ``groups = b`` (int, 1 <= b <= M): *within-class blocks*; each w_k is cut into
  consecutive blocks of b features, the last block shorter when b does not
  divide M; a group is one block of one class (K * ceil(M / b) groups).
- ``groups = "features"``: *across-class* groups; a group is row j of W, the K
  weights of feature j (M groups).

All computations are vectorised: the within-class blocks are reshaped to one
group per row (the shorter last block zero-padded, which changes no norm and no
prox), the across-class groups are the rows of W. ``prox`` keeps the float
dtype of ``X`` (float32 stays float32, integers give float64); ``value`` is
accumulated in float64.
"""

from __future__ import annotations

import abc
import numbers

import numpy as np

from .projections import _prox_linf_rows

__all__ = ["Penalty", "L2Penalty", "L1Penalty", "L12Penalty", "L1InfPenalty", "make_penalty"]

PENALTIES = ("l2", "l1", "l12", "l1inf")


def _check_step(step):
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
    """

    name = None

    def __init__(self, n_features, n_classes, groups=None):
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)
        self.groups = groups

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
        return float(self._value(X[:-1].astype(np.float64, copy=False)))

    def prox(self, X, step, *, check_input=True):
        """Proximity operator of ``step * g``.

        Parameters
        ----------
        X : array_like, shape (n_features + 1, n_classes)
            Point; the last row (biases) is copied unchanged.
        step : float
            ``tau >= 0``.
        check_input : bool, default=True
            Validate ``X`` and ``step``. Solvers may pass False inside their
            loops (``X`` a float32/float64 ndarray of the right shape, ``step``
            a finite float >= 0).

        Returns
        -------
        ndarray, shape (n_features + 1, n_classes)
            New array ``argmin_U step * g(U) + ||U - X||^2 / 2``, same float
            dtype as ``X``; ``X`` is not modified.
        """
        if check_input:
            X = self._check_X(X)
            tau = _check_step(step)
        else:
            tau = float(step)
        out = np.empty_like(X)
        out[-1] = X[-1]
        self._prox(X[:-1], tau, out[:-1])
        return out

    @abc.abstractmethod
    def _value(self, W):
        """g at the weights W (M, K), float64."""

    @abc.abstractmethod
    def _prox(self, W, tau, out):
        """Write prox_{tau g}(W) into ``out`` (shape (M, K), not aliasing W)."""


class L2Penalty(Penalty):
    """``g(X) = (1/2) sum_k ||w_k||_2^2`` (squared Frobenius norm of W, halved).

    Notes
    -----
    :math:`\\mathrm{prox}_{\\tau g}(W) = W / (1 + \\tau)`. The factor 1/2 is a
    convention (it only rescales alpha).
    """

    name = "l2"

    def _value(self, W):
        return 0.5 * np.vdot(W, W)

    def _prox(self, W, tau, out):
        np.divide(W, W.dtype.type(1.0 + tau), out=out)


class L1Penalty(Penalty):
    """``g(X) = sum_k ||w_k||_1``.

    Notes
    -----
    Soft thresholding: :math:`\\mathrm{prox}_{\\tau g}(W) =
    \\mathrm{sign}(W) \\max(|W| - \\tau, 0)`.
    """

    name = "l1"

    def _value(self, W):
        return np.abs(W).sum(dtype=np.float64)

    def _prox(self, W, tau, out):
        np.abs(W, out=out)
        out -= W.dtype.type(tau)
        np.maximum(out, 0, out=out)
        np.copysign(out, W, out=out)


class _GroupPenalty(Penalty):
    """Shared group bookkeeping: maps W (M, K) to group rows and back.

    For within-class blocks of size b, M = n_full * b + rem: W is reshaped to
    ``(n_blocks, b, K)`` (the last, shorter block zero-padded when rem > 0),
    transposed to ``(n_blocks, K, b)`` and viewed as ``(n_blocks * K, b)``: one
    group per row, so every group is handled by one vectorised call. For
    ``"features"`` the group rows are the rows of W.
    """

    def __init__(self, n_features, n_classes, groups):
        super().__init__(n_features, n_classes, groups)
        if groups == "features":
            self._b = None
        else:
            self._b = int(groups)
            self._n_full, self._rem = divmod(self.n_features, self._b)

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


class L12Penalty(_GroupPenalty):
    """``g(X) = sum_G ||X_G||_2`` (group lasso on the weights).

    Notes
    -----
    Group shrinkage: :math:`\\mathrm{prox}_{\\tau g}(X)_G =
    X_G \\max(0, 1 - \\tau / \\|X_G\\|_2)` (0 when :math:`X_G = 0`).
    """

    name = "l12"

    def _value(self, W):
        return self._group_reduce(W, _l2_along)

    def _prox(self, W, tau, out):
        t = W.dtype.type(tau)

        def shrink(G, o):
            n = np.sqrt(np.einsum("ij,ij->i", G, G))[:, None]
            # max(0, 1 - t / n) as max(n - t, 0) / n: no overflow at n = 0 (where it is 0)
            s = np.maximum(n - t, 0)
            np.divide(s, n, out=s, where=n > 0)
            return np.multiply(G, s, out=o)

        self._apply_rows(W, shrink, out)


class L1InfPenalty(_GroupPenalty):
    """``g(X) = sum_G ||X_G||_inf``.

    Notes
    -----
    The dual norm of :math:`\\|\\cdot\\|_\\infty` is :math:`\\|\\cdot\\|_1`, so by
    Moreau's identity :math:`\\mathrm{prox}_{\\tau\\|\\cdot\\|_\\infty}(x) =
    x - P_{B_1(\\tau)}(x)` with :math:`B_1(\\tau)` the l1 ball of radius
    :math:`\\tau`, applied to every group at once (groups whose l1 norm is at
    most tau become exactly 0). Equivalently, per group,
    :math:`\\mathrm{sign}(x)\\min(|x|, t)` with :math:`t` the simplex threshold
    of :math:`|x|` at radius :math:`\\tau` (one sort per group outside the ball).
    """

    name = "l1inf"

    def _value(self, W):
        return self._group_reduce(W, _linf_along)

    def _prox(self, W, tau, out):
        t = W.dtype.type(tau)
        self._apply_rows(W, lambda G, o: _prox_linf_rows(G, t, o), out)


_CLASSES = {"l2": L2Penalty, "l1": L1Penalty, "l12": L12Penalty, "l1inf": L1InfPenalty}


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
        With ``.value(X)``, ``.prox(X, step)``, ``.name``, ``.groups``;
        ``X`` has shape (n_features + 1, n_classes).

    Raises
    ------
    ValueError
        Unknown name; groups given to l2/l1; groups missing, <= 0, larger than
        n_features or of the wrong type for l12/l1inf; invalid sizes.
    """
    if not isinstance(name, str) or name not in _CLASSES:
        raise ValueError(f"unknown penalty {name!r}; expected one of {PENALTIES}")
    for label, val in (("n_features", n_features), ("n_classes", n_classes)):
        if isinstance(val, bool) or not isinstance(val, numbers.Integral) or val < 1:
            raise ValueError(f"{label} must be a positive integer, got {val!r}")
    if name in ("l2", "l1"):
        if groups is not None:
            raise ValueError(
                f"penalty {name!r} takes groups=None, got groups={groups!r}"
            )
        return _CLASSES[name](n_features, n_classes, None)
    if groups is None:
        raise ValueError(
            f"penalty {name!r} needs groups: an int block size or 'features'"
        )
    if isinstance(groups, str):
        if groups != "features":
            raise ValueError(
                f"groups must be an int block size or 'features', got {groups!r}"
            )
        return _CLASSES[name](n_features, n_classes, "features")
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise ValueError(
            f"groups must be an int block size or 'features', got {groups!r}"
        )
    if groups <= 0:
        raise ValueError(f"group size must be >= 1, got {groups}")
    if groups > n_features:
        raise ValueError(
            f"group size {groups} is larger than the number of features {n_features}"
        )
    return _CLASSES[name](n_features, n_classes, int(groups))
