"""What every decoder family shares.

- ``decoder.py``: :class:`Decoder`, the interface (operations, capabilities, the generic
  loss-augmented MAP over the family hooks);
- ``checks.py``: the checks every operation runs (scores, offsets, encoded outputs, ``k``,
  task losses) and :class:`InfeasibleOutputError`;
- ``unary.py``: score and part containers of outputs scored by one row per example;
- ``sampling.py``: helpers of the uniform samplers and Hamming-k neighbourhoods;
- ``best_neighbour.py``: the best neighbour by listing the neighbourhood (any decoder);
- ``statistic_table.py``: count-statistic tables and their memory limit;
- ``engine_protocol.py``: what a decoder offers the compiled engine (codes,
  ``CompiledOracle``); ``smoothing.py``: what the smoothed oracles share;
- ``enumeration.py``: the base of the families' slow references;
- ``registry.py``: the family registry (``DecoderFamily``, ``register_family``).
"""
