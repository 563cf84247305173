"""Mem0 baseline (``method=mem0``): the real mem0ai package, driven as Mem0's LoCoMo evaluation drove it.

mem0ai is an optional extra (``pip install -e '.[mem0]'``); it is imported only when a memory is built.
"""

from baselines.mem0.system import SPEC, Mem0Config, Mem0Memory

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"mem0": "baselines.mem0:SPEC", "mem0-two-phase": "baselines.mem0.two_phase:SPEC"}

__all__ = ["SPEC", "Mem0Config", "Mem0Memory"]
