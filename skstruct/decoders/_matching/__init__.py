"""The bipartite-matching family.

- ``decoder.py``: :class:`MatchingScores`, :class:`MatchingParts`, :class:`MatchingDecoder`
  (MAP by linear assignment; no partition function, which is #P-hard);
- ``enumeration.py``: its slow reference; ``registration.py``: its registration.
"""
