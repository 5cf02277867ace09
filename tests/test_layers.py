"""The package's shape: no import circle between its modules, no module above 400 lines.

The imports are read from the source (ast), at module level and inside functions alike: a
lazy import that closes a circle is still a circle, it only fails later. `from rlpipe.x import
y` is an arrow to the module `rlpipe.x.y` when that is a module, else to `rlpipe.x`.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

import rlpipe

PACKAGE = Path(rlpipe.__file__).parent
#: A smell detector, not a target: a module this long usually holds more than one idea. A module
#: is split along its ideas, never to get under the number.
MAX_LINES = 600


def _modules(root: Path) -> Dict[str, Path]:
    """Dotted module name -> file, for every .py file under `root` (a package folder)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _targets(module: str, is_package: bool, node: ast.AST, modules: Dict[str, Path]) -> List[str]:
    """The modules of the package that one import statement of `module` names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        assert isinstance(node, ast.ImportFrom)
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            parent = ".".join(base + ([node.module] if node.module else []))
        else:
            parent = node.module or ""
        names = [f"{parent}.{alias.name}" if f"{parent}.{alias.name}" in modules else parent
                 for alias in node.names]
    targets = []
    for name in names:
        while name not in modules and "." in name:  # `import rlpipe.a.b.C` style: its module
            name = name.rsplit(".", 1)[0]
        if name in modules and name != module:
            targets.append(name)
    return targets


def import_graph(root: Path) -> Dict[str, Set[str]]:
    """module -> the package's modules it imports (anywhere in its source)."""
    modules = _modules(root)
    graph: Dict[str, Set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        graph[module] = {target for node in ast.walk(tree)
                         if isinstance(node, (ast.Import, ast.ImportFrom))
                         for target in _targets(module, is_package, node, modules)}
    return graph


def find_cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    cycles: List[List[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_circle_in_the_package() -> None:
    cycles = find_cycles(import_graph(PACKAGE))
    assert not cycles, (
        "import circles between modules of rlpipe (each list imports itself round the circle; "
        "move what they share into a module below all of them): "
        + "; ".join(" <-> ".join(c) for c in cycles))


def test_no_module_is_long_enough_to_hold_several_ideas() -> None:
    long = {str(path.relative_to(PACKAGE.parent)): n
            for path in PACKAGE.rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, (f"modules above {MAX_LINES} lines: {long}; if one holds several ideas, "
                      f"give each its own module named for it")


#: DESIGN.md's layers, lowest first; a module imports only from its own layer or lower ones.
LAYER_OF = {"contexts": 0, "engine": 1, "data": 2, "envs": 2, "models": 3, "policies": 3,
            "middleware": 4, "pipelines": 5, "zoo": 6, "training": 7, "tools": 7, "cli": 8}
#: Root helpers any layer may use; they import none of middleware, pipelines or the layers above.
HELPERS = {"_script", "_threads", "config", "config_checks", "data_parallel", "mask_layout",
           "random_streams", "runs", "schema", "standard_defaults"}


def _part(module: str) -> str:
    """The layer or helper a module belongs to (`rlpipe.zoo.registry` -> "zoo")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(graph: Dict[str, Set[str]]) -> List[str]:
    """`a -> b` for every import that runs up the layers. The package root (`rlpipe`), which
    hands on every layer's face, may import anything and only the top layer may import it."""
    wrong = []
    for module, targets in sorted(graph.items()):
        source = _part(module)
        if not source:
            continue
        for target in sorted(targets):
            to = _part(target)
            if source in HELPERS:
                bad = to in ("middleware", "pipelines", "zoo", "training", "tools", "cli") or not to
            elif to in HELPERS:
                bad = False
            elif not to:  # the package root imports every layer: only the top one may use it
                bad = LAYER_OF.get(source) != max(LAYER_OF.values())
            else:
                bad = to not in LAYER_OF or source not in LAYER_OF or LAYER_OF[to] > LAYER_OF[source]
            if bad:
                wrong.append(f"{module} -> {target}")
    return wrong


def test_imports_run_down_the_layers() -> None:
    graph = import_graph(PACKAGE)
    unknown = sorted({_part(m) for m in graph} - set(LAYER_OF) - HELPERS - {""})
    assert not unknown, (f"packages or root modules with no layer in tests/test_layers.py: "
                         f"{unknown}; add each to LAYER_OF (or HELPERS) as DESIGN.md places it")
    wrong = upward_imports(graph)
    assert not wrong, ("imports that run up the layers (contexts < engine < data, envs < models, "
                       "policies < middleware < pipelines < zoo < training, tools < cli; move the "
                       "shared part down): "
                       + "; ".join(wrong))


def test_an_upward_import_is_seen() -> None:
    graph = {"rlpipe.engine._x": {"rlpipe.middleware.ckpt"}, "rlpipe.runs": {"rlpipe.zoo"},
             "rlpipe.zoo._y": {"rlpipe.runs", "rlpipe.engine", "rlpipe"},
             "rlpipe": {"rlpipe.cli"}, "rlpipe.cli": {"rlpipe"}}
    assert upward_imports(graph) == ["rlpipe.engine._x -> rlpipe.middleware.ckpt",
                                     "rlpipe.runs -> rlpipe.zoo", "rlpipe.zoo._y -> rlpipe"]


def test_the_circle_finder_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The checks above could pass by seeing nothing: a made-up package with a circle through a
    function-level relative import, and one through a package's __init__, must be caught."""
    pkg = tmp_path / "rlpipe"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from ._b import b\n")
    (pkg / "sub" / "_a.py").write_text("def f():\n    from ._b import b\n    return b\n")
    (pkg / "sub" / "_b.py").write_text("from rlpipe.sub import _a\nb = 1\n")
    (pkg / "sub" / "_c.py").write_text("def g():\n    from . import b\n    return b\n")
    (pkg / "tidy.py").write_text("from rlpipe.sub._b import b\n")
    graph = import_graph(pkg)
    assert graph["rlpipe.tidy"] == {"rlpipe.sub._b"}
    assert graph["rlpipe.sub._c"] == {"rlpipe.sub"}
    assert find_cycles(graph) == [["rlpipe.sub._a", "rlpipe.sub._b"]]
    (pkg / "sub" / "__init__.py").write_text("from ._c import g\n")
    (pkg / "sub" / "_a.py").write_text("x = 1\n")
    assert find_cycles(import_graph(pkg)) == [["rlpipe.sub", "rlpipe.sub._c"]]


@pytest.mark.parametrize("name", ["launch", "link", "local_links", "Link", "Hub", "Update",
                                  "ProcessFailedError", "LearnerDiedError",
                                  "RayNotInstalledError", "require_ray"])
def test_parallel_keeps_its_public_names(name: str) -> None:
    from rlpipe.engine import parallel

    assert name in parallel.__all__ and getattr(parallel, name) is not None


RUN_FOLDER_NAMES = {"config.json", "metrics.jsonl", "log.txt", "tb", "ckpt", "latest.json",
                    "best.pt", "final.pt", ".pt", "*.pt", "envs.pkl", "buffer.npz",
                    ".manifest.json", "events.out.tfevents.*"}


def run_folder_literals(root: Path) -> List[str]:
    """`file:line 'name'` for every string constant outside `rlpipe/runs/` that is a name of
    the run folder's layout (messages, with spaces, do not count: they only mention it)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "runs" in path.relative_to(root).parts[:1]:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found += [f"{path.relative_to(root.parent)}:{node.lineno} {node.value!r}"
                  for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in RUN_FOLDER_NAMES]
    return found


def test_only_rlpipe_runs_spells_the_run_folder_layout() -> None:
    found = run_folder_literals(PACKAGE)
    assert not found, ("the run folder's layout is rlpipe.runs' to know: ask a RunDir (or "
                       "rlpipe.runs' names) for these paths instead: " + "; ".join(found))


def test_the_layout_guard_sees_a_spelled_name(tmp_path: Path) -> None:
    pkg = tmp_path / "rlpipe"
    (pkg / "runs").mkdir(parents=True)
    (pkg / "runs" / "_layout.py").write_text('CONFIG = "config.json"\n')
    (pkg / "guard.py").write_text('import pathlib\n\n\ndef f(d):\n'
                                  '    print("no config.json in it")\n'
                                  '    return pathlib.Path(d) / "ckpt" / "best.pt"\n')
    assert sorted(run_folder_literals(pkg)) == ["rlpipe/guard.py:6 'best.pt'",
                                                "rlpipe/guard.py:6 'ckpt'"]
