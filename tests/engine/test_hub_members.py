"""Hub membership: collectors of a served hub join, beat, leave; silent ones are counted lost."""
import asyncio
import logging

import pytest

from rlpipe.engine.parallel import Hub, local_links
from rlpipe.middleware._workers import WorkerCounts


def test_join_beat_leave_and_lost() -> None:
    async def scenario():
        hub = Hub(queue_size=2, lost_after_s=0.2)
        assert [await hub.join("a-0"), await hub.join("b-0")] == [0, 1]
        with pytest.raises(ValueError, match="already in this run"):
            await hub.join("a-0")
        await hub.leave("b-0")  # a clean leave is not a loss
        await asyncio.sleep(0.3)  # a-0 stays silent
        state = await hub.state()
        late = await hub.join("c-0")  # a late joiner gets the next index
        assert await hub.beat("c-0") and not await hub.beat("a-0")
        return state, late, await hub.state()

    state, late, after = asyncio.run(scenario())
    assert state["members"] == [] and state["lost"] == ["a-0"] and state["joined"] == 2
    assert late == 2 and after["members"] == ["c-0"] and after["lost"] == ["a-0"]


def test_lost_processes_reported_by_the_launcher_and_their_return() -> None:
    async def scenario():
        hub = Hub()
        assert await hub.note_lost("collector 1") == 1
        away = await hub.state()
        await hub.note_back("collector 1")
        return away, await hub.state()

    away, back = asyncio.run(scenario())
    assert away["lost"] == ["collector 1"] and away["away"] == ["collector 1"]
    assert back["lost"] == ["collector 1"] and back["away"] == []


def test_worker_counts_a_lost_collector_and_its_return(caplog) -> None:
    learner, _, _, close = local_links(collectors=2)
    try:
        counts = WorkerCounts(learner, every_s=0.0)
        with caplog.at_level(logging.INFO, "rlpipe"):
            learner._t.call("note_lost", "collector 1")
            lost = counts.update([], 1)
            again = counts.update([], 1)
            learner._t.call("note_back", "collector 1")
            back = counts.update([], 1)
        assert (lost["collect/workers"], lost["collect/lost_workers"]) == (1, 1)
        assert (again["collect/workers"], again["collect/lost_workers"]) == (1, 1)
        assert (back["collect/workers"], back["collect/lost_workers"]) == (2, 1)
        said = [r.getMessage() for r in caplog.records if "collector 1" in r.getMessage()]
        assert said == ["lost 1 collector(s) (collector 1): dead, and Ray has not re-created "
                        "them (their node is gone?); training goes on with 1",
                        "collector(s) back: collector 1 (Ray re-created them); training goes "
                        "on with 2"]
    finally:
        close()


def test_worker_counts_per_source_and_one_warning_per_loss(caplog) -> None:
    learner, _, _, close = local_links(collectors=2)
    try:
        counts = WorkerCounts(learner, every_s=0.0)
        batch = [{"source": "collector 0", "env_step": 5, "version": 1},
                 {"source": "collector 1", "env_step": 3, "version": 3}]
        metrics = counts.update(batch, 3)
        metrics = counts.update(batch[:1], 3)
        assert metrics["collect/samples_from/collector_0"] == 10
        assert metrics["collect/samples_from/collector_1"] == 3
        assert metrics["collect/workers"] == 2 and metrics["collect/lost_workers"] == 0
        assert metrics["parallel/weights_lag"] == 2
        learner._t.call("join", "w-0")
        learner._t._hub._lost_after_s = 0.0  # w-0 is silent from now on
        with caplog.at_level(logging.WARNING, "rlpipe"):
            metrics = counts.update([], 3)
            metrics = counts.update([], 3)
        assert metrics["collect/lost_workers"] == 1 and metrics["collect/workers"] == 0
        assert [r.getMessage() for r in caplog.records if "lost" in r.getMessage()] == [
            "lost 1 collector(s) (w-0): no beat for a while, their node or process died; "
            "training goes on with 0"]
    finally:
        close()
