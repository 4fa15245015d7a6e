"""Shared helpers of the uniform samplers and the Hamming-k neighbourhoods of decoders.

``Decoder.sample_uniform`` draws outputs uniformly from the valid outputs of every example
(the outputs of finite score) and ``Decoder.neighbours`` lists the valid outputs at Hamming
distance 1 .. k from a given output. This module holds what the families share:

* :func:`check_random_state`: every sampler turns ``random_state`` into a
  ``numpy.random.Generator`` (``numpy.random.default_rng``), and draws all its random
  numbers from it *before* its compiled kernel runs, either as a table of uniforms laid
  out like the output or as one 64-bit seed per example for the in-kernel generator
  :func:`next_uniform` (splitmix64). The draws therefore depend on the seed only, never on
  the number of threads.
* the enumeration order of a neighbourhood (:func:`first_change`, :func:`next_change`):
  outputs at distance 1 first, then 2, ... k; within one distance j, the sets of changed
  positions p_1 < ... < p_j in lexicographic order; for one set, the new values in
  lexicographic order of (value at p_1, ..., value at p_j), each position running over
  the values other than its current one in increasing order.
* :func:`neighbourhood_bound` and the caps :data:`MAX_NEIGHBOUR_CANDIDATES` and
  :data:`MAX_NEIGHBOUR_ENTRIES`, checked before anything is allocated.
"""

from math import comb
from numbers import Integral

import numpy as np
from numba import njit

__all__ = [
    "MAX_NEIGHBOUR_CANDIDATES",
    "MAX_NEIGHBOUR_ENTRIES",
    "check_n_draws",
    "check_neighbourhood_size",
    "check_random_state",
    "example_seeds",
    "alternative_value",
    "check_neighbour_entries",
    "first_change",
    "neighbourhood_bound",
    "next_change",
    "next_uniform",
]

#: Most candidate outputs (outputs at distance 1 .. k, valid or not) that
#: ``neighbours`` enumerates for one example: Σ_{j=1..k} C(n, j) (m − 1)^j for n
#: positions of m values each. Above it ``neighbours`` raises a ``ValueError`` before any
#: work (for instance trees of 50 tokens with k = 2: 2.9 million candidates).
MAX_NEIGHBOUR_CANDIDATES = 1_000_000

#: Most entries (int64) of the ``paths`` that ``neighbours`` returns: n_entries × the
#: largest neighbourhood, 2^27 entries (1 GiB). Above it ``neighbours`` raises a
#: ``ValueError`` after counting, before allocating the paths.
MAX_NEIGHBOUR_ENTRIES = 2**27

_NJIT = dict(cache=True, nogil=True)


def check_random_state(random_state):
    """A ``numpy.random.Generator`` from ``random_state``.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        None draws fresh entropy; an int seeds ``numpy.random.default_rng``; a Generator
        is used as it is (its state advances); a RandomState gives one seed
        (``randint``), which seeds ``default_rng`` (its state advances by one draw).

    Returns
    -------
    numpy.random.Generator
    """
    if random_state is None or (isinstance(random_state, Integral)
                                and not isinstance(random_state, (bool, np.bool_))):
        if random_state is not None and random_state < 0:
            raise ValueError(f"random_state must be a non-negative int; got {random_state}.")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    raise TypeError(
        "random_state must be None, an int, a numpy.random.Generator or a "
        f"numpy.random.RandomState; got {type(random_state).__name__}."
    )


def check_n_draws(n_draws):
    """``n_draws`` as an int, or a clear error unless it is an integer >= 1."""
    from .checks import check_k

    return check_k(n_draws, "n_draws")


def example_seeds(rng, n_examples):
    """One 64-bit seed per example for :func:`next_uniform`, shape (n_examples,),
    uint64."""
    return rng.integers(0, 2**64, size=n_examples, dtype=np.uint64, endpoint=False)


