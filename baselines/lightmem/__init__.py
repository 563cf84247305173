"""LightMem baseline (``method=lightmem``): compressed sensory memory, topic segments, batched
long-term fact extraction and sleep-time consolidation (zjunlp/LightMem), behind MemorySystem."""

from baselines.lightmem.config import LightMemConfig
from baselines.lightmem.system import SPEC, LightMem, LightMemEntry

__all__ = ["SPEC", "LightMem", "LightMemConfig", "LightMemEntry"]
