"""LightMem baseline (``method=lightmem``): compressed sensory memory, topic segments, batched
long-term fact extraction and sleep-time consolidation (zjunlp/LightMem), behind MemorySystem."""

from baselines.lightmem.config import LightMemConfig
from baselines.lightmem.system import SPEC, LightMem, LightMemEntry

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"lightmem": "baselines.lightmem:SPEC"}

__all__ = ["SPEC", "LightMem", "LightMemConfig", "LightMemEntry"]
