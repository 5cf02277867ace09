"""CkptSaver / load_checkpoint: periodic, best and final files; atomic writes; corrupt-file fallback."""
import json
import os

import numpy as np
import pytest
import torch
from easydict import EasyDict

from rlpipe.contexts import OnlineRLContext
from rlpipe.engine import _current, contract_of
from rlpipe.middleware import _io
from rlpipe.middleware.ckpt import CkptSaver, load_checkpoint, restore_checkpoint


class FakePolicy:
    """The smallest policy: one linear layer and an optimizer, with state_dict/load_state_dict."""

    def __init__(self, seed=0):
        torch.manual_seed(seed)
        self.net = torch.nn.Linear(3, 2)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)

    def state_dict(self):
        return {"net": self.net.state_dict(), "opt": self.opt.state_dict()}

    def load_state_dict(self, state):
        self.net.load_state_dict(state["net"])
        self.opt.load_state_dict(state["opt"])


class FakeTask:
    finish = False


@pytest.fixture
def running():
    task = FakeTask()
    _current.set_running(task)
    yield task
    _current.set_running(None)


def _iterate(saver, n_iter, iters_per_step=4, evals=None, ctx=None):
    ctx = ctx or OnlineRLContext()
    for i in range(n_iter):
        ctx.train_iter += iters_per_step
        ctx.env_step += 100
        if evals and i in evals:
            ctx.eval_value = evals[i]
            ctx.last_eval_value = evals[i]
        saver(ctx)
        ctx = ctx.renew()
    return ctx


def _names(run_dir):
    """The checkpoint folder's files, without the manifests (tested on their own below)."""
    return sorted(p.name for p in (run_dir / "ckpt").iterdir() if not p.name.endswith(".manifest.json"))


def test_every_train_freq_keeping_the_last(tmp_path, running):
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=10, save_best=False)
    _iterate(saver, 15)  # train_iter 4, 8, ..., 60: crosses 10, 20, ... at 12, 20, 32, 40, 52, 60
    assert _names(tmp_path) == ["iter_40.pt", "iter_52.pt", "iter_60.pt", "latest.json"]
    latest = json.loads((tmp_path / "ckpt" / "latest.json").read_text())
    assert latest["file"] == "iter_60.pt" and latest["train_iter"] == 60
    ckpt = load_checkpoint(tmp_path)
    assert ckpt["meta"]["train_iter"] == 60 and ckpt["meta"]["env_step"] == 1500
    assert ckpt["ctx"]["train_iter"] == 60 and ckpt["ctx"]["env_step"] == 1500
    assert ckpt["path"].endswith("iter_60.pt")
    assert isinstance(ckpt["meta"]["rlpipe_version"], str) and ckpt["meta"]["time"] > 0


def test_train_freq_from_cfg_and_keep_all(tmp_path, running):
    cfg = EasyDict(run_dir=str(tmp_path), ckpt={"train_freq": 8})
    _iterate(CkptSaver(cfg, FakePolicy(), keep_last=None), 6)
    assert [n for n in _names(tmp_path) if n.startswith("iter_")] == [
        "iter_16.pt", "iter_24.pt", "iter_8.pt"]


def test_best_only_on_improvement(tmp_path, running):
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy())
    _iterate(saver, 6, evals={0: 1.0, 2: 3.0, 3: 2.0, 5: -1.0})
    assert _names(tmp_path) == ["best.pt", "latest.json"]
    best = load_checkpoint(tmp_path, which="best")
    assert best["meta"]["eval_value"] == 3.0 and best["meta"]["train_iter"] == 12
    assert saver.best_value == 3.0
    assert json.loads((tmp_path / "ckpt" / "latest.json").read_text())["best_value"] == 3.0


def test_best_pt_holds_the_weights_another_process_evaluated(tmp_path, running):
    policy = FakePolicy()
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), policy, train_freq=1)
    evaluated = {"net": {k: torch.full_like(v, 3.0) for k, v in policy.net.state_dict().items()}}
    ctx = OnlineRLContext()
    ctx.train_iter, ctx.eval_value, ctx.eval_weights = 8, 5.0, evaluated
    saver._on_eval(ctx)  # what the learner's exchange emits for the evaluator's result
    saver(ctx)  # this iteration's periodic checkpoint: the live weights, resumable
    best = load_checkpoint(tmp_path, which="best")
    assert torch.all(best["policy"]["net"]["weight"] == 3.0) and best["meta"]["eval_value"] == 5.0
    assert set(best["policy"]) == {"net", "opt"}  # the rest of the state is the live one
    periodic = torch.load(tmp_path / "ckpt" / "iter_8.pt", weights_only=True)
    assert torch.equal(periodic["policy"]["net"]["weight"], policy.net.weight.detach())


