"""The plain definitions of the factor-graph logic factors, shared by the factor-graph
tests: a factor added from a spec entry, and the feasibility of a 0/1 vector read off the
spec (the slow reference every decoder output is checked against)."""

#: The logic factors of FactorGraph, by the names the specs use.
LOGIC_KINDS = ("xor", "at_most_one", "or", "budget", "knapsack", "or_out")


def negated_block(block, mask):
    """``block`` (FactorGraph variables) with the entries of ``mask`` negated."""
    out = block[:]
    out.negated = block.negated ^ mask
    return out


def add_logic_factor(graph, kind, block, extra=None):
    """Add the factor ``kind`` over ``block`` to ``graph``: ``extra`` is the budget of
    ``"budget"``, ``(costs, budget)`` of ``"knapsack"``; for ``"or_out"`` the last
    variable of ``block`` is the output of the others."""
    if kind == "xor":
        graph.add_xor(block)
    elif kind == "at_most_one":
        graph.add_at_most_one(block)
    elif kind == "or":
        graph.add_or(block)
    elif kind == "budget":
        graph.add_budget(block, extra)
    elif kind == "knapsack":
        graph.add_knapsack(block, *extra)
    elif kind == "or_out":
        graph.add_or_out(block[:-1], block[-1])
    else:
        raise ValueError(f"unknown factor kind {kind!r}")


def satisfies_factors(spec, y):
    """Whether the 0/1 vector ``y`` satisfies every factor of ``spec``, a list of
    ``(kind, ids, negated, extra)``, from the plain definitions of the factors."""
    for kind, ids, negated_mask, extra in spec:
        x = [1 - y[i] if n else y[i] for i, n in zip(ids, negated_mask)]
        total = sum(x)
        if kind == "xor" and total != 1:
            return False
        if kind == "at_most_one" and total > 1:
            return False
        if kind == "or" and total < 1:
            return False
        if kind == "budget" and total > extra:
            return False
        if kind == "knapsack":
            costs, budget = extra
            if sum(c * v for c, v in zip(costs, x)) > budget + 1e-9:
                return False
        if kind == "or_out" and max(y[i] for i in ids[:-1]) != y[ids[-1]]:
            return False
    return True
