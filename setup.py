from setuptools import find_packages, setup

setup(
    name="rlpipe",
    version="0.1.0",
    description="Reinforcement learning as a pipeline of small middleware over a typed context.",
    packages=find_packages(include=["rlpipe", "rlpipe.*"]),
    package_data={"rlpipe": ["py.typed"]},
    python_requires=">=3.10",
    install_requires=[
        "torch>=2.1",
        "gymnasium>=1.0",
        "numpy>=1.24",
        "easydict>=1.10",
        "DI-treetensor>=0.4",
        "tensorboard>=2.14",
        "tqdm>=4.60",
        "PyYAML>=6",  # rlpipe train --config FILE, rlpipe tune --space FILE
    ],
    extras_require={
        "ray": ["ray>=2.9"],
        "box2d": ["gymnasium[box2d]>=1.0"],
        "atari": ["gymnasium[atari]>=1.0"],
        "mujoco": ["gymnasium[mujoco]>=1.0"],
        # EnvManager(mode="envpool"): Atari in C++ threads (~300 MB of wheels, ~740 MB installed)
        "envpool": ["envpool"],
        "minigrid": ["minigrid>=2.3"],
        # multi-agent envs (rlpipe.envs.MultiAgentEnvManager): PettingZoo's API and MPE
        "marl": ["pettingzoo>=1.24", "mpe2"],
        # offline data sets (rlpipe.data.load_dataset, `rlpipe dataset`); minari 0.5.4 imports
        # PIL without declaring it
        "offline": ["minari[hdf5]>=0.5.4", "pillow"],
        # real-time envs (rlpipe.envs.make_realtime_env, rtpendulum-sac)
        "realtime": ["rtgym"],
        "plot": ["matplotlib>=3.7"],
        "test": ["pytest>=7.4", "pytest-timeout>=2.1", "pytest-xdist>=3.5"],
        # benchmarks/parity.py: the reference implementations (never a runtime dependency)
        "bench": ["stable-baselines3>=2.3", "sb3-contrib>=2.3"],
        # benchmarks/parity.py's report. rliable 1.2 requires arch<8, and arch 7.x fails at
        # import under pandas 3 (deprecate_kwarg TypeError): pandas<3 is the pin that resolves.
        "report": ["rliable>=1.2", "pandas<3", "matplotlib>=3.7"],
        # rlpipe tune (Optuna: TPE sampling, median pruning, SQLite studies)
        "tune": ["optuna>=3.5"],
        # rlpipe export: ONNX files (torch's dynamo exporter needs onnxscript) checked with
        # onnxruntime
        "export": ["onnx>=1.16", "onnxscript>=0.1", "onnxruntime>=1.17"],
        # rlpipe eval --video (gymnasium's RecordVideo writes through moviepy; pygame-ce renders: minigrid
        # and mpe2 need pygame-ce, and a "pygame" install would overwrite its files)
        "video": ["moviepy>=1.0", "pygame-ce>=2.1"],
        # logger.wandb=True: the same metrics in Weights & Biases (offline mode works without network)
        "wandb": ["wandb>=0.16"],
    },
    entry_points={"console_scripts": ["rlpipe=rlpipe.cli:main"]},
)
