"""MemGPT baseline (``method=memgpt``): a paged main context (core memory, FIFO, recursive
summary) with recall and archival storage the agent edits and searches through function calls
(Packer et al. 2023, cpacker/MemGPT), behind memcore's MemorySystem."""

from baselines.memgpt.agent import SPEC, MemGPT
from baselines.memgpt.config import MemGPTConfig
from baselines.memgpt.functions import Action, parse_action

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"memgpt": "baselines.memgpt:SPEC"}

__all__ = ["SPEC", "Action", "MemGPT", "MemGPTConfig", "parse_action"]
