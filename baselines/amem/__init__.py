"""A-MEM baseline (``method=amem``): the authors' LoCoMo pipeline behind memcore's MemorySystem."""

from baselines.amem.system import SPEC, AMem, AMemConfig, AMemNote

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"amem": "baselines.amem:SPEC"}

__all__ = ["SPEC", "AMem", "AMemConfig", "AMemNote"]
