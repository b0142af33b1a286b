"""The model: the paper's operator, penalties, projections and duality certificates.

- :mod:`~sparsesvm.model.operator`: the linear operator T (margins of every
  class pair), its adjoint and norm;
- :mod:`~sparsesvm.model.penalties`: l2, l1, l1,2 and l1,inf (value, prox,
  dual norm);
- :mod:`~sparsesvm.model.projections`: the simplex, l1-ball, half-space and
  hinge-epigraph projections of the spec;
- :mod:`~sparsesvm.model.certificates`: the duality gaps that certify a fit.
"""
