"""A family registered from outside the package gets the generic decoder tests.

A toy family, two-state chains decoded by plain Python enumeration, is registered with
one :func:`~skstruct.decoders._core.registry.register_family` call in the conftest of a
separate pytest run of ``test_family_contract.py``; its tests come from the registration
alone. A toy decoder whose MAP is wrong makes those tests fail, so they test it.
"""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

TOY = '''
import itertools

import numpy as np
from scipy.special import logsumexp

from skstruct.decoders import ChainParts, ChainScores, Decoder
from skstruct.decoders._chain.enumeration import ChainEnumeration
from skstruct.decoders._core import registry
from skstruct.decoders._core.registry import DecoderFamily, TinyBatch, register_family

BROKEN = {broken}


class ToyScores(ChainScores):
    """Two-state chains."""


class ToyDecoder(Decoder):
    capabilities = frozenset({{"map", "marginals", "parts"}})
    score_types = ToyScores

    def _labelings(self, scores, i):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        for y in itertools.product((0, 1), repeat=int(b - a)):
            theta = scores.start[y[0]] + scores.end[y[-1]]
            theta += sum(scores.unary[a + t, s] for t, s in enumerate(y))
            theta += sum(scores.transition[p, q] for p, q in zip(y[:-1], y[1:]))
            yield np.array(y), theta

    def map(self, scores, *, return_score=False):
        self._check_scores(scores)
        labels, best = [], []
        for i in range(scores.n_examples):
            y, theta = max(self._labelings(scores, i), key=lambda pair: pair[1])
            labels.append(np.zeros_like(y) if BROKEN else y)
            best.append(theta)
        labels = np.concatenate(labels)
        return (labels, np.array(best)) if return_score else labels

    def log_partition(self, scores):
        self._check_scores(scores)
        return np.array([logsumexp([t for _, t in self._labelings(scores, i)])
                         for i in range(scores.n_examples)])

    def marginals(self, scores):
        log_z = self.log_partition(scores)
        unary = np.zeros_like(scores.unary)
        transition = np.zeros((scores.n_examples, 2, 2))
        start, end = np.zeros((scores.n_examples, 2)), np.zeros((scores.n_examples, 2))
        for i in range(scores.n_examples):
            a = scores.offsets[i]
            for y, theta in self._labelings(scores, i):
                p = np.exp(theta - log_z[i])
                unary[a + np.arange(len(y)), y] += p
                for s, t in zip(y[:-1], y[1:]):
                    transition[i, s, t] += p
                start[i, y[0]] += p
                end[i, y[-1]] += p
        return log_z, ChainParts(unary, transition, start, end, scores.offsets)

    def parts(self, scores, y):
        self._check_scores(scores)
        y = np.asarray(y)
        unary = np.eye(2)[y]
        transition = np.zeros((scores.n_examples, 2, 2))
        start, end = np.zeros((scores.n_examples, 2)), np.zeros((scores.n_examples, 2))
        for i in range(scores.n_examples):
            seq = y[scores.offsets[i]:scores.offsets[i + 1]]
            for s, t in zip(seq[:-1], seq[1:]):
                transition[i, s, t] += 1
            start[i, seq[0]], end[i, seq[-1]] = 1, 1
        return ChainParts(unary, transition, start, end, scores.offsets)


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    offsets = np.concatenate(([0], np.cumsum(rng.integers(1, size + 1, n_examples))))
    arrays = dict(unary=scale * rng.normal(size=(offsets[-1], 2)),
                  transition=scale * rng.normal(size=(2, 2)),
                  start=scale * rng.normal(size=2), end=scale * rng.normal(size=2))
    build = lambda a: ToyScores(a["unary"], offsets, a["transition"], a["start"], a["end"])
    return TinyBatch(arrays, build, rng.integers(0, 2, size=offsets[-1]))


register_family(DecoderFamily(
    name="toy", scores=ToyScores, decoders=lambda: [ToyDecoder()],
    enumeration=ChainEnumeration, tiny_batch=tiny_batch,
    score_names={{"unary": "unary", "transition": "transition"}}, example_name="sequence"))


def pytest_unconfigure(config):
    registry._REGISTRY.pop("toy", None)
'''


def _run_contract_with_the_toy(pytester, broken):
    pytester.makeconftest(TOY.format(broken=broken))
    pytester.makepyfile(
        _families=(HERE.parent / "_families.py").read_text(),
        # another module name: the suite may have imported test_family_contract already
        test_registered_contract=(HERE / "test_family_contract.py").read_text())
    return pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider",
                                        "-k", "toy", "-q")


def test_a_registered_toy_family_gets_the_generic_tests(pytester):
    result = _run_contract_with_the_toy(pytester, broken=False)
    outcomes = result.parseoutcomes()
    # map, marginals, parts, NaN and +inf named, replace (NaN, +inf), take, another
    # family's container: 9 tests (top-K and loss-augmented MAP do not apply)
    assert outcomes.get("passed") == 9, result.stdout.str()
    assert "failed" not in outcomes and "error" not in outcomes


def test_the_generic_tests_catch_a_wrong_toy_decoder(pytester):
    result = _run_contract_with_the_toy(pytester, broken=True)
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_map_scores_the_best_output_of_the_reference*toy*"])