def test_final_when_finish_is_set(tmp_path, running):
    policy = FakePolicy()
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), policy, train_freq=1000)
    ctx = _iterate(saver, 3)
    assert _names(tmp_path) == []  # nothing due yet
    running.finish = True
    with torch.no_grad():
        policy.net.weight.fill_(7.0)
    saver(ctx)
    saver(ctx)  # written once
    assert _names(tmp_path) == ["final.pt", "latest.json"]
    final = torch.load(tmp_path / "ckpt" / "final.pt", weights_only=True)
    assert set(final) == {"policy", "ctx", "extra", "resume", "meta"}
    assert torch.all(final["policy"]["net"]["weight"] == 7.0)
    assert load_checkpoint(tmp_path, which="final")["meta"]["train_iter"] == 12


def test_weights_only_round_trip_with_extra_state(tmp_path, running):
    rng = np.random.default_rng(3)
    extra = lambda: {"np_rng": rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                     "arr": np.arange(3.0), "scalar": np.float32(0.5)}  # noqa: E731
    policy = FakePolicy(seed=1)
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), policy, train_freq=1, extra_state=extra)
    ctx = OnlineRLContext()
    ctx.train_iter, ctx.env_step, ctx.env_episode, ctx.last_eval_value = 5, 640, 7, 12.5
    saver(ctx)
    raw = torch.load(tmp_path / "ckpt" / "iter_5.pt", weights_only=True)
    assert raw["extra"]["scalar"] == 0.5 and torch.equal(raw["extra"]["arr"], torch.arange(3.0, dtype=torch.float64))
    assert raw["extra"]["np_rng"] == rng.bit_generator.state
    fresh, fresh_ctx = FakePolicy(seed=2), OnlineRLContext()
    restore_checkpoint(tmp_path, policy=fresh, ctx=fresh_ctx)
    assert torch.equal(fresh.net.weight, policy.net.weight)
    assert (fresh_ctx.train_iter, fresh_ctx.env_step, fresh_ctx.env_episode, fresh_ctx.last_eval_value) == (
        5, 640, 7, 12.5)


def test_unsaveable_extra_state_is_a_clear_error(tmp_path, running):
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=1,
                      extra_state=lambda: {"buffer": object()})
    ctx = OnlineRLContext()
    ctx.train_iter = 1
    with pytest.raises(TypeError, match=r"extra_state\['buffer'\].*weights_only"):
        saver(ctx)
    assert _names(tmp_path) == []


def test_crash_mid_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "ckpt" / "iter_10.pt"
    _io.atomic_write_bytes(target, b"good")

    def half_then_crash(f):
        f.write(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _io.atomic_write(target, half_then_crash)
    assert target.read_bytes() == b"good"
    assert os.listdir(target.parent) == ["iter_10.pt"]  # no temp file left behind


def test_leftover_temp_and_truncated_file_fall_back_with_warning(tmp_path, running):
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=10, save_best=False)
    _iterate(saver, 10)  # iter_12, iter_20, iter_32, iter_40 (last 3 kept)
    folder = tmp_path / "ckpt"
    # A process killed mid-write leaves a temp file: ignored by the loader.
    (folder / ".iter_50.pt.tmp-4242-deadbeef").write_bytes(b"\x00" * 100)
    assert load_checkpoint(tmp_path)["meta"]["train_iter"] == 40
    # The newest checkpoint is truncated (e.g. copied half-way): warn, naming it, and fall back.
    newest = folder / "iter_40.pt"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    with pytest.warns(RuntimeWarning, match="iter_40.pt"):
        ckpt = load_checkpoint(tmp_path)
    assert ckpt["meta"]["train_iter"] == 32
    # A .pt file given explicitly that does not match its manifest is a one-line error naming it.
    with pytest.raises(ValueError, match=r"iter_40\.pt: SHA-256 does not match the manifest"):
        load_checkpoint(newest)


def test_no_loadable_checkpoint_names_the_folder(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match=str(folder)):
        load_checkpoint(tmp_path)
    (folder / "iter_1.pt").write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning, match="iter_1.pt"):
        with pytest.raises(FileNotFoundError, match="refused: iter_1.pt"):
            load_checkpoint(folder)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "nope")


def test_resumed_saver_keeps_the_best_value(tmp_path, running):
    cfg = EasyDict(run_dir=str(tmp_path))
    ctx = _iterate(CkptSaver(cfg, FakePolicy()), 3, evals={1: 5.0})
    saver = CkptSaver(cfg, FakePolicy())
    _iterate(saver, 2, evals={0: 4.0}, ctx=ctx)  # resumed at train_iter 12: 4.0 is not a new best
    assert saver.best_value == 5.0
    assert load_checkpoint(tmp_path, which="best")["meta"]["eval_value"] == 5.0


def test_arguments_are_checked(tmp_path):
    cfg = EasyDict(run_dir=str(tmp_path))
    with pytest.raises(ValueError, match="train_freq"):
        CkptSaver(cfg, FakePolicy(), train_freq=0)
    with pytest.raises(ValueError, match="keep_last"):
        CkptSaver(cfg, FakePolicy(), keep_last=0)
    with pytest.raises(TypeError, match="state_dict"):
        CkptSaver(cfg, object())
    with pytest.raises(ValueError, match="cfg.run_dir"):
        CkptSaver(EasyDict(), FakePolicy())


