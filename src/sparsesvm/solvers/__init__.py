"""The solvers: the paper's algorithms, the baselines, and the certified engines.

- :mod:`~sparsesvm.solvers.paper`: Algorithms 1 and 2 of the paper
  (hinge-reg, hinge-con);
- :mod:`~sparsesvm.solvers.baselines`: the methods compared against: the
  linear-constraint FBPD (hinge-lin), square by FISTA, logit by
  forward-backward, one-vs-all;
- :mod:`~sparsesvm.solvers._loop`: the one primal-dual loop that runs
  hinge-reg, hinge-con and hinge-lin (clock, trace, stopping rule, result);
- :mod:`~sparsesvm.solvers.accelerated`: the engines that reach a certified
  duality gap (column generation, PDHG, dual coordinate descent for l2,
  working-set coordinate descent for the smooth losses);
- :mod:`~sparsesvm.solvers._kernels`: the compiled (numba) steps of the
  paper's algorithms.
"""

from ._loop import DEFAULT_STEP_RATIO, SolverResult
from .baselines import hinge_lin, logit, ova, square
from .paper import hinge_con, hinge_reg

__all__ = ["DEFAULT_STEP_RATIO", "SolverResult", "hinge_con", "hinge_lin", "hinge_reg",
           "logit", "ova", "square"]
