"""The matching family's slow reference: every matching of every example."""

import math

import numpy as np

from .._core.enumeration import ArcFactoredEnumeration
from .decoder import MatchingDecoder, MatchingParts, enumerate_matchings

__all__ = ['MatchingEnumeration']


class MatchingEnumeration(ArcFactoredEnumeration):
    def size(self, scores):
        counts = [math.perm(int(max(r, c)), int(min(r, c))) for r, c in scores.shapes]
        if not counts:
            return None
        i = int(np.argmax(counts))
        shape = tuple(int(n) for n in scores.shapes[i])
        return counts[i], i, f"matchings (shape {shape})", "example"

    def block_outputs(self, block):
        return enumerate_matchings(*block.shape)

    def parts_of(self, scores, unary):
        return MatchingParts(unary, scores.shapes)

    def family_decoder(self):
        return MatchingDecoder()


#: The enumeration of every score family BruteForceDecoder reads.
