"""Offline zoo tests: data sets in a temporary Minari root (the fixtures of tests/offline),
runs in a temporary working folder."""
import pytest

from tests.offline.conftest import _no_home_minari, minari_root  # noqa: F401 - fixtures


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
