"""xaikit's layers, read from the source: every import between xaikit's modules goes down the layers of
ARCHITECTURE.md ("Layers"), and no two modules import each other, directly or round a circle.

The imports are read with :mod:`ast`, without importing anything: ``import`` and ``from ... import`` at
any depth (inside functions too, where xaikit defers torch and transformers), absolute and relative, and
the lazy export tables of the packages' ``__init__`` (``_lazy.attach``: a name there is an import on first
use). ``from package import name`` is an import of the submodule ``package.name`` when there is one, else
of the package itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "xaikit"

#: the layers, lowest first: each names the top-level modules and packages of ``xaikit`` it holds. A module
#: may import from a lower layer, and from its own package (or, in the ground floor, from any ground-floor
#: module); never from a higher layer nor from another package of its own layer. Any top-level private
#: module (``xaikit/_<name>.py``) belongs to the ground floor.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    # conventions, checks, settings, lazy imports, the contract's types, figures' colours
    ("ground floor", frozenset({"_fn", "_validate", "_config", "_lazy", "_types", "policies", "plotting"})),
    # embedded models and their training data (the digits, the reviews, the image world), loaders, hooks
    ("models", frozenset({"models"})),
    # the one text entry (the text checked, cut, tokenized once, the target resolved), shared by text/ and
    # attention/ and below both
    ("text entry", frozenset({"_text_input"})),
    # the method families that stand on models alone: tensor maps, attention (with the one rollout and the one
    # Chefer gradient rule), TCAV
    ("methods", frozenset({"tensor", "attention", "concepts"})),
    # the text and image families: they may use the tensor methods (IG's quadrature), the attention family
    # (rollout, Chefer's rule) and TCAV's image input
    ("text and image methods", frozenset({"text", "image"})),
    # the lab: experiments about the methods (faithfulness, the sanity cascades, the intervention, the pixel
    # scores), over every family below
    ("lab", frozenset({"lab"})),
    # the lecture's static diagrams: drawn from the methods' own numbers (the worked example, a CAV's fit)
    ("diagrams", frozenset({"diagrams"})),
    ("widgets", frozenset({"widgets"})),
    ("course", frozenset({"course"})),
    # the cache build: it warms caches of the text and concept families as well as the models
    ("prepare", frozenset({"prepare"})),
    # the package root: its lazy table names every public function
    ("package root", frozenset({"xaikit"})),
    # the command line (it reads the package's version from the root)
    ("command line", frozenset({"__main__"})),
)

def _modules() -> dict[str, Path]:
    """``{dotted name: file}`` for every module of the package (a package is its ``__init__``)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _lazy_targets(tree: ast.Module, package: str) -> list[str]:
    """The submodules a package's ``__init__`` imports lazily: the string values of its dict literals and
    the strings of the ``submodules`` argument of ``attach`` (both relative to the package)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            names += [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "attach" and len(node.args) > 2:
            names += [e.value for e in ast.walk(node.args[2]) if isinstance(e, ast.Constant)
                      and isinstance(e.value, str)]
    return [f"{package}.{name}" for name in names]


def import_graph() -> dict[str, set[str]]:
    """``{module: modules it imports}`` over xaikit's own modules."""
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets += [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source
                            for a in node.names]
        if path.name == "__init__.py":
            targets += _lazy_targets(tree, name)
        graph[name] = {t for t in map(known, (t for t in targets if t.split(".")[0] == "xaikit"))
                       if t is not None and t != name}
    return graph


def unit(module: str) -> str:
    """The top-level module or package of ``xaikit`` that ``module`` belongs to (``xaikit`` for the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "xaikit"


def layer_of(module: str) -> int:
    name = unit(module)
    for i, (_, units) in enumerate(LAYERS):
        if name in units:
            return i
    if name.startswith("_") and name != "__main__":
        return 0
    raise AssertionError(f"{module} is in no layer: add {name!r} to LAYERS here and in ARCHITECTURE.md")


def allowed(source: str, target: str) -> bool:
    i, j = layer_of(source), layer_of(target)
    return j < i or (j == i and (unit(source) == unit(target) or i == 0))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_import_goes_down_the_layers():
    graph = import_graph()
    edges = sorted((s, t) for s, targets in graph.items() for t in targets)
    wrong = [(s, t) for s, t in edges if not allowed(s, t)]
    print(f"\nlayers, lowest first: {' < '.join(name for name, _ in LAYERS)}")
    print(f"checked {len(graph)} modules and {len(edges)} imports between them")
    unexpected = [f"{s} ({LAYERS[layer_of(s)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})" for s, t in wrong]
    assert not unexpected, "imports against the layers:\n" + "\n".join(unexpected)


def test_no_import_cycles():
    graph = import_graph()
    found = [tuple(c) for c in cycles(graph)]
    print(f"\nchecked {len(graph)} modules and {sum(map(len, graph.values()))} imports for circles "
          "(function-level imports included)")
    assert not found, "modules that import each other (directly or round a circle):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_every_module_is_in_a_layer():
    assert {unit(m) for m in _modules()} <= {u for _, units in LAYERS for u in units} | {
        u for u in map(unit, _modules()) if u.startswith("_")}


def test_the_checker_sees_what_it_must():
    """The graph holds a function-level import, a relative import and a lazy export, and the rule and the
    cycle finder refuse what they must."""
    graph = import_graph()
    assert "xaikit.models.vitworld" in graph["xaikit.models.loaders"]  # inside load_vit
    assert "xaikit.tensor.gradients" in graph["xaikit"]  # the root's lazy table
    assert not allowed("xaikit.models.cache", "xaikit.concepts.tcav")
    assert not allowed("xaikit.tensor.gradients", "xaikit.concepts.tcav")  # two families of one layer
    assert not allowed("xaikit.text.lrp", "xaikit.image.lrp") and not allowed("xaikit.image.lrp", "xaikit.lab.faithfulness")
    assert allowed("xaikit.lab.pixel_scores", "xaikit.image.registry") and allowed("xaikit.diagrams", "xaikit.lab.removal")
    assert allowed("xaikit.widgets.tcav", "xaikit.concepts.tcav") and allowed("xaikit._fn", "xaikit.policies")
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_scripts_do_not_import_the_tests():
    """``scripts/`` may be run without the test tree: what it shares with the tests lives in ``scripts/``."""
    for path in sorted((PACKAGE.parent / "scripts").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "tests" for n in names), f"{path.name} imports {names}"
