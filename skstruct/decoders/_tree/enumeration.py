"""The tree family's slow reference: every dependency tree of every sentence."""

import numpy as np

from .._core.enumeration import ArcFactoredEnumeration
from .decoder import TreeDecoder, TreeParts, enumerate_trees

__all__ = ['TreeEnumeration']


class TreeEnumeration(ArcFactoredEnumeration):
    def size(self, scores):
        lengths = scores.lengths
        if lengths.size == 0:
            return None
        i = int(np.argmax(lengths))
        n = int(lengths[i])
        return n**n, i, f"head assignments to sift ({n} words)", "sentence"

    def block_outputs(self, block):
        return enumerate_trees(block.shape[0], self.decoder.projective,
                               self.decoder.single_root)

    def parts_of(self, scores, unary):
        return TreeParts(unary, scores.offsets)

    def family_decoder(self):
        return TreeDecoder(projective=self.decoder.projective,
                           single_root=self.decoder.single_root)
