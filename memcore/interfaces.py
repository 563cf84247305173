"""The small protocols every component is written against: backbone, embedder, memory system, method spec."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from memcore.schema import build_keys
from memcore.types import Conversation, Evidence, QAItem, Turn


@dataclass
class Completion:
    """One chat completion: the text plus accounting."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    model: str = ""


Message = dict[str, str]


@runtime_checkable
class ChatBackbone(Protocol):
    """An OpenAI-compatible chat model. Thread-safe; ``stage`` labels the call for cost accounting.
    ``top_p`` None leaves nucleus sampling at the server's default (and out of the cache key)."""

    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json: bool = False,
        seed: int | None = None,
        prompt_version: str = "",
        top_p: float | None = None,
    ) -> Completion: ...


@runtime_checkable
class Embedder(Protocol):
    """Text → L2-normalised float32 vectors of shape (len(texts), dim)."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class MemorySystem(Protocol):
    """What memcore and every baseline implement.

    ``ingest`` is called once per turn in conversation order; ``finalize`` once after the last
    turn (topic recompute, consolidation). ``retrieve`` must be safe to call from several threads
    at once after ``finalize``. ``budget`` overrides the method's default number of notes.
    """

    def ingest(self, turn: Turn) -> None: ...

    def finalize(self) -> None: ...

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence: ...

    def save(self, path: Path) -> None: ...

    def load(self, path: Path) -> None: ...

    def stats(self) -> dict[str, Any]: ...


@runtime_checkable
class BufferedIngest(Protocol):
    """Optional for a ``MemorySystem`` that buffers turns in ``ingest``: it calls ``callback`` once per turn
    as the turn enters the memory, so build progress and a stop request (the callback may raise) follow the
    real work rather than the buffering. ``None`` removes the callback."""

    def set_turn_callback(self, callback: Callable[[], None] | None) -> None: ...


@runtime_checkable
class StagedIngest(Protocol):
    """Optional for a ``BufferedIngest`` system whose turns go through a separate ingestion stage (MemCoRe: one
    LLM call per turn, buffered, then the gate): it calls ``callback(n)`` once ``n`` more turns finished
    ingestion, so progress moves (and a stop request is seen) before the first turn reaches the gate."""

    def set_ingest_callback(self, callback: Callable[[int], None] | None) -> None: ...


class LazyResource:
    """Build an expensive object (LLM server, embedding model) on first use only, thread-safely."""

    def __init__(self, build: Callable[[], Any]) -> None:
        import threading

        self._build = build
        self._lock = threading.Lock()
        self._value: Any = None
        self._built = False

    @property
    def built(self) -> bool:
        return self._built

    def get(self) -> Any:
        if not self._built:
            with self._lock:
                if not self._built:
                    self._value = self._build()
                    self._built = True
        return self._value


@dataclass
class MethodContext:
    """Everything a method factory may use. Backbone and embedder are lazy: a method that never
    touches them starts no server and loads no model."""

    config: dict[str, Any]
    ablation: dict[str, Any]
    conversation: Conversation
    seed: int
    workdir: Path
    _backbone: LazyResource
    _embedder: LazyResource
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def backbone(self) -> ChatBackbone:
        return self._backbone.get()

    @property
    def embedder(self) -> Embedder:
        return self._embedder.get()


MethodConfigCheck = Callable[[str, dict[str, Any], dict[str, Any]], None]

#: One bad-config case of a method: (overrides after ``method=<name>``, fragments its one-line error contains).
BadConfig = tuple[tuple[str, ...], tuple[str, ...]]


def _never(config: dict[str, Any]) -> bool:
    return False


class RunSummary(Protocol):
    """A method's own summary of a finished run (``MethodSpec.run_summary``): ``summarize`` returns the
    ``metrics.json`` entries it adds (``{}``: none) from the run's item records, over the items of ``categories``
    (the headline ones), ``capped`` when the run had a context-token cap; ``table_lines`` the lines its table
    prints from those entries."""

    def summarize(
        self, items: Sequence[Mapping[str, Any]], categories: Sequence[int], capped: bool
    ) -> dict[str, Any]: ...

    def table_lines(self, metrics: Mapping[str, Any]) -> list[str]: ...


@dataclass(frozen=True)
class MethodSpec:
    """A registered memory method: everything the harness needs to know about it, so no other module names it.

    Running it:
    ``config_schema``: the dataclass(es) its ``method`` section is made of; fields marked ``build``
    (:func:`memcore.schema.knob`) change the built memory and form ``construction_keys`` (the snapshot key, so
    retrieval-only changes reuse a snapshot), unless ``construction_keys`` is given explicitly. ``validate_config``
    (``(name, method section, ablation section) -> None``, raising ConfigError) is what ``memcore-run`` checks
    before any work (:func:`memcore.schema.method_validator`). ``ablation_schema``: the dataclass of its ablation
    switches, against which the run config's ``ablation`` node is validated (``None``: the node may hold only
    ``name``); fields marked ``build`` form ``construction_switches``. ``ablations`` lists the ablation names it
    accepts, in the order tables list them.
    ``ingest_uses_llm(config, ablation)`` tells the runner whether building memory needs the chat backbone (the
    snapshot key then includes the backbone). ``build_cpu_bound``: when set and ``ingest_uses_llm`` is false, the
    runner builds each conversation's memory in a worker process (threads would share one core under the GIL);
    cheap builds stay in threads, where starting a process would cost more than the build. ``budget_counts``
    says what ``eval.note_cap=B`` caps (B notes in all for every method; a method whose notes are something else,
    such as full_context's turns, says so), printed beside its numbers.
    ``added_key_defaults``: method knobs added after runs were recorded, with the value that reproduces those
    runs; at that value a knob is left out of the run's result fields, so a run recorded before it still resumes.

    Reporting it:
    ``paper_row``: its method label in the paper's main table (``""``: not one of the paper's methods).
    ``report_rank``: where tables list it (lower first; ``None``: after the ranked methods, by name).
    ``reimplemented``: for a paper method this harness reimplements rather than runs from the authors' code,
    where the reimplementation is described (tables say so). ``setting_note(method section)``: the part of its
    setting a table row must name (``""``: none). ``packing_label(method section)``: how a run of
    it filled a context-token budget, appended to its row in the equal-token table (``", packed + windows"``;
    None: nothing to say). ``sweep_knob``: the method knob a k sweep varies
    (``--layout k_sweep``; ``""``: none). ``table_notes``: footnotes tables print under a table that has a
    row of it. ``conversation_in_context(method section)``: its prompts carry the whole conversation so far
    (they grow with it: the cost estimate scales them to longer conversations); called with a recorded run's
    section, which may lack knobs added since. ``whole_context_tokens(method section, budget, conversations)``:
    the mean context it hands the answerer over whole conversations (``conversations`` None: the full
    dataset), when that differs from a measured slice's (a method that answers from the whole conversation).
    ``run_summary``: ``"module:ATTRIBUTE"`` of its :class:`RunSummary`, what it reports of a whole run beyond the
    harness's metrics (MemCoRe: what IER changed; ``""``: nothing).

    Testing it:
    ``sim_replies``: ``"module:ATTRIBUTE"`` of its :class:`memcore.testing.sim_text.SimReplies`, the simulator's
    schema-valid replies to its prompts (``""``: it sends none). ``sim_run_kinds``: the prompt kinds a short run
    of it on the simulator must send (checked by the simulator test). ``bad_configs``: bad values of its knobs
    and fragments of the one-line error each gets (checked by the config-error test).
    """

    name: str
    factory: Callable[[MethodContext], MemorySystem]
    ingest_uses_llm: Callable[[dict[str, Any], dict[str, Any]], bool]
    config_schema: tuple[type, ...] = ()
    validate_config: MethodConfigCheck | None = None
    construction_keys: tuple[str, ...] | None = None  # None: the ``build`` fields of ``config_schema``
    ablation_schema: type | None = None
    construction_switches: tuple[str, ...] | None = None  # None: the ``build`` fields of ``ablation_schema``
    ablations: tuple[str, ...] = ("none",)
    retrieve_uses_llm: Callable[[dict[str, Any], dict[str, Any]], bool] = lambda c, a: False
    sequential_qa: bool = False
    description: str = ""
    build_cpu_bound: bool = False  # building costs seconds of CPU per conversation (not LLM waits): see above
    staged_ingest: bool = False  # its systems are ``StagedIngest``: progress shows an ingest bar before the build bar
    budget_counts: str = "notes"  # what one unit of ``eval.note_cap`` is in its evidence (tables disclose it)
    # "module:ATTRIBUTE" of its upstream answer prompt (memcore.eval.upstream.UpstreamAnswer); "": none, so
    # eval.answer_prompt=upstream keeps the harness's prompt for it
    upstream_answer: str = ""
    added_key_defaults: Mapping[str, Any] = field(default_factory=dict)
    paper_row: str = ""
    report_rank: int | None = None
    reimplemented: str = ""
    setting_note: Callable[[dict[str, Any]], str] | None = None
    packing_label: Callable[[dict[str, Any]], str] | None = None
    sweep_knob: str = ""
    table_notes: tuple[str, ...] = ()
    conversation_in_context: Callable[[dict[str, Any]], bool] = _never
    whole_context_tokens: Callable[[dict[str, Any], int | None, Sequence[Conversation] | None], float] | None = None
    run_summary: str = ""
    sim_replies: str = ""
    sim_run_kinds: tuple[str, ...] = ()
    bad_configs: tuple[BadConfig, ...] = ()

    def __post_init__(self) -> None:
        if self.construction_keys is None:
            keys = tuple(k for schema in self.config_schema for k in build_keys(schema))
            object.__setattr__(self, "construction_keys", keys)
        if self.construction_switches is None:
            switches = build_keys(self.ablation_schema) if self.ablation_schema is not None else ()
            object.__setattr__(self, "construction_switches", switches)

    def config_keys(self) -> list[str]:
        """Every key its ``method`` section accepts (``name`` included), sorted."""
        return sorted({"name", *(f.name for schema in self.config_schema for f in dataclasses.fields(schema))})


@runtime_checkable
class SelfAnsweringMemory(Protocol):
    """A memory that drives its own answer loop (e.g. FluxMem's feedback refinement).

    The runner calls ``answer`` instead of ``retrieve`` + answerer; ``answer_fn(context)`` is the
    protocol's answerer bound to the item, so prompts and scoring stay on equal terms with every
    other method. Returns the final answer text and the evidence it used.
    """

    def answer(self, item: QAItem, answer_fn: Callable[[str], str]) -> tuple[str, Evidence]: ...

    def after_qa(self) -> None:
        """Called once after the conversation's last QA item (e.g. consolidation)."""


@runtime_checkable
class PrefetchesQueries(Protocol):
    """A memory that can embed, in one batch, the query texts its ``retrieve`` will embed for these questions.

    The runner calls it once per conversation, after ``finalize``/``load`` and before the first item; the
    vectors land in the run's cached embedder, which then serves each question's lookups. It must not change
    what ``retrieve`` returns (a text embedded in a batch or alone gets the same vector, within float tolerance),
    and texts that exist only after an LLM step are not prefetched. Repeated texts are fine: the cached embedder
    encodes each distinct text once."""

    def prefetch_queries(self, questions: Sequence[str]) -> None: ...
