"""`rlpipe graph`: a zoo pipeline's dataflow from its contracts, as text and as a figure."""
import numpy as np
import pytest
from PIL import Image

from rlpipe.cli import main
from rlpipe.engine import contract, contract_of
from rlpipe.engine._scheduler import dependencies
from rlpipe.zoo import MissingDependencyError, list_entries
from rlpipe.training import train
from rlpipe.tools.graph import AFTER, PREVIOUS, SAME, Edge, entry_graph, graph_of_chain

DQN_CHAIN = ["interaction_evaluator._evaluator", "eps_greedy_handler._eps_greedy",
             "StepCollector", "data_pusher._data_pusher", "OffPolicyLearner",
             "termination_checker._terminate", "FinalEvaluation", "OnlineLogger", "CkptSaver", "ProgressBar"]


def _c(**kw):
    return contract_of(contract(**kw)(lambda ctx: None))


def test_edges_waits_and_overlaps_of_a_small_chain():
    chain = [("act", _c(reads=("obs", "train_iter"), writes=("action",))),
             ("step", _c(reads=("action",), writes=("obs", "trajectories"), emits=("episode_end",))),
             ("learn", _c(reads=("train_iter",), writes=("train_iter", "train_output"))),
             ("fetch", _c(writes=("train_data",), reads_after=("train_output",))),
             ("stop", _c(reads=("obs",), finishes=True))]
    g = graph_of_chain(chain, "small")
    assert set(g.edges) == {
        Edge(1, 0, "obs", PREVIOUS), Edge(2, 0, "train_iter", PREVIOUS),
        Edge(0, 1, "action", SAME), Edge(2, 2, "train_iter", PREVIOUS),
        Edge(2, 3, "train_output", AFTER), Edge(1, 4, "obs", SAME)}
    assert g.waits_for == tuple(dependencies([c for _, c in chain]))  # the scheduler's own view
    assert g.levels == (0, 1, 1, 0, 2)
    assert g.overlaps[2] == (1, 3, 4) and g.overlaps[0] == (3,)
    for j, others in enumerate(g.overlaps):  # overlap is symmetric
        assert all(j in g.overlaps[i] for i in others)


def test_only_kept_fields_come_from_the_previous_iteration():
    chain = [("act", _c(reads=("obs", "train_iter"), writes=("action",))),
             ("step", _c(reads=("action",), writes=("obs",))),
             ("learn", _c(reads=("train_iter",), writes=("train_iter",)))]
    g = graph_of_chain(chain, kept={"train_iter"})
    assert Edge(2, 0, "train_iter", PREVIOUS) in g.edges
    assert not any(e.field == "obs" and e.when == PREVIOUS for e in g.edges)  # starts fresh


def test_an_undeclared_middleware_is_a_barrier():
    g = graph_of_chain([("a", _c(writes=("obs",))), ("user", None), ("b", _c(reads=("obs",)))])
    assert g.waits_for == ((), (0,), (0, 1)) and g.overlaps == ((), (), ())


def test_cartpole_dqn_graph_is_the_chain_a_run_uses():
    g = entry_graph("cartpole-dqn")
    assert [s.name for s in g.stages] == DQN_CHAIN
    by = {s.name: s.position for s in g.stages}
    assert Edge(by["StepCollector"], by["data_pusher._data_pusher"], "trajectories", SAME) in g.edges
    assert by["OffPolicyLearner"] in g.overlaps[by["StepCollector"]]  # learner beside collector
    evaluator = g.stages[0].contract
    assert evaluator.emits == {"eval_end"} and evaluator.finishes
    assert g.stages[by["termination_checker._terminate"]].contract.finishes
    assert g.stages[by["StepCollector"]].contract.emits == {"episode_end"}


def test_the_graph_matches_what_train_runs(tmp_path):
    result = train("cartpole-ppo", max_env_step=256, run_dir=str(tmp_path / "run"),
                   progress=True, overrides=["policy.eval.evaluator.n_episode=1"])
    ran = [row.name for row in result["profile"].middleware]
    assert [s.name for s in entry_graph("cartpole-ppo").stages] == ran
    assert "gae_estimator._gae_estimator" in ran


def test_cli_prints_the_graph(capsys):
    assert main(["graph", "cartpole-dqn"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cartpole-dqn (off-policy pipeline, 10 middleware)")
    assert "[3] data_pusher._data_pusher" in out and "trajectories <- [2]" in out
    assert "events:      emits eval_end; may finish the run" in out
    assert "[2] StepCollector  (role: collector)" in out
    assert "total_step (kept)" in out and "collect_kwargs <- [1]" in out
    assert "waits for [0], [1]; may overlap [4]" in out  # the collector beside the learner


def test_cli_set_changes_the_pipeline(capsys):
    assert main(["graph", "cartpole-dqn", "--set", "policy.learn.nstep=3"]) == 0
    assert "nstep_reward_enhancer" in capsys.readouterr().out


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_cli_draws_the_graph(suffix, tmp_path, capsys):
    out = tmp_path / f"graph{suffix}"
    assert main(["graph", "cartpole-ppo", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    if suffix == ".svg":
        text = out.read_text()
        assert "<svg" in text[:1000] and "gae_estimator" in text
        return
    with Image.open(out) as image:
        pixels = np.asarray(image.convert("RGB")).astype(int)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 600
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50
    blue_box = (np.abs(pixels - np.array([0xdb, 0xe9, 0xf6])).max(axis=-1) <= 2)  # collector
    orange_box = (np.abs(pixels - np.array([0xfd, 0xe3, 0xc8])).max(axis=-1) <= 2)  # learner
    assert blue_box.sum() > 1000 and orange_box.sum() > 1000


@pytest.mark.parametrize("argv, expected", [
    (["graph", "cartpol-dqn"], "unknown zoo entry 'cartpol-dqn'"),
    (["graph", "cartpole-dqn", "--out", "graph.pdf"], "name a .png or .svg file"),
    (["graph", "cartpole-dqn", "--out", "no/such/folder/graph.png"], "does not exist"),
    (["graph", "cartpole-dqn", "--set", "policy.learn.lrr=1"], "policy.learn.lrr"),
])
def test_cli_refusals(argv, expected, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err


def test_async_off_policy_graph_says_train_uses_processes(capsys):
    assert main(["graph", "cartpole-dqn", "--set", "async_mode=True"]) == 0
    assert "in processes of their own" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("name", list_entries())
def test_every_zoo_entry_has_a_graph(name):
    try:
        g = entry_graph(name)
    except MissingDependencyError as missing:
        pytest.skip(str(missing))
    assert g.stages[0].name == "interaction_evaluator._evaluator"
    assert any(s.contract is not None and s.contract.finishes for s in g.stages)
