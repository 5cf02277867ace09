import rlpipe.data as data


def test_all_lists_the_public_names():
    assert sorted(data.__all__) == sorted([
        "FrameReplayBuffer", "NStepAccumulator", "PerEnvOutput", "PrioritizedFrameReplayBuffer",
        "PrioritizedReplayBuffer", "ReplayBuffer", "RolloutStorage",
        "SampleRatioController", "SequenceAdder", "SequenceReplayBuffer", "StepSequenceBuffer", "SumTree", "TRANSITION_KEYS", "UNLIMITED", "UpdateSchedule", "bootstrap_discount",
        "batch_of", "compute_gae", "nstep_targets", "td_targets", "to_torch",
        "OfflineDataError", "OfflineDataset", "dataset_spec", "dataset_root", "dataset_summary",
        "load_dataset",
        "local_datasets", "write_dataset",
    ])
    for name in data.__all__:
        assert hasattr(data, name), name


def test_data_imports_only_contexts_numpy_torch_treetensor():
    """...and gymnasium (the spaces an offline data set is made in), minari (its on-disk
    format, imported lazily by _minari_io.py only) and rlpipe.random_streams (a buffer's
    sampling stream of its seed; that module imports numpy and torch only)."""
    import ast
    import pathlib

    allowed = {"numpy", "torch", "treetensor", "treevalue", "rlpipe.contexts", "gymnasium", "minari",
               "rlpipe.random_streams"}
    stdlib_ok = {"__future__", "typing", "threading", "sys", "fractions", "json", "os", "tempfile",
                 "dataclasses", "pathlib", "re", "shutil", "warnings", "collections", "contextlib",
                 "zipfile"}
    for path in pathlib.Path(data.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top != "minari" or path.name == "_minari_io.py", (path.name, name)
                assert top in allowed | stdlib_ok or name.startswith("rlpipe.contexts") \
                    or name == "rlpipe.random_streams", (path.name, name)
