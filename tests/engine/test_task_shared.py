"""`Task.shared`: objects the middleware of one run share, made once, dropped at stop()."""
from rlpipe.engine import Task


def test_shared_makes_one_object_per_key_and_run():
    t = Task()
    made = []

    def make():
        made.append(object())
        return made[-1]

    with t.start():
        first = t.shared("k", make)
        assert t.shared("k", make) is first and len(made) == 1
        assert t.shared("other", make) is not first
    with t.start():  # a new run starts without the previous run's objects
        assert t.shared("k", make) is not first
    assert Task().shared("k", make) is not t.shared("k", make)  # nothing shared across tasks
