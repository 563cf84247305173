"""MemGPT baseline (``method=memgpt``): a paged main context (core memory, FIFO, recursive
summary) with recall and archival storage the agent edits and searches through function calls
(Packer et al. 2023, cpacker/MemGPT), behind memcore's MemorySystem."""

from baselines.memgpt.agent import SPEC, SPEC_FULL_WINDOW, MemGPT
from baselines.memgpt.config import MemGPTConfig
from baselines.memgpt.functions import Action, parse_action

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"memgpt": "baselines.memgpt:SPEC", "memgpt-full-window": "baselines.memgpt:SPEC_FULL_WINDOW"}

__all__ = ["SPEC", "SPEC_FULL_WINDOW", "Action", "MemGPT", "MemGPTConfig", "parse_action"]
