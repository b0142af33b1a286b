"""The certified engines of ``solver="accelerated"``: each fit stops on a duality gap.

- :mod:`~sparsesvm.solvers.accelerated.hinge`: the exact multiclass hinge
  (the driver: engine choice, working sets, certificates), with its engines
  :mod:`~sparsesvm.solvers.accelerated.colgen` (column generation with an LP
  master), :mod:`~sparsesvm.solvers.accelerated.qp` (the l2 dual QP) and
  :mod:`~sparsesvm.solvers.accelerated.pdhg` (restarted PDHG), HiGHS from
  :mod:`~sparsesvm.solvers.accelerated.highs`;
- :mod:`~sparsesvm.solvers.accelerated.l2dual`: dual coordinate descent for
  the l2 penalty;
- :mod:`~sparsesvm.solvers.accelerated.smooth`: working-set coordinate descent
  for the square, logit and one-vs-all baselines.

:mod:`~sparsesvm.solvers.accelerated.hinge` and :mod:`~sparsesvm.solvers.accelerated.smooth`
register themselves as the ``"accelerated"`` solver of their methods
(:func:`sparsesvm.solvers.registry.register_solver`) when imported.
"""
