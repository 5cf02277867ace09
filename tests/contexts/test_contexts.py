"""Contexts: field guard, keep/renew, defaults, pickling, the standard field tables."""
import dataclasses
import math
import pickle
from typing import Optional

import pytest

import rlpipe.contexts
from rlpipe.contexts import (Context, ContextFieldError, OfflineRLContext, OnlineRLContext,
                             field_names)


def test_public_names():
    assert rlpipe.contexts.__all__ == [
        "Context", "ContextFieldError", "MultiAgentRLContext", "OfflineRLContext",
        "OnlineRLContext", "field_names",
    ]


def test_field_guard_names_field_class_and_close_matches():
    ctx = OnlineRLContext()
    with pytest.raises(ContextFieldError) as info:
        ctx.env_stpe = 3
    err = info.value
    assert isinstance(err, AttributeError)
    assert err.field == "env_stpe" and err.context_class is OnlineRLContext
    assert "env_step" in err.close_matches
    message = str(err)
    assert "'env_stpe'" in message and "OnlineRLContext" in message and "'env_step'" in message
    assert "subclass" in message


def test_field_guard_without_close_match_lists_declared_fields():
    with pytest.raises(ContextFieldError) as info:
        OnlineRLContext().zzzz = 1
    assert info.value.close_matches == []
    assert "Did you mean" not in str(info.value)
    assert "train_iter" in str(info.value)


def test_declared_fields_can_be_set():
    ctx = OnlineRLContext()
    ctx.obs = [1, 2]
    assert ctx.obs == [1, 2]


def test_keep_of_unknown_name_raises_with_close_match():
    ctx = OnlineRLContext()
    with pytest.raises(ContextFieldError) as info:
        ctx.keep("train_itr")
    assert "cannot keep" in str(info.value) and "'train_iter'" in str(info.value)
    assert "train_itr" not in ctx.kept


def test_renew_carries_kept_drops_the_rest_and_advances_total_step():
    ctx = OnlineRLContext()
    ctx.env_step, ctx.train_iter, ctx.obs, ctx.eval_value = 10, 4, "obs", 1.5
    ctx.info_for_logging["x"] = 1
    new = ctx.renew()
    assert type(new) is OnlineRLContext and new is not ctx
    assert (new.env_step, new.train_iter, new.total_step) == (10, 4, 1)
    assert new.obs is None and new.eval_value == -math.inf and new.info_for_logging == {}
    assert new.kept == ctx.kept


def test_keep_holds_across_many_renews():
    ctx = OnlineRLContext()
    ctx.keep("eval_value")
    ctx.eval_value = 7.0
    for _ in range(50):
        ctx = ctx.renew()
    assert ctx.eval_value == 7.0 and "eval_value" in ctx.kept and ctx.total_step == 50


def test_pickle_keeps_kept_set_and_values():
    ctx = OnlineRLContext()
    ctx.keep("obs")
    ctx.obs, ctx.env_step = [1, 2, 3], 5
    back = pickle.loads(pickle.dumps(ctx))
    assert back.kept == ctx.kept and back.obs == [1, 2, 3] and back.env_step == 5
    assert back.renew().obs == [1, 2, 3]
    with pytest.raises(ContextFieldError):
        back.not_a_field = 1


def test_kept_state_round_trip():
    ctx = OnlineRLContext()
    ctx.env_step, ctx.train_iter = 123, 9
    state = ctx.kept_state()
    assert state["env_step"] == 123 and state["train_iter"] == 9 and "obs" not in state
    fresh = OnlineRLContext()
    fresh.load_kept_state(state)
    assert fresh.env_step == 123 and fresh.train_iter == 9


def test_has_default():
    ctx = OnlineRLContext()
    assert ctx.has_default("env_step") and ctx.has_default("eval_value")
    assert ctx.has_default("info_for_logging") and ctx.has_default("collect_kwargs")
    assert not ctx.has_default("obs") and not ctx.has_default("train_data")
    assert not ctx.has_default("no_such_field")


ONLINE_KEPT = {"total_step", "env_step", "env_episode", "train_iter", "last_eval_iter",
               "last_eval_value"}


def test_online_fields_and_kept_set_follow_the_seed_table():
    names = field_names(OnlineRLContext)
    for name in ("total_step", "env_step", "env_episode", "train_iter", "train_data", "train_output",
                 "collect_kwargs", "obs", "action", "inference_output", "trajectories", "episodes",
                 "trajectory_end_idx", "eval_value", "last_eval_iter"):
        assert name in names
    ctx = OnlineRLContext()
    assert ctx.kept == ONLINE_KEPT
    assert ctx.eval_value == -math.inf and ctx.last_eval_iter == -1


def test_offline_fields_and_kept_set():
    ctx = OfflineRLContext()
    assert {"train_epoch", "train_iter", "train_data", "train_output", "eval_value",
            "last_eval_iter"} <= field_names(OfflineRLContext)
    assert "env_step" not in field_names(OfflineRLContext)
    # seed 003's table: train_epoch is not kept (the data fetcher writes it every iteration)
    assert ctx.kept == {"total_step", "train_iter", "last_eval_iter", "last_eval_value"}
    ctx.train_epoch = 3
    ctx.train_iter = 5
    new = ctx.renew()
    assert new.train_epoch == 0 and new.train_iter == 5


@dataclasses.dataclass
class _MyContext(Context):
    var1: int = 0
    var2: Optional[list] = None

    def __post_init__(self):
        super().__post_init__()
        self.keep("var1")


def test_subclass_declares_new_fields_and_keeps():
    ctx = _MyContext()
    ctx.var1, ctx.var2 = 3, [1]
    new = ctx.renew()
    assert new.var1 == 3 and new.var2 is None and new.total_step == 1
    with pytest.raises(ContextFieldError):
        ctx.var3 = 1


@dataclasses.dataclass
class _NoSuper(OnlineRLContext):
    extra: int = 0

    def __post_init__(self):
        self.keep("extra")  # no super().__post_init__(): the parents' kept fields still hold


def test_kept_set_does_not_depend_on_calling_super():
    ctx = _NoSuper()
    assert ctx.kept == ONLINE_KEPT | {"extra"}
    ctx.env_step, ctx.extra = 4, 2
    new = ctx.renew()
    assert (new.env_step, new.extra, new.total_step) == (4, 2, 1)
    assert pickle.loads(pickle.dumps(new)).kept == new.kept


def test_keep_list_naming_an_undeclared_field_is_refused():
    @dataclasses.dataclass
    class Bad(Context):
        KEEP = ("nope",)

    with pytest.raises(ValueError, match="Bad.KEEP names 'nope'"):
        Bad().kept
