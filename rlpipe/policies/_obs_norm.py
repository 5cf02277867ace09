"""`ObsNormalizer`: a fixed (s − mean) / (std + eps) on vector observations, set once from a
data set's statistics (TD3+BC normalises states so, Fujimoto & Gu 2021, eq. 6) and saved with
the policy. Until it is set it passes observations through unchanged."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import gymnasium as gym
import numpy as np
import torch


class ObsNormalizer:
    """Normalises a batch of vector observations (numpy array or torch tensor, [B, D])."""

    def __init__(self, obs_space: gym.Space, owner: str) -> None:
        self.obs_space = obs_space
        self.owner = owner
        self.mean: Optional[np.ndarray] = None
        self.std: Optional[np.ndarray] = None  # eps already added
        self._torch: Dict[torch.device, tuple] = {}

    @property
    def active(self) -> bool:
        return self.mean is not None

    def set(self, mean: Any, std: Any, eps: float = 1e-3) -> None:
        """Use (s − mean) / (std + eps) from now on; `mean`, `std`: one value per dimension."""
        space = self.obs_space
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
            raise ValueError(f"{self.owner}.set_obs_normalizer: observations of {space!r} are not "
                             "a vector (1-D Box); only vector observations can be normalised — "
                             "flatten them (gymnasium.wrappers.FlattenObservation) or skip it.")
        mean = np.asarray(mean, np.float64).reshape(-1)
        std = np.asarray(std, np.float64).reshape(-1)
        dim = space.shape[0]
        if mean.shape != (dim,) or std.shape != (dim,):
            raise ValueError(f"{self.owner}.set_obs_normalizer: mean and std need {dim} values "
                             f"(the observation size), got {mean.shape[0]} and {std.shape[0]}.")
        if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std >= 0).all()):
            raise ValueError(f"{self.owner}.set_obs_normalizer: mean and std must be finite and "
                             f"std >= 0, got mean={mean.tolist()} std={std.tolist()}.")
        if eps <= 0 and (std == 0).any():
            raise ValueError(f"{self.owner}.set_obs_normalizer: a std of 0 needs eps > 0.")
        self.mean = mean.astype(np.float32)
        self.std = (std + eps).astype(np.float32)
        self._torch.clear()

    def __call__(self, obs: Any) -> Any:
        if self.mean is None:
            return obs
        if isinstance(obs, torch.Tensor):
            if obs.device not in self._torch:
                self._torch[obs.device] = (torch.as_tensor(self.mean, device=obs.device),
                                           torch.as_tensor(self.std, device=obs.device))
            mean, std = self._torch[obs.device]
            return (obs.float() - mean) / std
        return (np.asarray(obs, np.float32) - self.mean) / self.std

    def state_dict(self) -> Dict[str, Any]:
        if self.mean is None:
            return {"mean": None, "std": None}
        return {"mean": torch.as_tensor(self.mean).clone(),
                "std": torch.as_tensor(self.std).clone()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("mean") is None:
            self.mean = self.std = None
        else:
            self.mean = np.asarray(state["mean"], np.float32)
            self.std = np.asarray(state["std"], np.float32)
        self._torch.clear()
