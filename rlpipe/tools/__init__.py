"""The after-training tools: public functions over run folders, each the scripting form of an
`rlpipe` command (the command line only parses, calls one of these, and prints).

- `evaluate_run(RUN)` (`rlpipe eval`): the mean and std return of a run's best checkpoint (else
  final, else its newest that verifies) over evaluation episodes; `load_run` gives the entry,
  config and checkpoint it chose, `run_env` the env manager the run's config makes.
- `watch_run(RUN, video=DIR | render="human")` (`rlpipe eval --video/--render`): the same
  episodes, recorded to mp4 files or shown in a window.
- `plot_runs(RUNS)` (`rlpipe plot`): learning curves against env steps, runs of one entry drawn
  as a mean with a 95% t-interval; `curves` and `draw_curves` are its two halves.
- `write_report(RUNS)` (`rlpipe report`): IQM, mean, median and optimality gap of final
  evaluation returns with bootstrap intervals (rliable), as report.md and report.png;
  `estimate` gives the numbers alone.
- `entry_graph(NAME)` / `pipeline_graph(cfg, policy_cls)` (`rlpipe graph`): a pipeline's
  dataflow read from its middleware contracts, nothing stepped; `format_graph` prints it,
  `draw_graph` draws it, `save_figure` writes any of these figures atomically.
- `export_run(RUN, fmt)` (`rlpipe export`): the greedy policy as an ONNX or TorchScript file
  that runs without rlpipe, kept only when its actions match the policy's (`ExportError`
  otherwise).
- `tune_study(NAME, trials=N, budget=STEPS)` (`rlpipe tune`): an Optuna study whose trials are
  run folders; it writes best.yaml and returns the best trial as a `TuneResult` (a `jobs > 1`
  worker that fails raises `TuneWorkerError`); `space_for(algo)` is what a study of `algo`
  samples.
- `collect_dataset(ID, run_dir=... | random)` and `export_replay(RUN, ID)` (`rlpipe dataset
  collect`): Minari data sets rolled by a run's (or a random) policy, or from a saved replay.
- `load_train_config(FILE)` / `write_train_config` (`rlpipe train --config FILE`): the YAML file
  that names what to train and the config values that differ.

The names are imported on first use (PEP 562): most tools need torch, and `import rlpipe.tools`
must not import it for the ones that do not.
"""
import importlib
from typing import Any

_WHERE = {"evaluate_run": "evaluate", "load_run": "evaluate", "run_env": "evaluate",
          "watch_run": "video",
          "plot_runs": "plot", "curves": "plot", "draw_curves": "plot",
          "write_report": "report", "estimate": "report",
          "entry_graph": "graph", "pipeline_graph": "graph", "format_graph": "graph",
          "draw_graph": "graph_draw", "save_figure": "figures",
          "export_run": "export", "ExportError": "_export_face",
          "tune_study": "tune", "TuneResult": "tune", "TuneWorkerError": "tune",
          "space_for": "tune_space",
          "collect_dataset": "dataset", "export_replay": "dataset",
          "load_train_config": "config_file", "write_train_config": "config_file"}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'rlpipe.tools' has no attribute {name!r}; its names are "
                             f"{', '.join(__all__)}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(list(globals()) + __all__)
