"""Every offline test writes data sets to a temporary Minari root, never to ~/.minari."""
import pytest


@pytest.fixture
def minari_root(tmp_path, monkeypatch):
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


@pytest.fixture(autouse=True)
def _no_home_minari(tmp_path, monkeypatch):
    """A test that forgot `minari_root` still writes under tmp_path."""
    import os

    if "MINARI_DATASETS_PATH" not in os.environ:
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari-default"))
