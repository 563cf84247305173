"""MemGPT baseline (``method=memgpt``): a paged main context (core memory, FIFO, recursive
summary) with recall and archival storage the agent edits and searches through function calls
(Packer et al. 2023, cpacker/MemGPT), behind memcore's MemorySystem."""

from baselines.memgpt.agent import SPEC, Action, MemGPT, parse_action
from baselines.memgpt.config import MemGPTConfig

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"memgpt": "baselines.memgpt:SPEC"}

__all__ = ["SPEC", "Action", "MemGPT", "MemGPTConfig", "parse_action"]
