"""A-MEM baseline (``method=amem``): the authors' LoCoMo pipeline behind memcore's MemorySystem."""

from baselines.amem.system import SPEC, AMem, AMemConfig, AMemNote

__all__ = ["SPEC", "AMem", "AMemConfig", "AMemNote"]
