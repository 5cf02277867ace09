"""A real two-node Ray cluster on this machine: serve, trainer, workers joining late, a node lost.

The commands are those of docs/distributed.md's "Cluster" block, parsed from the doc (so the
doc cannot rot): the hub is served on the head node, a trainer attaches, a worker on the head
collects, a worker started late puts its collector on the second node (custom resource
`worker_node`) and its samples reach the learner; the second node is then killed by process id
and the run goes on with the head's collector, `collect/lost_workers` >= 1 in metrics.jsonl;
`serve --stop` ends it; a fresh hub and `trainer --resume` continue the run from its final
checkpoint with a new head worker; no process of ours is left.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from rlpipe.middleware import load_checkpoint

from .nodes import Node, alive, free_port, processes

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "distributed.md"
# the run must outlive the late worker's arrival and the node's loss: no stop value ends it
# (CartPole's returns stop at 500, and DQN can reach 475 within seconds), the test
# ends it with `serve --stop`
SHORT_TRAINING = ["--set", "policy.learn.update_per_collect=8", "--set", "policy.collect.n_sample=64",
                  "--set", "policy.collect.random_collect_size=256", "--set", "replay.min_samples=256",
                  "--set", "env.stop_value=100000", "--max-env-steps", "100000000", "--no-progress"]


def doc_commands() -> Dict[str, List[List[str]]]:
    """The `rlpipe` lines of the Cluster section's bash block, by command."""
    text = DOC.read_text()
    section = text.split("## Cluster", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash no-run\n(.*?)```", section, re.S).group(1)
    found: Dict[str, List[List[str]]] = {}
    for line in block.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("rlpipe "):
            words = shlex.split(line)
            found.setdefault(words[1], []).append(words)
    return found


def wait_for(what: str, check: Callable[[], bool], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            tail = log.read_text()[-3000:] if log.exists() else "(no log)"
            raise AssertionError(f"{what}: not within {timeout:.0f} s; trainer log:\n{tail}")
        time.sleep(0.3)


def test_two_nodes_serve_trainer_workers(tmp_path: Path) -> None:
    commands = doc_commands()
    assert set(commands) == {"serve", "trainer", "worker"}, commands
    (serve, stop, serve_again), (trainer, resumed), (head_worker, remote_worker) = (
        commands["serve"], commands["trainer"], commands["worker"])
    assert "--stop" in stop and "worker_node" in remote_worker and "--resume" in resumed
    assert serve_again == serve

    port = free_port()
    address = f"127.0.0.1:{port}"
    run_dir = tmp_path / "run"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token",
               RAY_AUTH_TOKEN=secrets.token_hex(32), PYTHONPATH=str(ROOT))
    ray_bin = str(Path(sys.executable).with_name("ray"))
    temp = [Path(f"/tmp/rlpipe-rt-{port}-{i}") for i in (0, 1)]  # short: socket paths
    for t in temp:
        t.mkdir()

    def cli(words: List[str]) -> List[str]:
        words = [w.replace("HEAD:6379", address).replace("runs/tmrl", str(run_dir)) for w in words]
        return [sys.executable, "-m", "rlpipe.cli"] + words[1:]

    def start(words: List[str], name: str, extra: List[str] = ()) -> subprocess.Popen:
        out = open(tmp_path / f"{name}.log", "w")
        return subprocess.Popen(cli(words) + list(extra), env=env, stdout=out,
                                stderr=subprocess.STDOUT, cwd=tmp_path)

    log = run_dir / "log.txt"
    nodes: List[Node] = []
    cli_procs: List[subprocess.Popen] = []
    try:
        nodes.append(Node(ray_bin, env, str(temp[0]), port, head=True))
        nodes[0].wait_listening(port)
        nodes.append(Node(ray_bin, env, str(temp[1]), port, head=False,
                          resources='{"worker_node": 1}'))
        served = subprocess.run(cli(serve), env=env, capture_output=True, text=True, timeout=60)
        assert served.returncode == 0, served.stderr[-2000:]

        cli_procs.append(start(trainer, "trainer", SHORT_TRAINING))
        cli_procs.append(start(head_worker, "worker-head"))
        wait_for("the head worker's samples", lambda: log.exists() and
                 "first samples from collector head-0" in log.read_text(), 60, log)

        cli_procs.append(start(remote_worker, "worker-remote"))  # late: the training runs
        wait_for("the late worker's samples", lambda:
                 "first samples from collector remote-0" in log.read_text(), 60, log)
        remote_pids = nodes[1].snapshot()
        assert any("::_Collector" in cmd or "_Collector" in cmd for cmd in remote_pids.values()), \
            "the remote collector is not a process of the second node"

        nodes[1].kill()  # the second node dies mid-run
        wait_for("the lost collector's warning", lambda:
                 "lost 1 collector(s) (remote-0)" in log.read_text(), 30, log)
        time.sleep(3.0)  # more iterations on the head's collector alone (checked in metrics)

        stopped = subprocess.run(cli(stop), env=env, capture_output=True, text=True, timeout=60)
        assert stopped.returncode == 0, stopped.stderr[-2000:]
        for proc in cli_procs:
            proc.wait(timeout=60)
        trainer_out = (tmp_path / "trainer.log").read_text()
        assert cli_procs[0].returncode == 0, trainer_out[-3000:]
        assert cli_procs[1].returncode == 0, (tmp_path / "worker-head.log").read_text()[-2000:]

        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        lost_rows = [r for r in rows if r.get("collect/lost_workers", 0) >= 1]
        assert lost_rows, "collect/lost_workers never reached 1 in metrics.jsonl"
        first_lost = lost_rows[0]
        assert first_lost.get("collect/samples_from/remote-0", 0) > 0  # counted before it died
        last = rows[-1]
        # the run went on after the loss, on the head's collector alone
        assert last["env_step"] > first_lost["env_step"]
        assert last["collect/samples_from/head-0"] > first_lost["collect/samples_from/head-0"]
        assert last["collect/samples_from/remote-0"] == first_lost["collect/samples_from/remote-0"]
        assert last["collect/workers"] == 1

        # a fresh hub and `trainer --resume`: the run goes on from its final checkpoint
        saved = load_checkpoint(str(run_dir), which="final")["meta"]["env_step"]
        served = subprocess.run(cli(serve_again), env=env, capture_output=True, text=True,
                                timeout=60)
        assert served.returncode == 0, served.stderr[-2000:]
        again = start(resumed, "trainer-resumed",
                      ["--max-env-steps", str(saved + 512), "--no-progress"])
        cli_procs.append(again)
        cli_procs.append(start(head_worker, "worker-head-again"))
        again.wait(timeout=90)
        resumed_out = (tmp_path / "trainer-resumed.log").read_text()
        assert again.returncode == 0, resumed_out[-3000:]
        assert "resumed from" in log.read_text()
        cli_procs[-1].wait(timeout=60)  # the worker returns when the training ends
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        assert saved < rows[-1]["env_step"] <= saved + 512 + 3 * 256, (saved, rows[-1])
        assert rows[-1]["collect/samples_from/head-0"] > 0
        stopped = subprocess.run(cli(stop), env=env, capture_output=True, text=True, timeout=60)
        assert stopped.returncode == 0, stopped.stderr[-2000:]
    finally:
        for proc in cli_procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        ours = {}
        for node in nodes:
            ours.update(node.kill())
        left = alive(ours) + [p for p, (_, cmd) in processes().items()
                              if any(str(t) in cmd for t in temp)]
        for t in temp:
            shutil.rmtree(t, ignore_errors=True)
    assert not left, f"processes of this test's cluster left: {left}"
