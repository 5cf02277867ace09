"""Data-parallel learning (`rlpipe.data_parallel`): ranks started by torchrun average their
gradients, so they learn as one process on their joined batches and keep the same weights;
rank 0 writes the run folder; ranks that disagree fail with a message; outside torchrun
nothing changes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from rlpipe import DDPContext, data_parallel, get_rank, get_world_size, to_ddp_config
from rlpipe.middleware import CkptSaver
from rlpipe.zoo import get_entry

from .data_parallel_worker import dqn, dqn_batch

WORKER = Path(__file__).with_name("data_parallel_worker.py")
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]


def torchrun(script, *args, timeout=120):
    """Run `script` as two ranks; the ranks' outputs on failure."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([*TORCHRUN, str(script), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def learners(tmp_path_factory):
    out = tmp_path_factory.mktemp("learners")
    torchrun(WORKER, out)
    return out, [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


def test_ranks_learn_as_one_process_on_their_joined_batches(learners):
    _, (rank0, rank1) = learners
    # each rank started from its own seed's weights and learnt on its own rows, yet both hold
    # the same weights: rank 0's start, three steps on the averaged gradients
    for name in rank0["dqn"]:
        assert torch.equal(rank0["dqn"][name], rank1["dqn"][name]), name
    # one process from rank 0's start on both ranks' rows at once computes the same steps;
    # the clipping limit acts on every step, so this also says the ranks clip the averaged
    # gradient (clipping each rank's own and then averaging would differ)
    alone = dqn(seed=10)
    for step in range(3):
        rows = [dqn_batch(100 * step + rank, 8) for rank in (0, 1)]
        stats = alone.learn_mode.forward({k: np.concatenate([r[k] for r in rows])
                                          for k in rows[0]})
        assert stats["grad_norm"] > 0.05  # clipped
    for name, value in alone.online.state_dict().items():
        torch.testing.assert_close(rank0["dqn"][name], value, rtol=1e-5, atol=1e-6)
    start = dqn(seed=10).online.state_dict()
    assert not all(torch.equal(start[k], rank0["dqn"][k]) for k in start)  # it learnt


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads Linux's /proc")
def test_leaving_the_context_ends_gloos_threads_before_the_interpreter_shuts_down(learners):
    # gloo's worker threads outliving the context would run into interpreter shutdown, where
    # one dropping a tensor takes the GIL and aborts the finished process (SIGABRT). The
    # optimizers' first import of torch._dynamo happened inside the context, as in any script.
    out, _ = learners
    for rank in (0, 1):
        after = json.loads((out / f"rank{rank}.after.json").read_text())
        assert after["dynamo_imported_inside"]
        assert not [t for t in after["threads"] if "gloo" in t], (rank, after["threads"])


def test_every_learned_tensor_of_a_policy_stays_equal_across_ranks(learners):
    _, (rank0, rank1) = learners
    # SAC: actor, twin critics and the temperature, three optimizers on the fused-Adam path
    assert set(rank0["sac"]) == set(rank1["sac"]) and "log_alpha" in rank0["sac"]
    for name in rank0["sac"]:
        assert torch.equal(rank0["sac"][name], rank1["sac"][name]), name


def test_ppo_ranks_pool_their_observation_statistics_and_stop_their_epochs_alike(learners):
    _, (rank0, rank1) = learners
    # the ranks' mean approx-KL ended the epochs of both after the first: rank 1's own KL was
    # below the limit (alone it would have run all 4 epochs, 8 updates), rank 0's above it
    assert all(kl < 0.02 for kl in rank1["ppo_kl"]) and all(kl > 0.02 for kl in rank0["ppo_kl"])
    assert rank0["ppo_updates"] == rank1["ppo_updates"] == [2, 2]
    # and the running normaliser folded both ranks' rows (their scales differ)
    assert {"obs_norm.mean", "obs_norm.var"} <= set(rank0["ppo"])
    for name in rank0["ppo"]:
        assert torch.equal(rank0["ppo"][name], rank1["ppo"][name]), name


def test_rank_0_alone_writes_the_run_folder(learners):
    out, (rank0, rank1) = learners
    assert rank0["writers"] == [("CkptSaver", True), ("OnlineLogger", True)]
    # rank 1's saver and logger keep their chain contracts but write nothing
    assert rank1["writers"] == [("NotWriting", True), ("NotWriting", True)]
    assert (out / "run" / "metrics.jsonl").exists()


def test_ranks_with_different_networks_fail_and_say_why(learners):
    _, ranks = learners
    for rank in (0, 1):
        error = ranks[rank]["out_of_step"]["error"]
        assert error is not None and "different number on another rank" in error
        assert f"rank {rank}: the policy's networks have" in error


def test_outside_torchrun_the_context_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    cfg = get_entry("cartpole-dqn").resolve()
    before = (cfg.seed, cfg.policy.learn.batch_size, cfg.policy.collect.n_sample)
    with DDPContext():
        assert (get_rank(), get_world_size()) == (0, 1)
        cfg = to_ddp_config(cfg)
        policy = dqn(seed=0)
        policy.learn_mode.forward(dqn_batch(0, 8))
        assert isinstance(CkptSaver(policy, tmp_path / "run"), CkptSaver)
    assert (cfg.seed, cfg.policy.learn.batch_size, cfg.policy.collect.n_sample) == before
    assert not torch.distributed.is_initialized()


def test_the_context_refuses_a_half_set_launch(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    for name in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match="RANK is not set; launch the script with torchrun"):
        with DDPContext():
            pass
    with pytest.raises(ValueError, match="seconds > 0"):
        DDPContext(timeout_s=0)


def test_a_policy_whose_optimizer_it_does_not_hold_is_refused(monkeypatch):
    # as rank 0 of two; the check comes before any exchange with the other rank
    monkeypatch.setattr(data_parallel, "_group", data_parallel._Group(0, 2))
    policy = dqn(seed=0)
    policy.optimizers = [vars(policy).pop("optimizer")]  # kept in a list, not as an attribute
    with pytest.raises(RuntimeError, match="no optimizer kept as an attribute of the policy "
                                           r"steps \['QNetwork\."):
        policy.learn_mode
