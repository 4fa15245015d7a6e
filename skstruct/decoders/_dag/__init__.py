"""The family of directed acyclic graphs with bounded in-degree.

- ``decoder.py``: :class:`DAGScores`, :class:`DAGParts`, :class:`DAGDecoder`;
- ``kernels.py``: the compiled enumeration of the parent sets;
- ``registration.py``: the family's registration.
"""
