"""Learning checks: a zoo entry must reach a return, not merely run."""
import pytest

from rlpipe.training import train
from rlpipe.tools.evaluate import evaluate_run


@pytest.mark.slow
def test_cartpole_dqn_reaches_195_within_30k_steps_and_eval_reproduces_it(tmp_path):
    result = train("cartpole-dqn", seed=0, max_env_step=30_000, run_dir=str(tmp_path),
                   progress=False)
    assert result["env_step"] <= 30_000 + 256
    assert result["best_eval_value"] >= 195, result
    measured = evaluate_run(str(tmp_path), episodes=10, seed=2024)
    assert measured["checkpoint"].endswith("best.pt")
    assert measured["mean_return"] >= 0.8 * result["best_eval_value"], (measured, result)
