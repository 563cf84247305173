"""Method registry: name → MethodSpec, imported lazily so optional extras (mem0ai, …) load only when used."""

from __future__ import annotations

import importlib

from memcore.interfaces import MethodSpec
from memcore.registry import UnknownNameError, unknown_name_message

METHOD_TABLE: dict[str, str] = {
    "full_context": "baselines.full_context:SPEC",
    "rag_dense": "baselines.rag:RAG_DENSE",
    "rag_bm25": "baselines.rag:RAG_BM25",
    "rag_hybrid": "baselines.rag:RAG_HYBRID",
    "rag_locomo": "baselines.rag:RAG_LOCOMO",
    "memcore": "memcore.memory.system:SPEC",
    "memcore-cheap": "memcore.memory.system:SPEC_CHEAP",
    "memcore-batched": "memcore.memory.batched:SPEC_BATCHED",
    "amem": "baselines.amem:SPEC",
    "mem0": "baselines.mem0:SPEC",
    "mem0-two-phase": "baselines.mem0.two_phase:SPEC",
    "memgpt": "baselines.memgpt:SPEC",
    "lightmem": "baselines.lightmem:SPEC",
    "fluxmem": "baselines.fluxmem:SPEC",
    "fluxmem-no-refine": "baselines.fluxmem:SPEC_NO_REFINE",
    "fluxmem-no-consolidate": "baselines.fluxmem:SPEC_NO_CONSOLIDATE",
}


def method_names() -> list[str]:
    return sorted(METHOD_TABLE)


def get_method(name: str) -> MethodSpec:
    """The spec registered under ``name``; unknown names get a did-you-mean error."""
    if name not in METHOD_TABLE:
        raise UnknownNameError(unknown_name_message("method", name, method_names()))
    module_name, attr = METHOD_TABLE[name].split(":")
    module = importlib.import_module(module_name)
    spec = getattr(module, attr)
    if not isinstance(spec, MethodSpec):
        raise TypeError(f"{METHOD_TABLE[name]} is not a MethodSpec")
    return spec
