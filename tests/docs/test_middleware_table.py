import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("middleware_table", ROOT / "scripts" / "middleware_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_middleware_table_in_docs_is_current():
    script = _script()
    assert script.current_in_doc() == script.table(), (
        "docs/middleware.md is out of date: run `python scripts/middleware_table.py --write`")


def test_every_exported_middleware_is_in_the_table():
    import rlpipe.middleware as mw

    listed = _script().table()
    helpers = {"concat_steps", "epsilon_schedule", "evaluate_episodes", "load_checkpoint",
               # the acting path, for the env loops outside training (eval, data sets, export)
               "make_acting", "EpisodeQuota",
               "NonFiniteLossError", "NonFiniteStateError", "restore_checkpoint", "read_metrics",
               "WandbSink", "log_run_videos",  # the logger's W&B sink and its video upload
               "PerEnvStep", "kwargs_at",  # a per-env-step collect kwarg and its evaluation
               # DI-engine's exchangers: no-ops in one process, parts of an Exchange in a
               # launched one (docs/dingengine.md says so)
               "ContextExchanger", "ModelExchanger", "context_exchanger", "model_exchanger",
               # offline_logger with a W&B sink, and online_logger's rows to W&B only: the
               # contract of online_logger
               "wandb_offline_logger", "wandb_online_logger",
               # DI-engine's name for StepCollector over EnvPool (it builds a StepCollector)
               "StepCollectorAsync"}
    for name in mw.__all__:
        if name not in helpers:
            assert f"`{name}(" in listed, f"{name} is exported but missing from the table"
