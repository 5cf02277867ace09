"""DI-engine's `apex_dqn_ddp.py` (ported in apex_dqn_ddp_port.py), run as two ranks by
torchrun, sync and async: the ranks learn CartPole together until the evaluator reaches the
stop value, with the same weights on both, rank 0's run folder holding the checkpoints; a rank
that stops early ends the other's run instead of leaving it waiting; a rank killed mid-run
leaves rank 0's run checkpointed and an error that says what happened."""
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch

from rlpipe.config import to_plain
from rlpipe.middleware import load_checkpoint

from ..engine.test_data_parallel import TORCHRUN, torchrun
from .test_example_ports import tiny_cfg

PORT = Path(__file__).with_name("apex_dqn_ddp_port.py")


def run_port(tmp_path, cfg):
    (tmp_path / "out").mkdir()
    (tmp_path / "cfg.json").write_text(json.dumps(to_plain(cfg)))
    torchrun(PORT, tmp_path / "cfg.json", tmp_path / "out", timeout=240)
    return [torch.load(tmp_path / "out" / f"rank{r}.pt") for r in (0, 1)]


def apex_dqn_ddp_launch(cfg, ranks=2):
    """The port at full budget (benchmarks/dingengine_ports.py --which apex-dqn-ddp): `ranks`
    ranks on `cfg`, the evaluator lines of every rank relayed to this process's evaluator log
    (the ranks stop together when any rank's evaluation reaches the stop value)."""
    logging.getLogger().setLevel(logging.INFO)  # as the ports' scripts do
    cfg.exp_name = cfg.run_dir  # the checkpoints go to the run folder, not ./cartpole_dqn_per
    evaluator_log = logging.getLogger("rlpipe.middleware.evaluator")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "cfg.json").write_text(json.dumps(to_plain(cfg)))
        (tmp / "out").mkdir()
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                   f"--nproc_per_node={ranks}", str(PORT),
                   str(tmp / "cfg.json"), str(tmp / "out")]
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) as ranks_output:
            for line in ranks_output.stdout:
                if "eval at train_iter" in line:
                    evaluator_log.info(line[line.index("eval at train_iter"):].strip())
        if ranks_output.returncode:
            raise RuntimeError(f"torchrun exited with {ranks_output.returncode}")


def port_cfg(tmp_path):
    cfg = tiny_cfg("cartpole-dqn", tmp_path / "run")
    cfg.exp_name = str(tmp_path / "run")  # CkptSaver(policy, cfg.exp_name, ...) as written
    cfg.policy.collect.n_sample = 64  # 32 per rank
    cfg.policy.learn.batch_size = 64  # 32 per rank
    cfg.policy.learn.update_per_collect = 16
    cfg.policy.eval.evaluator.eval_freq = 64
    return cfg


@pytest.mark.slow
def test_two_ranks_learn_cartpole_to_the_stop_value_with_the_same_weights(tmp_path):
    cfg = port_cfg(tmp_path)
    cfg.env.stop_value = 150  # as the example: no budget, the evaluator ends the run
    rank0, rank1 = run_port(tmp_path, cfg)
    # to_ddp_config: half the batch each, and each rank its own seed (its own data)
    assert (rank0["batch_size"], rank1["batch_size"]) == (32, 32)
    assert (rank0["seed"], rank1["seed"]) == (cfg.seed, cfg.seed + 1)
    assert max(rank0["eval_value"], rank1["eval_value"]) >= 150
    assert rank0["train_iter"] == rank1["train_iter"] > 0
    for name in rank0["online"]:
        assert torch.equal(rank0["online"][name], rank1["online"][name]), name
    # rank 0's saver wrote the weights both ranks ended with
    final = torch.load(tmp_path / "run" / "ckpt" / "final.pt", weights_only=False)
    assert final["meta"]["train_iter"] == rank0["train_iter"]
    for name, value in final["policy"]["online"].items():
        assert torch.equal(value, rank0["online"][name]), name


def test_a_rank_that_stops_ends_the_others_run(tmp_path):
    cfg = port_cfg(tmp_path)
    cfg.async_mode = True
    cfg.env.stop_value = 10_000
    cfg.max_env_step = [256, 1_000_000]  # rank 0's budget is small, rank 1's all but endless
    rank0, rank1 = run_port(tmp_path, cfg)
    assert rank0["env_step"] >= 256 and rank0["finish_reason"] is None
    # rank 1 saw at its next gradient exchange that rank 0 had stopped, and ended its run
    assert rank1["finish_reason"] == "a data-parallel peer ended its run"
    assert rank1["env_step"] < 2_000


def test_a_killed_rank_leaves_rank_0s_run_checkpointed_and_says_why(tmp_path):
    cfg = port_cfg(tmp_path)
    cfg.env.stop_value = 10_000
    cfg.max_env_step = 1_000_000  # the loss of rank 1 ends the run, not the budget
    cfg.sigkill_at_train_iter = {"1": 160}
    (tmp_path / "out").mkdir()
    (tmp_path / "cfg.json").write_text(json.dumps(to_plain(cfg)))
    env = {k: v for k, v in os.environ.items()
           if k not in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([*TORCHRUN, str(PORT), str(tmp_path / "cfg.json"),
                           str(tmp_path / "out")], env=env, capture_output=True, text=True,
                          timeout=240)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]  # the launch reports the failure
    # rank 0 saw the loss at its next exchange (or torchrun's SIGTERM first, in the moment
    # between rank 1's death and rank 0's next exchange), ended its run after that iteration,
    # wrote its final checkpoint and then said why it stopped (not a gloo traceback mid-iteration)
    ended = ("a data-parallel peer was lost", "stopped by SIGTERM")
    assert re.search(r"the run ended after iteration \d+: (%s)" % "|".join(ended), output)
    assert "PeerLost: data-parallel rank 0: a peer could not be reached mid-run" in output
    # gloo's reason, "Connection closed by peer" or "Connection reset by peer"
    assert re.search(r"PeerLost: .*mid-run \(.*Connection \w+ by peer[^)]*\); this rank", output)
    rank0 = torch.load(tmp_path / "out" / "rank0.pt")
    assert rank0["finish_reason"] in ended
    assert rank0["train_iter"] >= 160
    final = load_checkpoint(tmp_path / "run", which="final")
    assert final["meta"]["train_iter"] == rank0["train_iter"]
    for name, value in final["policy"]["online"].items():
        assert torch.equal(value, rank0["online"][name]), name
    assert not (tmp_path / "out" / "rank1.pt").exists()
