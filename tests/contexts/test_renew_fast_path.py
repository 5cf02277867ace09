import dataclasses

from rlpipe.contexts import OnlineRLContext


@dataclasses.dataclass
class WithPostInit(OnlineRLContext):
    scale: float = 1.0
    history: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        super().__post_init__()
        self.keep("scale")
        self.history.append("built")


@dataclasses.dataclass
class Plain(OnlineRLContext):
    extra: list = dataclasses.field(default_factory=list)


def test_subclass_with_its_own_post_init_is_really_constructed_on_renew():
    ctx = WithPostInit()
    ctx.scale = 3.0
    new = ctx.renew()
    assert new.history == ["built"] and new.scale == 3.0 and new.total_step == 1


def test_fast_renew_gives_fresh_mutable_defaults_and_carries_kept():
    ctx = Plain()
    ctx.extra.append(1)
    ctx.collect_kwargs["eps"] = 0.5
    ctx.env_step = 7
    new = ctx.renew()
    assert new.extra == [] and new.collect_kwargs == {} and new.env_step == 7
    assert new.extra is not Plain().extra
    assert new.kept == ctx.kept and new.obs is None and new.total_step == 1
