"""Every ```python block in docs/ and the README is executed, so the docs cannot rot.

The blocks of one file run in order in one namespace, in a temporary working directory.
A block fenced as ```python no-run is shown but not executed (for commands that need a cluster
or a long run); keep those rare. In ```bash blocks (not marked no-run) every line that starts
with `rlpipe ` is run, in order, in the same temporary directory, and must exit 0: through
`rlpipe.cli.main`, what the `rlpipe` command calls, in this process (a new interpreter per line
would spend seconds importing torch each time).
"""
from __future__ import annotations

import pathlib
import re
import shlex
import sys

import pytest

from rlpipe.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC_FILES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)
BASH_FENCE = re.compile(r"^```bash([^\n]*)\n(.*?)^```", re.S | re.M)


def cli_lines(path: pathlib.Path) -> list[str]:
    lines = []
    for match in BASH_FENCE.finditer(path.read_text(encoding="utf-8")):
        if "no-run" not in match.group(1):
            lines += [ln.split("#")[0].strip() for ln in match.group(2).splitlines()
                      if ln.strip().startswith("rlpipe ")]
    return lines


def python_blocks(path: pathlib.Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        if "no-run" in match.group(1):
            continue
        line = text[: match.start()].count("\n") + 2
        blocks.append((line, match.group(2)))
    return blocks


def test_docs_exist():
    assert (ROOT / "README.md").is_file()
    assert len(DOC_FILES) >= 2, "docs/ has no markdown files"


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: p.name)
def test_doc_examples_run(path, tmp_path, monkeypatch):
    blocks = python_blocks(path)
    if not blocks and not cli_lines(path):
        pytest.skip(f"{path.name} has no python or rlpipe examples")
    monkeypatch.chdir(tmp_path)
    # offline data sets of the examples go to this test's folder, never to ~/.minari
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    for line in cli_lines(path):
        code = main(shlex.split(line)[1:])
        assert code == 0, f"{path.name}: `{line}` exited with {code} (its error is above)"
        if "wandb" in sys.modules:  # W&B keeps settings per process, as a new `rlpipe` would not
            sys.modules["wandb"].teardown()
    namespace: dict = {"__name__": "__main__"}
    for line, code in blocks:
        compiled = compile(code, f"{path.relative_to(ROOT)}:{line}", "exec")
        exec(compiled, namespace)  # noqa: S102 - executing our own documentation
