"""Tensor listings -> bytes and parameters per read class (docs/PHYSICS.md section 1), for every format.

GGUF and Hugging Face checkpoints name their tensors differently, so each reader classifies its
own names; what follows is shared: the per-class sums, folding routed experts into the dense
weights when the routing (experts per token) is unknown, and the check that the file's parameter
count agrees with what the architecture fields imply.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tokometer.domain.specs import ParamGroups

READ_CLASSES = ("embedding", "lm_head", "dense", "routed_experts")
RESIDENT = "resident"  # held in memory, not read per text token (vision tower, MTP layers)
AGREEMENT = 0.02  # a file more than 2 % away from its config is worth a warning


def _zeros() -> dict[str, float]:
    return dict.fromkeys((*READ_CLASSES, RESIDENT), 0.0)


@dataclass
class Tally:
    """Bytes and elements of the tensors seen so far, by read class."""

    n_bytes: dict[str, float] = field(default_factory=_zeros)
    n_elements: dict[str, float] = field(default_factory=_zeros)

    def add(self, kind: str, n_bytes: int, n_elements: int) -> None:
        self.n_bytes[kind] += n_bytes
        self.n_elements[kind] += n_elements

    def fold_unrouted(self, n_experts: int) -> str | None:
        """Without experts-per-token, a step is assumed to read every expert; returns the warning."""
        if not self.n_bytes["routed_experts"] or n_experts:
            return None
        for d in (self.n_bytes, self.n_elements):
            d["dense"] += d["routed_experts"]
            d["routed_experts"] = 0.0
        return "expert tensors found but no experts-per-token setting: every expert is counted as read"

    @staticmethod
    def _groups(d: dict[str, float]) -> ParamGroups:
        return ParamGroups(d["embedding"], d["lm_head"], d["dense"], d["routed_experts"], d[RESIDENT])

    @property
    def bytes_groups(self) -> ParamGroups:
        return self._groups(self.n_bytes)

    @property
    def param_groups(self) -> ParamGroups:
        return self._groups(self.n_elements)

    @property
    def tied(self) -> bool:
        """No LM head tensor beside an embedding: the head reads the embedding table."""
        return self.n_bytes["lm_head"] == 0 and self.n_bytes["embedding"] > 0


def disagreement(file_params: float, implied_params: float, holder: str) -> str | None:
    """A warning when the file's parameter count is more than 2 % from the config's."""
    if implied_params and abs(file_params - implied_params) > AGREEMENT * implied_params:
        return (
            f"the {holder} holds {file_params / 1e9:.4g} B parameters, its configuration implies "
            f"{implied_params / 1e9:.4g} B; the {holder}'s counts are used"
        )
    return None
