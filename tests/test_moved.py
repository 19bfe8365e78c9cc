"""Old module paths keep working for one release (xaikit/_moved.py): each warns with a DeprecationWarning that
names the new place and hands out the new module's objects themselves; nothing in the repository (the package,
the tests, the benchmarks, the scripts, the notebooks) imports an old path, and no file is left at one."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from xaikit._moved import MOVED

PACKAGE = Path(__file__).resolve().parent.parent / "xaikit"


def _fresh(old: str):
    """Import ``old`` as a first import would (stand-ins left by an earlier test are dropped)."""
    for name in [n for n in sys.modules if n == old or n.startswith(old + ".")]:
        del sys.modules[name]
    return importlib.import_module(old)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_hands_out_the_new_names(old):
    import xaikit  # noqa: F401 - installs the finder

    with pytest.warns(DeprecationWarning, match=rf"{old} moved to {MOVED[old][0]}.*; import it from there"):
        module = _fresh(old)
    new = importlib.import_module(MOVED[old][0])
    public = getattr(new, "__all__", None) or [n for n in dir(new) if not n.startswith("_")]
    assert public, new
    for name in public:
        assert getattr(module, name) is getattr(new, name), (old, name)
    with pytest.raises(AttributeError, match=f"moved to {MOVED[old][0]}"):
        module.no_such_name  # noqa: B018


def test_the_warning_points_at_the_importing_line():
    import xaikit  # noqa: F401

    for name in [n for n in sys.modules if n.startswith("xaikit.text.lab")]:
        del sys.modules[name]
    with pytest.warns(DeprecationWarning) as caught:
        from xaikit.text.lab import faithfulness
    assert {Path(w.filename).name for w in caught} == {Path(__file__).name}
    assert faithfulness.run_lab is importlib.import_module("xaikit.lab.faithfulness").run_lab


def test_no_file_at_an_old_path_and_no_module_imports_one():
    for old in MOVED:
        rel = Path(*old.split(".")[1:])
        assert not (PACKAGE / rel).with_suffix(".py").exists() and not (PACKAGE / rel / "__init__.py").exists(), old
    repo = PACKAGE.parent
    sources = [p for folder in ("xaikit", "tests", "benchmarks", "scripts", "notebooks")
               for p in (repo / folder).rglob("*.py") if p != Path(__file__).resolve()]
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            assert not set(names) & set(MOVED), f"{path.relative_to(repo)} imports {names}"


def test_a_name_that_left_a_module_warns_and_is_the_new_object():
    """Notebook 03's ``A.sinusoidal_positional_encoding`` (``from xaikit.attention import scratch as A``) in a
    student's copy of an earlier release: it warns, names the new module, and is that module's function."""
    from xaikit._moved import MOVED_NAMES
    from xaikit.attention import positions, saturation, scores, scratch

    for name, new in (("sinusoidal_positional_encoding", positions), ("row_entropy", saturation),
                      ("additive_attention", scores), ("CrossAttentionSteps", scores)):
        with pytest.warns(DeprecationWarning, match=rf"scratch\.{name} moved to {new.__name__}; import it from"):
            assert getattr(scratch, name) is getattr(new, name)
    moved = {n for m in MOVED_NAMES["xaikit.attention.scratch"] for n in importlib.import_module(m).__all__}
    assert not moved & set(scratch.__all__)  # one name per thing: none of them is also scratch's own
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        scratch.no_such_name  # noqa: B018
