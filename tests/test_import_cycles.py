"""No import cycle between the modules of the package.

Every module under ``skstruct/`` is parsed with :mod:`ast`; every import, at module level
or inside a function or class, becomes an edge to the module it loads. So does every call
of ``__import__`` or ``importlib.import_module`` that names its module by a constant
(a string, an f-string of constants, ``__package__`` or ``__name__``); a call that names
it any other way is an import the walk cannot follow, and is an error of its own.
Importing ``a.b.c`` also runs the ``__init__`` of the packages ``a.b`` and ``a``, so those
are edges too, except for the packages that contain the importing module (they are
already being imported when it runs). A cycle in that graph is a pair of modules that need
each other: it works only in one import order (or by a function-level or dynamic import
that hides it) and makes the modules impossible to understand one without the other.
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


def _package_of(importer, modules):
    """The value of ``__package__`` in ``importer``."""
    return importer if _is_package(importer, modules) else importer.rpartition(".")[0]


def _relative(package, level, module):
    """The absolute dotted name of ``module`` after ``level`` dots, from ``package``."""
    base = package
    for _ in range(level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{module}" if module else base


def _resolve(importer, level, module, modules):
    """The absolute dotted name of ``from <level dots><module> import ...`` in
    ``importer``."""
    if level == 0:
        return module
    return _relative(_package_of(importer, modules), level, module)


def _constant_text(node, importer, modules):
    """The string that expression ``node`` of ``importer`` evaluates to, where the source
    alone says it (a string, ``__package__``, ``__name__``, f-strings and sums of these);
    None otherwise."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        known = {"__package__": _package_of(importer, modules), "__name__": importer}
        return known.get(node.id)
    if isinstance(node, ast.JoinedStr):
        pieces = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion != -1 or value.format_spec is not None:
                    return None
                value = value.value
            piece = _constant_text(value, importer, modules)
            if piece is None:
                return None
            pieces.append(piece)
        return "".join(pieces)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _constant_text(node.left, importer, modules)
        right = _constant_text(node.right, importer, modules)
        return None if left is None or right is None else left + right
    return None


def _import_function_names(tree):
    """``{name: function}`` of the names under which ``tree`` calls ``__import__`` or
    ``importlib.import_module`` directly (as ``from importlib import`` binds them)."""
    names = {"__import__": "__import__"}
    for node in ast.walk(tree):
        if (isinstance(node, ast.ImportFrom) and node.module == "importlib"
                and not node.level):
            names.update((alias.asname or alias.name, alias.name) for alias in node.names
                         if alias.name in ("import_module", "__import__"))
    return names


def _called_import_function(call, function_names):
    """Which of ``"__import__"`` and ``"import_module"`` ``call`` calls, or None."""
    if isinstance(call.func, ast.Name):
        return function_names.get(call.func.id)
    if isinstance(call.func, ast.Attribute) and call.func.attr in ("__import__",
                                                                   "import_module"):
        return call.func.attr
    return None


_PARAMETERS = {"__import__": ("name", "globals", "locals", "fromlist", "level"),
               "import_module": ("name", "package")}


def _dynamically_imported(call, function, importer, modules):
    """The modules that ``call`` of ``function`` (``__import__`` or ``import_module``)
    loads, by dotted name; None where the source does not say which."""
    parameters = _PARAMETERS[function]
    if (len(call.args) > len(parameters)
            or any(isinstance(argument, ast.Starred) for argument in call.args)
            or any(keyword.arg is None for keyword in call.keywords)):
        return None
    arguments = dict(zip(parameters, call.args))
    arguments.update((keyword.arg, keyword.value) for keyword in call.keywords)
    if "name" not in arguments:
        return None
    name = _constant_text(arguments["name"], importer, modules)
    if name is None:
        return None
    if function == "import_module":
        level = len(name) - len(name.lstrip("."))
        if not level:
            return [name]
        package = arguments.get("package")
        package = None if package is None else _constant_text(package, importer, modules)
        return None if package is None else [_relative(package, level, name[level:])]
    # __import__ resolves a relative name from the __package__ of the globals it is given,
    # which are the caller's own
    level = arguments.get("level", ast.Constant(0))
    fromlist = arguments.get("fromlist", ast.Constant(None))
    if not (isinstance(level, ast.Constant) and type(level.value) is int):
        return None
    if isinstance(fromlist, (ast.Tuple, ast.List)):
        fromlist = [_constant_text(element, importer, modules) for element in fromlist.elts]
        if None in fromlist:
            return None
    elif isinstance(fromlist, ast.Constant) and fromlist.value is None:
        fromlist = []
    else:
        return None
    target = _resolve(importer, level.value, name, modules)
    return [target] + [f"{target}.{attribute}" for attribute in fromlist
                       if f"{target}.{attribute}" in modules]


