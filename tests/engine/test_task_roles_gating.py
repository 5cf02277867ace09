"""Role-gated middleware: `@contract(role=...)` and `Task.use()` voiding what a process does not serve."""
import pickle

import pytest

from rlpipe.engine import Contract, Role, Task, contract, contract_of, task


def _recorder(calls, name, role):
    @contract(reads=(), writes=("obs",) if role == "collector" else (), role=role)
    def mw(ctx):
        calls.append(name)

    return mw


def test_contract_records_the_role_and_parses_strings():
    @contract(reads=("obs",), role="collector")
    def act(ctx):
        pass

    assert contract_of(act).role is Role.COLLECTOR
    assert Contract().role is None
    with pytest.raises(ValueError, match="LEARNER"):
        contract(role="trainer")


def test_single_process_runs_every_role():
    calls = []
    t = Task()
    with t.start():
        for role in ("collector", "learner", "evaluator", None):
            t.use(_recorder(calls, str(role), role))
        t.run(max_step=1)
    assert calls == ["collector", "learner", "evaluator", "None"]


def test_a_process_runs_only_its_roles_and_unroled_middleware():
    calls = []
    t = Task().add_role(Role.COLLECTOR)
    with t.start():
        for role in ("collector", "learner", "evaluator", None):
            t.use(_recorder(calls, str(role), role))
        t.run(max_step=2)
    assert calls == ["collector", "None"] * 2
    names = [row.name for row in t.profile().middleware]
    assert names[1].endswith("(void: learner role)") and names[2].endswith("(void: evaluator role)")


def test_voided_middleware_is_not_attached_but_is_closed_at_stop():
    events = []

    @contract(role=Role.LEARNER)
    class Saver:
        def attach(self, t):
            events.append("attach")

        def __call__(self, ctx):
            events.append("call")

        def close(self):
            events.append("close")

    t = Task().add_role("collector")
    with t.start():
        t.use(Saver())
        t.use(lambda ctx: None)
        t.run(max_step=1)
    assert events == ["close"]


def test_voided_reads_do_not_fail_validation():
    # a learner-only middleware reading a field nothing in a collector process writes
    @contract(reads=("train_data",), role="learner")
    def learn(ctx):
        raise AssertionError("must not run in a collector")

    t = Task().add_role("collector")
    with t.start():
        t.use(learn)
        t.run(max_step=1)


def test_serial_and_parallel_leave_out_children_of_other_roles():
    calls = []
    t = Task().add_role("learner")
    with t.start():
        t.use(t.serial(_recorder(calls, "c", "collector"), _recorder(calls, "l", "learner")))
        t.use(t.parallel(_recorder(calls, "c2", "collector"), _recorder(calls, "l2", "learner")))
        t.run(max_step=1)
    assert calls == ["l", "l2"]
    assert contract_of(t.serial(_recorder([], "a", "learner"), _recorder([], "b", "learner"))).role \
        is Role.LEARNER
    assert contract_of(t.serial(_recorder([], "a", None), _recorder([], "b", "learner"))).role is None


def test_wrappers_keep_the_role():
    calls = []
    t = Task().add_role("learner")
    with t.start():
        t.use_wrapper(lambda fn: (lambda ctx: fn(ctx)))
        t.use(_recorder(calls, "c", "collector"))
        t.use(_recorder(calls, "l", "learner"))
        t.run(max_step=1)
    assert calls == ["l"]
    assert contract_of(t.wrap(_recorder([], "x", "collector"))).role is Role.COLLECTOR


def test_the_global_task_pickles_as_a_reference_and_others_refuse():
    assert pickle.loads(pickle.dumps(task)) is task
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(Task())
