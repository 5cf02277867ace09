"""A zoo entry is an explicit `Entry` record that its module declares; a distributed run hands
its processes the entry's pipeline by reference, not by name."""
import importlib
import multiprocessing
import os
import pickle
import subprocess
import sys

import pytest

from rlpipe.pipelines.distributed import Job, load, reference
from rlpipe.zoo import registry
from rlpipe.zoo.registry import ENTRIES, Entry, get_entry, list_entries


@pytest.mark.parametrize("name", list_entries())
def test_each_entry_module_declares_its_record(name):
    module = importlib.import_module(ENTRIES[name])
    entry = get_entry(name)
    assert entry is module.ENTRY and entry.name == name
    assert (entry.runner is None) != (entry.main is None)
    assert entry.pipeline in ("off-policy", "on-policy", "offline")
    assert entry.run_name == name and entry.doc == module.__doc__


def test_a_record_trains_with_a_pipeline_function_or_a_main_not_both():
    def main(cfg):
        return {}

    with pytest.raises(TypeError, match="either runner= .* or main=, not neither"):
        Entry(name="x", policy_cls=object, config={})
    with pytest.raises(TypeError, match="not both"):
        Entry(name="x", policy_cls=object, config={}, runner=main, main=main)


def test_a_module_without_its_record_is_a_one_line_error(monkeypatch):
    monkeypatch.setitem(registry.ENTRIES, "no-record", "rlpipe.zoo._atari_settings")
    with pytest.raises(TypeError, match=r"must end with `ENTRY = Entry\(name='no-record'"):
        get_entry("no-record")


def test_the_job_pickles_the_pipeline_and_policy_by_reference():
    from rlpipe.pipelines.offpolicy import run_offpolicy
    from rlpipe.policies import SACPolicy

    job = get_entry("pendulum-sac").job()
    assert job.runner is run_offpolicy and job.policy_cls is SACPolicy
    assert job.main is None and job.prepare is None
    assert job.references()[:2] == ("rlpipe.policies.sac:SACPolicy",
                                    "rlpipe.pipelines.offpolicy:run_offpolicy")
    again = pickle.loads(pickle.dumps(job))
    assert again == job and again.runner is run_offpolicy


def test_an_entry_that_adds_to_its_pipeline_hands_on_its_main():
    from rlpipe.zoo.rtpendulum import sac

    job = get_entry("rtpendulum-sac").job()
    assert job.main is sac.main and job.runner is None
    assert load(job.references()[2]) is sac.main
    assert job.requires == (("rtgym", "realtime"),)


def test_a_generic_entry_prepares_each_process():
    from rlpipe.pipelines.onpolicy import run_onpolicy
    from rlpipe.zoo.generic import prepare_run

    job = pickle.loads(pickle.dumps(get_entry("ppo@CartPole-v1").job()))
    assert job.runner is run_onpolicy and job.prepare is prepare_run


def _here(cfg):
    return {"ran": cfg["x"]}


def test_a_job_runs_here_what_no_other_process_could_import():
    def nested(cfg, policy_cls):
        return {"policy": policy_cls.__name__, "x": cfg["x"]}

    job = Job.of("x", object, runner=nested)
    assert job.run({"x": 3}) == {"policy": "object", "x": 3}
    with pytest.raises(TypeError, match="top level of an importable module"):
        pickle.dumps(job)


def test_what_a_process_cannot_import_back_is_refused():
    with pytest.raises(TypeError, match="top level of an importable module"):
        reference(lambda cfg: cfg, "main")
    with pytest.raises(TypeError, match="either runner="):
        Job.of("x", object)
    with pytest.raises(AttributeError, match="names no attribute 'nothing_here'"):
        load("rlpipe.pipelines.distributed:nothing_here")


def test_a_job_missing_an_optional_package_says_how_to_install_it():
    job = Job.of("x", object, main=_here, requires={"no_such_package_xyz": "extra"})
    with pytest.raises(ImportError, match=r'pip install "rlpipe\[extra\]"'):
        job.run({"x": 1})


def test_import_rlpipe_leaves_torch_out_and_train_in_reach():
    code = ("import sys, rlpipe; assert 'torch' not in sys.modules; "
            "from rlpipe.training import resume, train; "
            "assert rlpipe.train is train and rlpipe.resume is resume; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert out.stdout.strip() == "ok", out.stderr


ENV_MODULE = '''import gymnasium as gym


def make():
    return gym.make("CartPole-v1")
'''
SMALL = ["policy.collect.random_collect_size=128", "replay.min_samples=128",
         "policy.collect.n_sample=64", "policy.eval.evaluator.n_episode=1",
         "policy.eval.evaluator.eval_freq=64", "policy.learn.update_per_collect=4",
         "policy.model.hidden=(16, 16)", "ckpt.train_freq=32"]


@pytest.mark.slow
def test_a_generic_entry_on_a_module_env_runs_distributed(tmp_path, monkeypatch):
    """`--algo dqn --env module:factory --async`: the collector and evaluator processes run
    the generic entry's job (its prepare step registers the user's env) and the run ends."""
    from rlpipe.training import train

    (tmp_path / "myenvs_for_jobs.py").write_text(ENV_MODULE)
    monkeypatch.chdir(tmp_path)
    result = train(algo="dqn", env="myenvs_for_jobs:make", seed=0, max_env_step=512,
                   async_mode=True, progress=False, run_dir=str(tmp_path / "run"),
                   overrides=SMALL)
    assert result["collectors"] == 1 and result["env_step"] >= 512
    assert multiprocessing.active_children() == []
