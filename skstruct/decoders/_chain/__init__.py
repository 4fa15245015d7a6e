"""The linear-chain family (sequence labelling).

- ``decoder.py``: :class:`ChainScores`, :class:`ChainParts`, :class:`ChainDecoder`;
- ``kernels.py``: Viterbi, forward–backward, top-K and sampling over batches of chains;
- ``constraints.py``: :class:`ChainConstraints` (allowed transitions, BIO / BIOES);
- ``neighbour_kernels.py``: the best Hamming-1 neighbour;
- ``counting.py`` and ``counting_kernels.py``: exact loss-augmented inference of
  count-statistic losses (F-beta, recall, label counts) by statistic-augmented Viterbi;
- ``oracle.py`` and ``smoothed.py``: the chain family of the compiled per-example
  engine (loss-augmented and smoothed oracles);
- ``enumeration.py``: its slow reference; ``registration.py``: its registration.
"""
