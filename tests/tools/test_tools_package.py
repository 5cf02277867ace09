"""`rlpipe.tools`, the package face of the after-training tools: its names resolve to the tools'
functions on first use, and importing it loads none of them (no torch)."""
import subprocess
import sys

import pytest

import rlpipe.tools


def test_importing_the_package_imports_no_tool_and_no_torch():
    script = ("import sys\nimport rlpipe.tools\n"
              "print(sorted(m for m in sys.modules if m.startswith('rlpipe.tools.')"
              " or m in ('torch', 'gymnasium')))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("name", rlpipe.tools.__all__)
def test_each_listed_name_is_the_object_of_its_tools_module(name):
    import importlib

    value = getattr(rlpipe.tools, name)
    home = importlib.import_module(value.__module__)
    assert value.__module__.startswith("rlpipe.tools.") and getattr(home, name) is value
    assert name in dir(rlpipe.tools)


def test_a_name_the_package_lacks_is_refused_with_its_names():
    with pytest.raises(AttributeError, match="no attribute 'evaluate_runs'.*evaluate_run"):
        rlpipe.tools.evaluate_runs  # noqa: B018 - the lookup is what is tested
    from rlpipe.tools import evaluate  # a module of the package, not a listed name

    assert evaluate.evaluate_run is rlpipe.tools.evaluate_run
