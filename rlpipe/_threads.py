"""How many intra-op threads torch uses in a process that runs rlpipe: one, unless the user
says otherwise.

rlpipe's networks are small: on one thread their forward and backward passes run several
times faster than on torch's default of a thread per core (the threads' start-up and
synchronisation cost more than they save), and the other cores stay free for the envs. The
count is set once per process, when rlpipe first needs torch: on importing `rlpipe.models`,
`rlpipe.policies` or `rlpipe.middleware`, or on `import rlpipe` when torch is
already imported. This module never imports torch itself, so `import rlpipe` stays light.

The count, first rule that applies:

1. `rlpipe.set_num_threads(n)`, called at any time (before torch is imported, it waits);
2. ``RLPIPE_NUM_THREADS=n`` in the environment;
3. ``OMP_NUM_THREADS`` in the environment: torch already took its count from there, and rlpipe
   leaves it;
4. one thread.

A `torch.set_num_threads(n)` call made after rlpipe has set its count stands; one made before
(by a script that imports torch, sets it, and only then imports rlpipe's models) is replaced:
use `rlpipe.set_num_threads` or ``RLPIPE_NUM_THREADS`` to be independent of the order.
"""
from __future__ import annotations

import os
import sys
from typing import Optional

__all__ = ["ENV_VAR", "apply_thread_policy", "set_num_threads"]

ENV_VAR = "RLPIPE_NUM_THREADS"

_chosen: Optional[int] = None  # set_num_threads's count, applied when torch arrives
_applied = False  # the count is set once per process


def set_num_threads(n: int) -> None:
    """Use `n` torch intra-op threads in this process: now if torch is imported, else as soon
    as rlpipe imports it. Overrides ``RLPIPE_NUM_THREADS`` and ``OMP_NUM_THREADS``."""
    global _chosen, _applied
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"rlpipe.set_num_threads({n!r}): give a positive whole number of "
                         f"threads, e.g. rlpipe.set_num_threads(4)")
    _chosen = n
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
        _applied = True


def apply_thread_policy() -> None:
    """Set torch's intra-op thread count by the rules above, the first time it is called after
    torch is imported; later calls (and calls before torch is imported) do nothing."""
    global _applied
    if _applied or "torch" not in sys.modules:
        return
    _applied = True
    count = _chosen if _chosen is not None else _count_from_environment()
    if count is not None:
        sys.modules["torch"].set_num_threads(count)


def _count_from_environment() -> Optional[int]:
    """``RLPIPE_NUM_THREADS``'s count; None when ``OMP_NUM_THREADS`` is set (torch's count
    stands); else 1."""
    raw = os.environ.get(ENV_VAR, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise ValueError(f"{ENV_VAR}={raw!r}: give a positive whole number of torch threads "
                             f"(e.g. {ENV_VAR}=4), or unset it for rlpipe's default of one")
        return int(raw)
    if os.environ.get("OMP_NUM_THREADS", "").strip():
        return None
    return 1
