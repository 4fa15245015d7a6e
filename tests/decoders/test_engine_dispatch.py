"""The compiled dispatchers are the ones the family registrations generate."""

import numpy as np
import pytest

import skstruct.decoders  # noqa: F401  (registers the families)
from skstruct.decoders._core.registry import DecoderFamily, EngineHooks, families
from skstruct.decoders._engine import generate


def test_the_committed_dispatch_is_generated_from_the_registrations():
    with open(generate.PATH, encoding="utf-8") as f:
        committed = f.read()
    assert committed == generate.dispatch_source(), (
        "skstruct/decoders/_engine/dispatch.py is not what the registrations generate: "
        "run python -m skstruct.decoders._engine.generate")


def test_every_family_with_engine_hooks_has_a_branch_in_each_dispatcher():
    source = generate.dispatch_source()
    for family in families():
        if family.engine is None:
            continue
        hooks = family.engine
        assert f"if code == {hooks.code}:  # {family.name}" in source
        assert f"return {hooks.oracle}(" in source and f"{hooks.add_parts}(" in source
        if hooks.smoothed:
            assert f"return {hooks.smoothed}({hooks.smoothed_args})" in source


def test_a_registered_family_gets_its_branches(monkeypatch):
    from skstruct.decoders._core import registry

    class ToyScores:
        pass

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.register_family(DecoderFamily(
        name="toy", scores=ToyScores, decoders=list, enumeration=None,
        tiny_batch=None, engine=EngineHooks(
            code=99, module="skstruct.decoders._toy.oracle", oracle="toy_oracle",
            add_parts="toy_add_parts")))
    source = generate.dispatch_source()
    assert "from .._toy.oracle import toy_add_parts, toy_oracle" in source
    assert "    if code == 99:  # toy\n        return toy_oracle(" in source
    assert "    if code == 99:  # toy\n        toy_add_parts(" in source
    assert source.count("if code == 99") == 2  # no smoothed oracle declared


def test_a_code_taken_by_another_family_is_refused(monkeypatch):
    from skstruct.decoders._core import registry

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    chain = next(f for f in families() if f.name == "chain")
    with pytest.raises(ValueError, match="already the 'chain' family's"):
        registry.register_family(DecoderFamily(
            name="copy", scores=type("S", (), {}), decoders=list, enumeration=None,
            tiny_batch=None, engine=chain.engine))


def test_an_unknown_family_code_is_an_error():
    from skstruct.decoders._engine.dispatch import oracle

    with pytest.raises(ValueError, match="unknown oracle family code"):
        oracle(12345, 0, np.zeros((1, 2)), np.zeros(0), np.zeros(1, dtype=np.int64),
               np.zeros((0, 0)), np.zeros(1, dtype=np.int64), np.zeros(1),
               np.zeros(1, dtype=np.int64))
