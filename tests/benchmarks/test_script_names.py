"""A benchmark script's folder is on sys.path when it runs (and tests import from it), so a
script named like an installed package (benchmarks/mujoco.py) shadows that package there."""
import importlib.metadata
import pathlib

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def test_no_benchmark_script_is_named_like_an_installed_top_level_package():
    installed = set(importlib.metadata.packages_distributions())
    assert "torch" in installed  # the check sees what is installed
    clashes = sorted(p.name for p in BENCHMARKS.glob("*.py") if p.stem in installed)
    assert clashes == [], f"rename {clashes}: they shadow installed packages of the same name"
