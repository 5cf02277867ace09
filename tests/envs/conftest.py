import os

import pytest


def child_pids() -> set[int]:
    """Live child processes of this process (psutil if installed, else /proc)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.add(int(entry))
    return found


@pytest.fixture
def no_leaked_children():
    """Fails the test if it leaves a child process behind."""
    before = child_pids()
    yield
    leaked = child_pids() - before
    assert not leaked, f"child processes left behind: {sorted(leaked)}"
