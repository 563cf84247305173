"""MemCoRe: gated note construction, keyword graph + Leiden topics, tri-pathway retrieval, RRF, IER.

Modules, one responsibility each: ``config`` (validated knobs), ``ablations`` (the switches), ``notes`` (notes,
edges, the embedding matrix and its index), ``ingestion`` (turn → context + keywords), ``construction``
(the Merge/Link/Append gate), ``keywords`` (keyword index and co-occurrence graph), ``topics`` (Leiden
communities with size bounds), ``retrieval`` (query plan, channels, RRF via ``memcore.fusion``, neighbours),
``ier`` (iterative evidence refinement), ``persistence`` (snapshot files) and ``system`` (the
``MemCoRe`` memory and its ``MethodSpec``).
"""

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {
    "memcore": "memcore.memory.system:SPEC",
    "memcore-cheap": "memcore.memory.system:SPEC_CHEAP",
    "memcore-batched": "memcore.memory.batched:SPEC_BATCHED",
}