def test_contract_reads_counters_writes_nothing(tmp_path):
    c = contract_of(CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy()))
    assert c.writes == frozenset()
    assert {"train_iter", "env_step", "eval_value"} <= c.reads | c.optional_reads


@pytest.mark.parametrize("async_mode", [False, True])
def test_final_through_a_task_even_when_finish_is_set_later(tmp_path, async_mode):
    from rlpipe.engine import Task, contract
    from rlpipe.middleware.termination import termination_checker

    @contract(reads=("train_iter",), writes=("train_iter", "env_step"))
    def learn(ctx):
        ctx.train_iter += 2
        ctx.env_step += 10

    with Task().start(async_mode=async_mode, ctx=OnlineRLContext()) as task:
        task.use(learn)
        task.use(CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=4))
        task.use(termination_checker(max_train_iter=10))  # after the saver: finish comes late
        task.run(max_step=100)
    assert _names(tmp_path) == ["final.pt", "iter_4.pt", "iter_8.pt", "latest.json"]
    final = load_checkpoint(tmp_path)
    assert final["path"].endswith("final.pt") and final["meta"]["train_iter"] == 10


def test_final_through_a_task_under_max_step(tmp_path):
    from rlpipe.engine import Task, contract

    @contract(reads=("train_iter",), writes=("train_iter",))
    def learn(ctx):
        ctx.train_iter += 1

    with Task().start(ctx=OnlineRLContext()) as task:
        task.use(learn)
        task.use(CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), save_best=False))
        task.run(max_step=3)
    assert load_checkpoint(tmp_path, which="final")["ctx"]["train_iter"] == 3


class EventTask(FakeTask):
    """A fake task with events, to see what the saver emits."""

    def __init__(self):
        self.emitted = []

    def emit(self, event, *args):
        self.emitted.append(event)

    def on(self, event, fn):
        pass

    def once(self, event, fn):
        pass


def test_every_checkpoint_has_a_signed_manifest_written_before_latest(tmp_path):
    from rlpipe.runs import CHECKPOINT_EVENT, RunDir

    task = EventTask()
    _current.set_running(task)
    try:
        (tmp_path / "metrics.jsonl").write_text('{"env_step": 1}\n')
        saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=10, save_best=False)
        _iterate(saver, 3)  # iter_12
    finally:
        _current.set_running(None)
    assert task.emitted == [CHECKPOINT_EVENT]  # the logger's cue to flush before the manifest
    run = RunDir(tmp_path)
    manifest = json.loads(run.manifest("iter_12.pt").read_text())
    assert list(manifest["files"]) == ["iter_12.pt"]
    assert manifest["logs"] == {"metrics.jsonl": 16}
    assert run.verify("iter_12.pt", signed=True).manifest == manifest
    assert os.stat(run.manifest("iter_12.pt")).st_mtime_ns <= os.stat(run.latest).st_mtime_ns


def test_pruned_checkpoints_lose_their_manifests(tmp_path, running):
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=10, save_best=False)
    _iterate(saver, 15)
    manifests = sorted(p.name for p in (tmp_path / "ckpt").glob("*.manifest.json"))
    assert manifests == ["iter_40.manifest.json", "iter_52.manifest.json", "iter_60.manifest.json"]


def test_a_flipped_byte_in_a_pt_is_refused_and_the_previous_one_used(tmp_path, running):
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), FakePolicy(), train_freq=10, save_best=False)
    _iterate(saver, 10)
    newest = tmp_path / "ckpt" / "iter_40.pt"
    data = bytearray(newest.read_bytes())
    data[-200] ^= 0x01  # deep in the tensor data: torch.load alone would not notice
    newest.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match=r"iter_40\.pt.*SHA-256"):
        assert load_checkpoint(tmp_path)["meta"]["train_iter"] == 32


@pytest.mark.parametrize("where", ["weights", "optimizer"])
def test_a_non_finite_state_is_never_written(tmp_path, running, where):
    from rlpipe.middleware import NonFiniteStateError

    policy = FakePolicy()
    saver = CkptSaver(EasyDict(run_dir=str(tmp_path)), policy, train_freq=10)
    ctx = _iterate(saver, 3, evals={0: 1.0})  # iter_12 and best.pt
    before = _names(tmp_path)
    if where == "weights":
        with torch.no_grad():
            policy.net.weight[0, 0] = float("nan")
    else:
        policy.net(torch.ones(1, 3)).sum().backward()
        policy.opt.step()
        next(iter(policy.opt.state.values()))["exp_avg_sq"].fill_(float("inf"))
    with pytest.raises(NonFiniteStateError) as err:
        _iterate(saver, 2, evals={1: 9.0}, ctx=ctx)
    assert isinstance(err.value, FloatingPointError)
    assert err.value.last_good == tmp_path / "ckpt" / "iter_12.pt"
    assert err.value.checkpoint.name == "iter_20.pt"
    assert ("net" if where == "weights" else "opt") in err.value.tensor
    assert _names(tmp_path) == before  # neither latest, nor best, nor final
    assert load_checkpoint(tmp_path)["meta"]["train_iter"] == 12
