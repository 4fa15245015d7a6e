"""Training on a Dask cluster: estimators that take ``dask.bag`` collections.

In the style of XGBoost's and LightGBM's Dask estimators, each is a subclass of a local
estimator with a ``client`` (and a ``vectorizer``) parameter; its fitted model is the
local estimator's (:meth:`to_local`), and ``predict`` on a ``dask.bag`` returns one.

- :class:`DaskCRF`, :class:`DaskSparseMAPClassifier`: full-batch L-BFGS / OWL-QN run on
  the client; every evaluation sends the weights to the workers and sums the
  partitions' (value, gradient) pairs as a tree.
- :class:`DaskStructuredSVM`: the one-slack cutting plane on the client, each
  iteration's most violated constraint summed over the partitions as a tree; or the
  subgradient solver by iterative parameter mixing.
- :class:`DaskStructuredPerceptron`: iterative parameter mixing (McDonald, Hall & Mann
  2010).

Importing this module does not import Dask; fitting needs ``dask[distributed]`` (the
``dask`` extra). See :doc:`/user_guide/cluster`.

Modules: ``_estimators.py`` (the estimators), ``_ssvm.py`` (the structured SVM's
estimator, distributed constraints and mixing loop), ``_ssvm_shards.py`` (its tasks on
the workers), ``_cluster.py`` (the client's side: the
shards, tree reductions, the distributed objective), ``_shards.py`` (what runs on the
workers).
"""

from ._estimators import DaskCRF, DaskSparseMAPClassifier, DaskStructuredPerceptron
from ._shards import PartitionError
from ._ssvm import DaskStructuredSVM

__all__ = ["DaskCRF", "DaskSparseMAPClassifier", "DaskStructuredPerceptron",
           "DaskStructuredSVM", "PartitionError"]
