"""HiGHS' incremental interface for the LP and QP engines of :mod:`sparsesvm.solvers.accelerated.hinge`.

:data:`highspy` is scipy's bundled interface (scipy >= 1.15) or the ``highspy``
package, and :data:`Highs` its model class; both None when neither is there
(the column generation then rebuilds its master with ``scipy.optimize.linprog``,
and the l2 dual QP is not offered). The engines read them from this module at
call time, so a test can set them to None.
"""

__all__ = ["highspy", "Highs"]


def _backend():
    """Incremental HiGHS interface: scipy's bundled one (scipy >= 1.15, silent),
    else the ``highspy`` package, else None (scipy.optimize.linprog is used,
    rebuilding the master each round: same result, slower)."""
    try:
        from scipy.optimize._highspy import _core as core

        _ = core._Highs, core.kHighsInf, core.HighsModelStatus.kOptimal  # AttributeError if absent
        return core, core._Highs
    except (ImportError, AttributeError):
        pass
    try:  # pragma: no cover - depends on the environment
        import highspy

        return highspy, highspy.Highs
    except ImportError:  # pragma: no cover
        return None, None


highspy, Highs = _backend()
