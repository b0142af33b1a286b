"""The data-fit losses of the paper's problems, written once.

With ``T X`` of shape (L, K) (:class:`~sparsesvm.model.operator.MulticlassOperator`:
``(T X)[l, k] = S[l, k] - S[l, z_l]`` for the scores ``S = Phi W + 1 b^T``) and
the offsets ``R`` (1 off the true class, 0 on it), the *margins* are
``Z = T X + R``: ``Z[l, k] = 1 + S[l, k] - S[l, z_l]`` off the class, 0 on it.

==========================  =====================================================
loss (sum over samples l)   per sample
==========================  =====================================================
multiclass hinge            ``h_l = max_k Z[l, k]``  (paper, eq. (2))
squared hinge (square)      ``sum_{k != z_l} max(0, Z[l, k])^2``
logistic (logit)            ``log sum_k exp(Z[l, k])`` (the z_l term is exp(0) = 1)
one-vs-all squared hinge    ``sum_k max(0, 1 - y_lk S[l, k])^2``, ``y_lk = +1`` iff k = z_l
==========================  =====================================================

The solvers call these with ``(T X, R)``; the certificates and the working-set
solvers, which hold scores, call :func:`smooth_loss`. All return Python floats
(:func:`hinge_losses`: one value per sample).
"""

import numpy as np

__all__ = [
    "margins",
    "hinge_losses",
    "hinge_loss",
    "squared_hinge_loss",
    "logistic_loss",
    "ova_signs",
    "ova_squared_hinge_loss",
    "smooth_loss",
]


def margins(S, y_idx):
    """The margins ``Z = T X + R`` from the scores.

    Parameters
    ----------
    S : ndarray, shape (L, K)
        Scores ``Phi W + 1 b^T``.
    y_idx : int ndarray, shape (L,)
        Class index ``z_l`` of every sample.

    Returns
    -------
    ndarray, shape (L, K)
        ``1 + S[l, k] - S[l, z_l]`` off the class, exactly 0 on it (a new array).
    """
    ar = np.arange(S.shape[0])
    Z = S - S[ar, y_idx][:, None] + 1.0
    Z[ar, y_idx] = 0.0
    return Z


def hinge_losses(TX, R):
    """Multiclass hinge of every sample, ``h_l((T X)_l) = max_k (TX + R)[l, k]``.

    Parameters
    ----------
    TX, R : ndarray, shape (L, K)

    Returns
    -------
    ndarray, shape (L,)
    """
    return (TX + R).max(axis=1)


def hinge_loss(TX, R):
    """Total multiclass hinge ``sum_l max_k (TX + R)[l, k]`` (float); TX, R of shape (L, K)."""
    return float(hinge_losses(TX, R).sum())


def _squared_hinge(Z):
    P = np.maximum(Z, 0.0)
    return float(np.vdot(P, P))


def _logistic(Z):
    m = Z.max(axis=1)
    return float(np.sum(m + np.log(np.exp(Z - m[:, None]).sum(axis=1))))


def squared_hinge_loss(TX, R):
    """``sum_l sum_{k != z_l} max(0, (TX + R)[l, k])**2`` (float); the z_l entries are 0.

    Parameters
    ----------
    TX, R : ndarray, shape (L, K)
    """
    return _squared_hinge(TX + R)


def logistic_loss(TX, R):
    """``sum_l log sum_k exp((TX + R)[l, k])`` (float), computed stably (row maxima shifted out).

    Parameters
    ----------
    TX, R : ndarray, shape (L, K)
    """
    return _logistic(TX + R)


def ova_signs(y_idx, n_classes):
    """The binary labels of one-vs-all: ``y_lk = +1`` if ``k = z_l`` else ``-1``, shape (L, K)."""
    L = len(y_idx)
    Ypm = -np.ones((L, n_classes))
    Ypm[np.arange(L), y_idx] = 1.0
    return Ypm


def ova_squared_hinge_loss(S, Ypm):
    """``sum_l sum_k max(0, 1 - Ypm[l, k] S[l, k])**2`` (float); S, Ypm of shape (L, K)."""
    return _squared_hinge(1.0 - Ypm * S)


def smooth_loss(method, S, y_idx):
    """Total loss of a smooth baseline at the scores S.

    Parameters
    ----------
    method : {"square", "logit", "ova"}
    S : ndarray, shape (L, K)
        Scores ``Phi W + 1 b^T``.
    y_idx : int ndarray, shape (L,)

    Returns
    -------
    float
        :func:`squared_hinge_loss`, :func:`logistic_loss` or
        :func:`ova_squared_hinge_loss` at that point.
    """
    if method == "ova":
        return ova_squared_hinge_loss(S, ova_signs(y_idx, S.shape[1]))
    Z = margins(S, y_idx)
    return _squared_hinge(Z) if method == "square" else _logistic(Z)
