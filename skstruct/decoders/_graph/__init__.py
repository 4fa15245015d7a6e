"""MAP inference over batches of pairwise graphs with multi-state nodes.

- ``kernels.py``: the compiled per-graph max-product (exact on forests, loopy with
  iterated conditional modes on graphs with cycles) and the batch entry points.
"""

from .kernels import graph_loss_augmented_map, graph_map, graph_scores

__all__ = ["graph_loss_augmented_map", "graph_map", "graph_scores"]
