"""The model: the paper's operator, penalties, losses, projections and duality certificates.

- :mod:`~sparsesvm.model.operator`: the linear operator T (margins of every
  class pair), its adjoint and norm (:func:`~sparsesvm.model.operator.power_norm`,
  the one power iteration);
- :mod:`~sparsesvm.model.penalties`: l2, l1, l1,2 and l1,inf, each class owning
  its value, prox (scalar or per-group steps), dual norm, group layout and
  compiled form; :func:`~sparsesvm.model.penalties.check_groups`, the one check
  of the ``groups`` argument;
- :mod:`~sparsesvm.model.losses`: the multiclass hinge, squared hinge, logistic
  and one-vs-all losses;
- :mod:`~sparsesvm.model.projections`: the simplex, l1-ball, half-space and
  hinge-epigraph projections of the spec;
- :mod:`~sparsesvm.model.certificates`: the duality gaps that certify a fit
  (through the penalty objects' values and dual norms).
"""
