"""The certified engines of ``solver="accelerated"``: each fit stops on a duality gap.

- :mod:`~sparsesvm.solvers.accelerated.hinge`: the exact multiclass hinge
  (column generation with an LP/QP master, restarted PDHG);
- :mod:`~sparsesvm.solvers.accelerated.l2dual`: dual coordinate descent for
  the l2 penalty;
- :mod:`~sparsesvm.solvers.accelerated.smooth`: working-set coordinate descent
  for the square, logit and one-vs-all baselines.

Each module registers itself as the ``"accelerated"`` solver of its methods
(:func:`sparsesvm.solvers.registry.register_solver`) when imported.
"""
