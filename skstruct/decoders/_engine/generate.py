"""Writes :mod:`skstruct.decoders._engine.dispatch` from the family registrations.

The compiled engine reaches a family's kernels through three dispatchers, ``oracle``,
``add_parts`` and ``smoothed_oracle``, that branch on the family code of a
``CompiledOracle``. numba caches no function passed as an argument, so the branches are
written out; this module writes them from the :class:`EngineHooks` of every registered
family, and a test checks that the committed ``dispatch.py`` is what it writes. After
registering a family with an ``engine``, run::

    python -m skstruct.decoders._engine.generate
"""

import os
import sys

from .._core.registry import families

__all__ = ["dispatch_source", "write_dispatch"]

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dispatch.py")

_HEADER = '''"""The compiled dispatchers of the per-example engine: one branch per family code.

Written by :mod:`skstruct.decoders._engine.generate` from the registered families'
:class:`~skstruct.decoders._core.registry.EngineHooks`; do not edit (run
``python -m skstruct.decoders._engine.generate`` after registering a family).

The engine calls :func:`oracle` and :func:`add_parts` (and the smoothed solvers
:func:`smoothed_oracle`) with the family code of a decoder's
:class:`~skstruct.decoders._core.engine_protocol.CompiledOracle`: codes, not functions,
so that everything stays cached (:mod:`skstruct.decoders._core.engine_protocol`). The
families build their ``CompiledOracle`` from the protocol module and do not import this
one.
"""

from numba import njit

'''

_ORACLE_DOC = '''\
    """The (loss-augmented) MAP output of one example, and its task loss.

    Parameters
    ----------
    code, rescaling : int
        Family and rescaling codes.
    unary : ndarray of shape (n_rows_i, K)
        The part scores of the example's rows.
    pair : ndarray of shape (n_pair,)
        The pair scores.
    y_i : ndarray of shape (n_outputs_i,), int64
        Its gold output.
    costs_i : ndarray of shape (n_rows_i, K) or (0, 0)
        Its rows of :attr:`~skstruct.decoders._core.engine_protocol.CompiledOracle.costs`.
    ints, floats : ndarray
        The family parameters.
    yhat : ndarray of shape (>= n_outputs_i,), int64
        Output: the maximizer, in ``yhat[:n_outputs_i]``.

    Returns
    -------
    float
        Δ(y_i, ŷ) (0 for plain MAP). Margin rescaling maximizes θ_y + Δ(y_i, y), slack
        rescaling Δ(y_i, y) (1 + θ_y − θ_{y_i}); ties are broken as the batched decoder
        breaks them.
    """
'''
_ADD_PARTS_DOC = '''\
    """Add ``scale`` times the indicator parts a_out of output ``out`` to the buffers.

    Parameters
    ----------
    code : int
    out : ndarray of shape (n_outputs_i,), int64
    scale : float
    unary_parts : ndarray of shape (n_rows_i, K)
        Laid out like the unary scores of the example.
    pair_parts : ndarray of shape (n_pair,)
    ints : ndarray
        The family parameters.
    """
'''
_SMOOTHED_DOC = '''\
    """Value and part gradient of the smoothed structural hinge of one example.

    Parameters
    ----------
    code : int
        The family (:data:`~skstruct.decoders._core.engine_protocol.CHAIN`, ``MULTICLASS``,
        ``MULTILABEL``, ``TREE``).
    smoothing : int
        :data:`ENTROPY` (0) or :data:`L2` (1).
    mu : float > 0
        The smoothing strength μ.
    top_k : int >= 1
        K, the number of best cost-augmented outputs of ℓ2 smoothing (unused by entropy).
    unary : ndarray of shape (n_rows, K_parts)
        The part scores of the example's rows; -inf forbids a part.
    pair : ndarray of shape (n_pair,)
        The pair scores (chains: transitions row-major, start, end; empty otherwise).
    y_i : ndarray of shape (n_outputs_i,), int64
        The gold output.
    costs_i : ndarray of shape (n_rows, K_costs) or (0, 0)
        The example's rows of :attr:`CompiledOracle.costs` (multilabel: off then on
        costs; tree: arc costs), (0, 0) when the family computes its costs from ``ints``
        / ``floats``.
    ints, floats : ndarray
        The family parameters of the CompiledOracle (margin rescaling, or plain MAP for
        zero costs).
    d_unary : ndarray of shape (>= n_rows, K_parts)
        Output: rows ``:n_rows`` are overwritten with the unary part of
        Σ_y q*_y a_y − a_{y_i}; the other rows are not touched.
    d_pair : ndarray of shape (n_pair,)
        Output: overwritten with the pair part of that gradient.

    Returns
    -------
    value : float
        f_μ = h_μ(z) − z_{y_i}, z_y = θ_y + Δ(y_i, y) (module docstring). Entropy: in
        [ℓ, ℓ + μ log |Y|] with ℓ the structural hinge, so ≥ 0 up to rounding; +inf when
        the gold output has a forbidden part. ℓ2 (over the K best outputs): in
        [ℓ − μ/2, ℓ] when exact, so it may be negative (down to −μ/2); the top-K value
        is never above the exact one.
    exact : bool
        True unless ℓ2 smoothing's projection gives the K-th best output a positive
        weight (then outputs beyond the K-th might deserve weight too), the certificate
        of :class:`~skstruct.losses.L2SmoothedHingeLoss`; always True for entropy.

    Raises
    ------
    ValueError
        When no output has a finite score, for an unknown family or smoothing, for a
        loss without a smoothed form (see
        :func:`~skstruct.decoders._engine.smoothed.supports_smoothed`), and for ℓ2 on trees.
    """
'''


