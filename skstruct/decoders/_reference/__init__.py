"""The reference every decoder is tested against.

- ``brute_force.py``: :class:`BruteForceDecoder`, inference by enumerating the outputs.
"""
