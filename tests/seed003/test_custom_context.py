"""Seed 003, "v0.4.2 changes": the guide's custom `MyContext`, verbatim (only imports changed).

Its `__post_init__` calls `self.keep(...)` without `super().__post_init__()`.
"""
import dataclasses
from typing import Dict, List, Union

from rlpipe.contexts import Context, OfflineRLContext


# ---- verbatim from the seed -------------------------------------------------------------------
@dataclasses.dataclass
class MyContext(Context):

    # common
    total_step: int = 0
    var1: int = 0
    var2: int = 0
    var3: Union[Dict, List] = None
    var4: List = None

    def __post_init__(self):
        self.keep('var1', 'var2')
# ---- end of the seed's lines ------------------------------------------------------------------


def test_my_context_keeps_var1_var2_without_calling_super():
    ctx = MyContext()
    assert ctx.kept == {"total_step", "var1", "var2"}
    ctx.var1, ctx.var2, ctx.var3, ctx.var4 = 1, 2, {"a": 1}, [3]
    new = ctx.renew()
    assert (new.total_step, new.var1, new.var2, new.var3, new.var4) == (1, 1, 2, None, None)
    assert new.renew().total_step == 2 and new.renew().var2 == 2


def test_my_context_runs_in_a_task():
    from rlpipe.engine import Task

    seen = []
    t = Task()
    with t.start(async_mode=False, ctx=MyContext()):
        def count(ctx):
            ctx.var1 += 1
            seen.append((ctx.total_step, ctx.var1))
        t.use(count)
        t.run(max_step=3)
    assert seen == [(0, 1), (1, 2), (2, 3)]


def test_offline_context_train_epoch_is_not_kept_as_in_the_guides_table():
    ctx = OfflineRLContext()
    ctx.train_epoch, ctx.train_iter, ctx.last_eval_iter = 2, 7, 5
    new = ctx.renew()
    assert new.train_epoch == 0  # "train_epoch  Keeped False"
    assert (new.total_step, new.train_iter, new.last_eval_iter) == (1, 7, 5)