@njit(inline="always")
def next_uniform(state):
    """A uniform float in [0, 1) from the splitmix64 stream ``state`` (an array of one
    uint64, advanced in place).

    splitmix64 (Steele, Lea & Flood 2014): the state advances by the golden-ratio
    increment and is mixed by two multiply-xorshift rounds; the top 53 bits make the
    float.
    """
    s = state[0] + np.uint64(0x9E3779B97F4A7C15)
    state[0] = s
    z = s
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(inline="always")
def first_change(j, positions, alternatives):
    """The first change of ``j`` positions: positions 0 .. j − 1, first alternatives.

    ``positions[:j]`` holds the changed positions (increasing) and ``alternatives[:j]``
    the index of each new value among the m − 1 values other than the current one
    (index a is the value a below the current value, a + 1 from it on).
    """
    for i in range(j):
        positions[i] = i
        alternatives[i] = 0


@njit(inline="always")
def next_change(j, positions, alternatives, n_positions, n_alternatives):
    """Advance to the next change of ``j`` positions in the documented order; False when
    done. The alternatives run fastest (the last position's first), then the positions
    (lexicographic combinations of ``n_positions``); every position has
    ``n_alternatives`` alternatives (>= 1)."""
    for i in range(j - 1, -1, -1):
        if alternatives[i] + 1 < n_alternatives:
            alternatives[i] += 1
            for r in range(i + 1, j):
                alternatives[r] = 0
            return True
    for i in range(j - 1, -1, -1):
        if positions[i] < n_positions - j + i:
            positions[i] += 1
            for r in range(i + 1, j):
                positions[r] = positions[r - 1] + 1
            for r in range(j):
                alternatives[r] = 0
            return True
    return False


@njit(inline="always")
def alternative_value(alternative, current):
    """The new value of alternative index ``alternative`` for a position whose value is
    ``current``: the values other than ``current`` in increasing order."""
    return alternative if alternative < current else alternative + 1


def neighbourhood_bound(n_positions, n_values, k):
    """Σ_{j=1..min(k, n)} C(n, j) (m − 1)^j: the candidates at distance 1 .. k, valid or
    not, as exact Python ints.

    Parameters
    ----------
    n_positions : array-like of int
        n, the positions of each example.
    n_values : array-like of int
        m, the values of each position of each example.
    k : int

    Returns
    -------
    list of int
    """
    bounds = {}
    out = []
    for n, m in zip(np.ravel(n_positions).tolist(), np.ravel(n_values).tolist()):
        key = (n, m)
        if key not in bounds:
            bounds[key] = sum(comb(n, j) * (m - 1) ** j for j in range(1, min(k, n) + 1))
        out.append(bounds[key])
    return out


def check_neighbourhood_size(n_positions, n_values, k, example="example"):
    """Raise a clear ``ValueError`` when an example has more than
    :data:`MAX_NEIGHBOUR_CANDIDATES` candidates at distance 1 .. k."""
    bounds = neighbourhood_bound(n_positions, n_values, k)
    if not bounds:
        return
    largest = max(bounds)
    if largest > MAX_NEIGHBOUR_CANDIDATES:
        i = bounds.index(largest)
        raise ValueError(
            f"The Hamming-{k} neighbourhood of {example} {i} has {largest:,} candidate "
            f"outputs (Σ_j C(n, j) (m − 1)^j for n = {np.ravel(n_positions)[i]} positions of "
            f"m = {np.ravel(n_values)[i]} values), more than the "
            f"{MAX_NEIGHBOUR_CANDIDATES:,} that neighbours() enumerates per example; use a "
            "smaller k or shorter examples."
        )


def check_neighbour_entries(n_entries, counts):
    """Raise a clear ``ValueError`` when the paths of the neighbourhoods would hold more
    than :data:`MAX_NEIGHBOUR_ENTRIES` entries."""
    width = int(counts.max()) if counts.size else 0
    if n_entries * width > MAX_NEIGHBOUR_ENTRIES:
        raise ValueError(
            f"The neighbourhoods would take {n_entries:,} x {width:,} entries, more than "
            f"the {MAX_NEIGHBOUR_ENTRIES:,} (1 GiB) that neighbours() allocates; split the "
            "batch or use a smaller k."
        )