def _engine_families():
    return sorted((f for f in families() if f.engine is not None), key=lambda f: f.engine.code)


def _relative(module):
    prefix = "skstruct.decoders."
    if not module.startswith(prefix):
        raise ValueError(f"engine kernels must live in skstruct.decoders; got {module!r}.")
    return ".." + module[len(prefix):]


def dispatch_source():
    """The source of ``dispatch.py`` for the registered families (str)."""
    engine = _engine_families()
    imports = {}
    for family in engine:
        hooks = family.engine
        imports.setdefault(hooks.module, set()).update((hooks.oracle, hooks.add_parts))
        if hooks.smoothed:
            imports.setdefault(hooks.smoothed_module, set()).add(hooks.smoothed)
    lines = [_HEADER.rstrip("\n"), ""]
    for module in sorted(imports):
        names = sorted(imports[module])
        line = f"from {_relative(module)} import {', '.join(names)}"
        if len(line) > 95:
            line = "\n".join([f"from {_relative(module)} import ("]
                              + [f"    {name}," for name in names] + [")"])
        lines.append(line)
    lines += ["", '__all__ = ["add_parts", "oracle", "smoothed_oracle"]', "", ""]

    lines += ["@njit(cache=True, nogil=True)",
              "def oracle(code, rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):",
              _ORACLE_DOC.rstrip("\n")]
    for family in engine:
        hooks = family.engine
        lines += [f"    if code == {hooks.code}:  # {family.name}",
                  f"        return {hooks.oracle}(rescaling, unary, pair, y_i, costs_i, ints, "
                  f"floats, yhat)"]
    lines += ['    raise ValueError("unknown oracle family code")', "", ""]

    lines += ["@njit(cache=True, nogil=True)",
              "def add_parts(code, out, scale, unary_parts, pair_parts, ints):",
              _ADD_PARTS_DOC.rstrip("\n")]
    for family in engine:
        hooks = family.engine
        lines += [f"    if code == {hooks.code}:  # {family.name}",
                  f"        {hooks.add_parts}(out, scale, unary_parts, pair_parts, ints)",
                  "        return"]
    lines += ['    raise ValueError("unknown oracle family code")', "", ""]

    lines += ["@njit(cache=True, nogil=True)",
              "def smoothed_oracle(code, smoothing, mu, top_k, unary, pair, y_i, costs_i, "
              "ints, floats,",
              "                    d_unary, d_pair):",
              _SMOOTHED_DOC.rstrip("\n"),
              "    if smoothing != 0 and smoothing != 1:",
              '        raise ValueError("smoothing must be 0 (entropy) or 1 (l2)")',
              "    if not mu > 0.0:",
              '        raise ValueError("the smoothing strength mu must be > 0")',
              "    if smoothing == 1 and top_k < 1:",
              '        raise ValueError("top_k must be >= 1")']
    for family in engine:
        hooks = family.engine
        if not hooks.smoothed:
            continue
        lines += [f"    if code == {hooks.code}:  # {family.name}",
                  f"        return {hooks.smoothed}({hooks.smoothed_args})"]
    lines += ['    raise ValueError("no compiled smoothed oracle for this family")', ""]
    return "\n".join(lines)


def write_dispatch(path=PATH):
    """Write :func:`dispatch_source` to ``path`` (the package's ``dispatch.py``)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(dispatch_source())


if __name__ == "__main__":  # pragma: no cover
    # running this module imported skstruct.decoders first, which registered the families
    write_dispatch(sys.argv[1] if len(sys.argv) > 1 else PATH)
