"""No import cycle between the modules of the package.

Every module under ``skstruct/`` is parsed with :mod:`ast`; every import, at module level
or inside a function or class, becomes an edge to the module it loads. Importing
``a.b.c`` also runs the ``__init__`` of the packages ``a.b`` and ``a``, so those are edges
too, except for the packages that contain the importing module (they are already being
imported when it runs). A cycle in that graph is a pair of modules that need each other:
it works only in one import order (or by a function-level import that hides it) and makes
the modules impossible to understand one without the other.
"""

import ast
import sys
from pathlib import Path

import skstruct

PACKAGE = "skstruct"
ROOT = Path(skstruct.__file__).resolve().parent


def _module_names():
    """Every module of the package, by dotted name, and its file."""
    modules = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_package(name, modules):
    return modules[name].name == "__init__.py"


def _resolve(importer, level, module, modules):
    """The absolute dotted name of ``from <level dots><module> import ...`` in
    ``importer``."""
    if level == 0:
        return module
    base = importer if _is_package(importer, modules) else importer.rpartition(".")[0]
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{module}" if module else base


def _imported(importer, modules):
    """The package modules that ``importer`` loads, with the line of each import."""
    tree = ast.parse(modules[importer].read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(importer, node.level, node.module, modules)
            found.append((target, node.lineno))
            # ``from package import submodule`` loads the submodule
            found.extend((f"{target}.{alias.name}", node.lineno) for alias in node.names
                         if f"{target}.{alias.name}" in modules)
    return [(name, line) for name, line in found
            if name == PACKAGE or name.startswith(PACKAGE + ".")]


def _loaded(target, importer, modules):
    """``target`` and the packages whose ``__init__`` importing it runs, except those
    that contain ``importer``."""
    while target and target not in modules:  # ``import a.b.attribute``: its module
        target = target.rpartition(".")[0]
    loaded = []
    name = target
    while name:
        if not (importer == name or importer.startswith(name + ".")):
            loaded.append(name)
        name = name.rpartition(".")[0]
    return loaded


def import_graph():
    """``{module: {imported module: line of the import}}`` over the whole package."""
    modules = _module_names()
    graph = {name: {} for name in modules}
    for importer in modules:
        for target, line in _imported(importer, modules):
            for name in _loaded(target, importer, modules):
                if name != importer:
                    graph[importer].setdefault(name, line)
    return graph


def find_cycles(graph):
    """One cycle per strongly connected component of more than one module (Tarjan), as
    a list of modules ``[m0, m1, ..., m0]`` that import each other in that order."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return [_cycle_in(component, graph) for component in components]


def _cycle_in(component, graph):
    """A shortest cycle through the first module of ``component`` (breadth first)."""
    start = min(component)
    parents = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    path = [v]
                    while parents[path[-1]] is not None:
                        path.append(parents[path[-1]])
                    return path[::-1] + [start]
                if w in component and w not in parents:
                    parents[w] = v
                    following.append(w)
        frontier = following
    return sorted(component)


def _describe(cycle, graph):
    steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in zip(cycle[:-1], cycle[1:])]
    return "\n    ".join(steps)


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert len(graph) > 20  # the walk found the package's modules
    cycles = find_cycles(graph)
    message = "\n\n".join(f"Import cycle:\n    {_describe(c, graph)}" for c in cycles)
    assert not cycles, message


def test_the_walk_sees_function_level_and_relative_imports():
    graph = import_graph()
    # relative, at module level
    assert "skstruct.decoders._base" in graph["skstruct.decoders._chain"]
    # through the package: importing a submodule of another package runs its __init__
    assert "skstruct.losses" in graph["skstruct.decoders._base"]
    # inside a function
    assert "skstruct.decoders._sparsemap" in graph["skstruct.decoders._base"]


def test_a_cycle_is_found_and_printed():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    cycles = find_cycles(graph)
    assert cycles == [["a", "b", "c", "a"]]
    assert _describe(cycles[0], graph) == (
        "a (line 1) -> b\n    b (line 2) -> c\n    c (line 3) -> a")
    assert find_cycles({"a": {"b": 1}, "b": {}}) == []