def _read_imports(importer, modules, source=None):
    """What ``importer`` imports, read from ``source`` (by default its file).

    Returns
    -------
    found : list of tuple (str, int)
        The package modules it loads, each with the line of its import.
    unreadable : list of int
        The lines of the calls of ``__import__`` or ``import_module`` whose module the
        source does not name.
    """
    if source is None:
        source = modules[importer].read_text(encoding="utf-8")
    tree = ast.parse(source)
    function_names = _import_function_names(tree)
    found, unreadable = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(importer, node.level, node.module, modules)
            found.append((target, node.lineno))
            # ``from package import submodule`` loads the submodule
            found.extend((f"{target}.{alias.name}", node.lineno) for alias in node.names
                         if f"{target}.{alias.name}" in modules)
        elif isinstance(node, ast.Call):
            function = _called_import_function(node, function_names)
            if function is None:
                continue
            loaded = _dynamically_imported(node, function, importer, modules)
            if loaded is None:
                unreadable.append(node.lineno)
            else:
                found.extend((name, node.lineno) for name in loaded)
    found = [(name, line) for name, line in found
             if name == PACKAGE or name.startswith(PACKAGE + ".")]
    return found, unreadable


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


def import_graph(sources=None):
    """``{module: {imported module: line of the import}}`` over the whole package.

    Parameters
    ----------
    sources : dict of str to str, optional
        Source text to read instead of the file of the modules it names.
    """
    sources = sources or {}
    modules = _module_names()
    graph = {name: {} for name in modules}
    for importer in modules:
        found, _ = _read_imports(importer, modules, sources.get(importer))
        for target, line in found:
            for name in _loaded(target, importer, modules):
                if name != importer:
                    graph[importer].setdefault(name, line)
    return graph


def unreadable_imports():
    """``path:line`` of every call of ``__import__`` or ``import_module`` in the package
    whose module the source does not name."""
    modules = _module_names()
    return [f"{modules[importer].relative_to(ROOT.parent)}:{line}"
            for importer in modules for line in _read_imports(importer, modules)[1]]


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


def test_every_dynamic_import_names_its_module():
    unreadable = unreadable_imports()
    assert not unreadable, (
        "__import__ or import_module of a module that the source does not name, so no "
        "cycle through it can be ruled out (name the module by a constant, or import "
        "it):\n    " + "\n    ".join(unreadable))


def test_the_walk_sees_function_level_and_relative_imports():
    graph = import_graph()
    # relative, at module level
    assert "skstruct.decoders._core.decoder" in graph["skstruct.decoders._chain.decoder"]
    # through the package: importing a submodule of another package runs its __init__
    assert "skstruct.losses" in graph["skstruct.decoders._core.decoder"]
    # inside a function
    assert ("skstruct.decoders._sparsemap.sparsemap"
            in graph["skstruct.decoders._core.decoder"])


def test_a_cycle_is_found_and_printed():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    cycles = find_cycles(graph)
    assert cycles == [["a", "b", "c", "a"]]
    assert _describe(cycles[0], graph) == (
        "a (line 1) -> b\n    b (line 2) -> c\n    c (line 3) -> a")
    assert find_cycles({"a": {"b": 1}, "b": {}}) == []


def test_the_walk_reads_dynamic_imports_named_by_constants():
    source = """\
import importlib
from importlib import import_module as load

__import__("skstruct.losses")
importlib.import_module(".kernels", package=__package__)
load(f"{__package__}.oracle")
importlib.import_module("..utils", "skstruct.decoders")
importlib.import_module("numpy")


def later(name):
    __import__("skstruct.decoders._core", fromlist=["unary", "Decoder"])
    __import__("constraints", globals(), None, (), 1)
    __import__(__name__ + "_kernels")
    importlib.import_module(name)
    __import__(f"{__package__}.{name}")
"""
    found, unreadable = _read_imports("skstruct.decoders._chain.counting", _module_names(),
                                      source)
    assert sorted(found) == [
        ("skstruct.decoders._chain.constraints", 13),
        ("skstruct.decoders._chain.counting_kernels", 14),
        ("skstruct.decoders._chain.kernels", 5),
        ("skstruct.decoders._chain.oracle", 6),
        ("skstruct.decoders._core", 12),
        ("skstruct.decoders._core.unary", 12),
        ("skstruct.losses", 4),
        ("skstruct.utils", 7),
    ]
    assert unreadable == [15, 16]


def test_a_cycle_through_a_dynamic_import_is_found():
    graph = import_graph(sources={
        "skstruct.decoders._factor_graph.relaxed":
            'import importlib\nimportlib.import_module(".._core.best_neighbour", __package__)\n',
        "skstruct.decoders._core.best_neighbour": "from .._factor_graph import relaxed\n",
    })
    assert ["skstruct.decoders._core.best_neighbour", "skstruct.decoders._factor_graph.relaxed",
            "skstruct.decoders._core.best_neighbour"] in find_cycles(graph)
