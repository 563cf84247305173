"""A-MEM (agentic memory), reimplemented from the authors' LoCoMo pipeline.

Per turn (``add_note``): the LLM writes keywords, a one-sentence context and tags for the note
"Speaker X says : text"; the note's top-k nearest notes (cosine over the retriever documents) go
into the evolution prompt, whose JSON decides ``should_evolve`` and the actions ``strengthen``
(link the new note to the suggested notes, replace its tags) and ``update_neighbor`` (rewrite the
neighbours' context and tags). Retrieval: the LLM turns the question into keywords, the top-k notes
for them are listed with their linked neighbours (``find_related_memories_raw``), timestamps included.
Deviations from the original code are listed in ``baselines/amem/README.md``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.amem import prompts as P
from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.llm.json_reply import complete_json
from memcore.schema import POS, TEMPERATURE, Rule, build_keys, check_rules, knob, method_validator
from memcore.types import Evidence, EvidenceNote, Turn

SNAPSHOT_FILE = "amem.json"
VECTORS_FILE = "amem_vectors.npy"


NEIGHBOR_COUNTERS = ("shared", "per_note")
IMAGE_TEXT = ("upstream", "harness")


@dataclass(frozen=True)
class AMemConfig:
    """Knobs of A-MEM; defaults are the authors' LoCoMo settings (see README for each source)."""

    # 2: image turns as their loader writes them ("[Image: <caption>] <text>"); 3: the caption only with img_url
    format_version: int = knob(3, build=True, rule=POS)
    # Their ingestion string is "Speaker " + speaker + "says : " + text (no space before "says").
    content_template: str = knob("Speaker {speaker} says : {text}", build=True)
    # upstream: "[Image: <caption>] <text>" (their load_dataset.py) | harness: Turn.text
    image_text: str = knob("upstream", build=True, rule=Rule(choices=IMAGE_TEXT))
    evolution_neighbors: int = knob(5, build=True)  # process_memory: find_related_memories(note.content, k=5)
    evo_threshold: int = knob(100, build=True, rule=POS)  # rebuild the retriever documents after every N evolutions
    temperature: float = knob(0.7, build=True, rule=TEMPERATURE)  # their OpenAIController.get_completion default
    max_tokens: int = knob(1000, build=True, rule=POS)
    # test_advanced.py --retrieve_k default; configs/method/amem.yaml picks it per backbone
    retrieve_k: int = knob(10, rule=POS)
    retrieve_k_by_backbone: dict[str, int] = field(default_factory=dict)  # record of the per-backbone k (yaml)
    # shared: one neighbour counter over all hits (c3bb1ee, the paper-era code); per_note: reset per hit (5b345e6)
    neighbor_counter: str = knob("shared", rule=Rule(choices=NEIGHBOR_COUNTERS))
    query_keywords: bool = True  # retrieval query = LLM keywords of the question (generate_query_llm)
    query_temperature: float = knob(0.7, rule=TEMPERATURE)

    def __post_init__(self) -> None:
        check_rules(self, "amem")
        if "{speaker}" not in self.content_template or "{text}" not in self.content_template:
            raise ValueError("amem: content_template must contain {speaker} and {text}.")


#: Config keys that change the built memory (marked ``build`` on the fields).
CONSTRUCTION_KEYS = build_keys(AMemConfig)


def config_from_dict(cls: type, raw: dict[str, Any], method: str) -> Any:
    """Build the frozen config dataclass ``cls`` from a Hydra method dict; unknown keys are an error."""
    known = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in raw.items() if k != "name"}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"{method}: unknown config key(s) {', '.join(unknown)}. Known: {', '.join(sorted(known))} "
            f"(see configs/method/{method}.yaml)."
        )
    return cls(**values)


@dataclass
class AMemNote:
    """One memory note. Evolution rewrites ``context``/``tags`` in place; notes are never merged,
    so each note keeps exactly one source turn."""

    note_id: str
    content: str
    timestamp: str
    dia_id: str
    keywords: list[str]
    context: str
    tags: list[str]
    links: list[int] = field(default_factory=list)  # indices into the note list, as in their code


@dataclass(frozen=True)
class Analysis:
    keywords: list[str]
    context: str
    tags: list[str]


@dataclass(frozen=True)
class EvolutionDecision:
    should_evolve: bool
    actions: list[str]
    suggested_connections: list[int]
    tags_to_update: list[str]
    new_context_neighborhood: list[str]
    new_tags_neighborhood: list[list[str]]


NO_EVOLUTION = EvolutionDecision(False, [], [], [], [], [])
DEFAULT_ANALYSIS = Analysis([], "General", [])  # what their analyze_content returns on an error


def _str_list(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        return [s.strip() for s in value.split(",") if s.strip()]
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list")
    return [str(v) for v in value if not isinstance(v, (dict, list))]


def parse_analysis(obj: Any) -> Analysis:
    """Validate the analysis reply (their schema: keywords, context, tags — all required)."""
    if not isinstance(obj, dict) or not {"keywords", "context", "tags"} <= set(obj):
        raise ValueError("analysis needs keywords, context and tags")
    context = obj["context"]
    if isinstance(context, list):  # their MemoryNote joins a list context with spaces
        context = " ".join(str(c) for c in context)
    if not isinstance(context, str):
        raise ValueError("context must be a string")
    return Analysis(_str_list(obj["keywords"], "keywords"), context, _str_list(obj["tags"], "tags"))


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError("should_evolve must be a boolean")


def _int_list(value: Any) -> list[int]:
    if not isinstance(value, list):
        raise ValueError("suggested_connections must be a list")
    out = []
    for v in value:
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, str) and v.strip().lstrip("-").isdigit():
            out.append(int(v.strip()))
        elif isinstance(v, float) and v.is_integer():
            out.append(int(v))
    return out


def parse_evolution(obj: Any) -> EvolutionDecision:
    """Validate the evolution reply against their JSON schema (should_evolve is required; list
    fields a model leaves out count as empty, which is what their strict schema would force)."""
    if not isinstance(obj, dict) or "should_evolve" not in obj:
        raise ValueError("evolution reply needs should_evolve")
    tags_nb = obj.get("new_tags_neighborhood", [])
    if not isinstance(tags_nb, list):
        raise ValueError("new_tags_neighborhood must be a list")
    ctx_nb = obj.get("new_context_neighborhood", [])
    if not isinstance(ctx_nb, list):
        raise ValueError("new_context_neighborhood must be a list")
    actions = obj.get("actions", [])
    if isinstance(actions, str):
        actions = [actions]
    if not isinstance(actions, list):
        raise ValueError("actions must be a list")
    return EvolutionDecision(
        should_evolve=_as_bool(obj["should_evolve"]),
        actions=[str(a).strip().lower() for a in actions],
        suggested_connections=_int_list(obj.get("suggested_connections", [])),
        tags_to_update=_str_list(obj.get("tags_to_update", []), "tags_to_update"),
        new_context_neighborhood=[str(c) for c in ctx_nb],
        new_tags_neighborhood=[_str_list(t, "new_tags_neighborhood[i]") for t in tags_nb],
    )


def parse_query_keywords(obj: Any) -> str:
    if not isinstance(obj, dict) or "keywords" not in obj:
        raise ValueError("reply needs keywords")
    kw = obj["keywords"]
    if isinstance(kw, list):
        kw = ", ".join(str(k) for k in kw)
    if not isinstance(kw, str) or not kw.strip():
        raise ValueError("keywords must be a non-empty string")
    return kw.strip()


def _py_list(items: list[str]) -> str:
    """``str(list)`` exactly as their prompts print keyword and tag lists."""
    return str(list(items))


class AMem:
    """A-MEM over one conversation. ``ingest`` is sequential; ``retrieve`` is thread-safe (read-only
    on the notes; its counters are locked)."""

    def __init__(
        self,
        cfg: AMemConfig,
        backbone: Callable[[], ChatBackbone],
        embedder: Callable[[], Embedder],
        seed: int,
    ) -> None:
        self.cfg = cfg
        self._backbone = backbone
        self._embedder = embedder
        self.seed = seed
        self.notes: list[AMemNote] = []
        self.docs: list[str] = []  # the retriever corpus, one document per note, same order
        self.vectors: np.ndarray | None = None
        self.evo_cnt = 0
        self.counters: dict[str, int] = {
            "analysis_fallbacks": 0,
            "evolution_calls": 0,
            "evolution_fallbacks": 0,
            "evolutions": 0,
            "strengthen_actions": 0,
            "update_neighbor_actions": 0,
            "neighbor_updates": 0,
            "links_added": 0,
            "links_dropped_invalid": 0,
            "consolidations": 0,
            "retrievals": 0,
            "query_fallbacks": 0,
        }
        self._lock = threading.Lock()

    # -- LLM helpers ----------------------------------------------------------------------------
    def _messages(self, prompt: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": P.SYSTEM}, {"role": "user", "content": prompt}]

    def _analyse(self, content: str) -> Analysis:
        res = complete_json(
            self._backbone(),
            self._messages(P.ANALYSIS.format(content=content)),
            stage="ingest",
            validate=parse_analysis,
            fallback=DEFAULT_ANALYSIS,
            fallback_kind="amem_analysis_default_general",
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        if not res.ok:
            self.counters["analysis_fallbacks"] += 1
        return res.value

    # -- retriever ------------------------------------------------------------------------------
    def _search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top-k documents by cosine, best first (their SimpleEmbeddingRetriever.search)."""
        if not self.docs or k <= 0 or self.vectors is None:
            return []
        q = self._embedder().encode([query])[0]
        sims = self.vectors @ q
        order = np.argsort(-sims, kind="stable")[:k]
        return [(int(i), float(sims[i])) for i in order]

    def _add_doc(self, doc: str) -> None:
        vec = self._embedder().encode([doc])
        self.vectors = vec if self.vectors is None else np.vstack([self.vectors, vec])
        self.docs.append(doc)

    def _consolidate(self) -> None:
        """Their consolidate_memories: re-embed every note with its current context and tags."""
        self.docs = [f"{n.content} , {n.context} {' '.join(n.keywords)} {' '.join(n.tags)}" for n in self.notes]
        self.vectors = self._embedder().encode(self.docs)
        self.counters["consolidations"] += 1

    # -- construction ---------------------------------------------------------------------------
    def turn_text(self, turn: Turn) -> str:
        """The turn's text as their ``load_dataset.py`` (line 65) gives it: a turn with ``img_url`` and a caption is
        ``[Image: <caption>] <text>``; a caption without ``img_url`` is left out (the loader's cleaning report counts
        those turns, ``caption_without_img_url``). The harness's ``Turn.text`` appends ``[shares an image: <caption>]``
        to every captioned turn instead (``image_text: harness``)."""
        if self.cfg.image_text == "harness" or not turn.image_caption:
            return turn.text
        tag = f"[shares an image: {turn.image_caption}]"
        text = turn.text[: -len(tag)].rstrip() if turn.text.endswith(tag) else turn.text
        if not turn.has_img_url:
            return text
        caption = f"[Image: {turn.image_caption}]"
        return f"{caption} {text}" if text else caption

    def ingest(self, turn: Turn) -> None:
        content = self.cfg.content_template.format(speaker=turn.speaker, text=self.turn_text(turn))
        analysis = self._analyse(content)
        note = AMemNote(
            note_id=f"amem-{len(self.notes)}",
            content=content,
            timestamp=turn.session_time_raw,
            dia_id=turn.dia_id,
            keywords=list(analysis.keywords),
            context=analysis.context or "General",
            tags=list(analysis.tags),
        )
        evolved = self._evolve(note)
        self.notes.append(note)
        self._add_doc(
            f"content:{note.content} context:{note.context} keywords: {', '.join(note.keywords)} "
            f"tags: {', '.join(note.tags)}"
        )
        if evolved:
            self.evo_cnt += 1
            if self.evo_cnt % self.cfg.evo_threshold == 0:
                self._consolidate()

    def _neighbour_block(self, indices: list[int]) -> str:
        lines = []
        for i in indices:
            n = self.notes[i]
            lines.append(
                f"memory index:{i}\t talk start time:{n.timestamp}\t memory content: {n.content}\t memory context: "
                f"{n.context}\t memory keywords: {_py_list(n.keywords)}\t memory tags: {_py_list(n.tags)}\n"
            )
        return "".join(lines)

    def _evolve(self, note: AMemNote) -> bool:
        """Their process_memory: one LLM call per new note (also when it has no neighbours yet)."""
        indices = [i for i, _ in self._search(note.content, self.cfg.evolution_neighbors)]
        prompt = P.EVOLUTION.format(
            context=note.context,
            content=note.content,
            keywords=_py_list(note.keywords),
            nearest_neighbors_memories=self._neighbour_block(indices),
            neighbor_number=len(indices),
        )
        self.counters["evolution_calls"] += 1
        res = complete_json(
            self._backbone(),
            self._messages(prompt),
            stage="ingest",
            validate=parse_evolution,
            fallback=NO_EVOLUTION,
            fallback_kind="amem_evolution_skipped",
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        if not res.ok:
            self.counters["evolution_fallbacks"] += 1
        d = res.value
        if not d.should_evolve:
            return False
        self.counters["evolutions"] += 1
        for action in d.actions:
            if action == "strengthen":
                self.counters["strengthen_actions"] += 1
                # Their code extends links blindly (an out-of-range index crashes retrieval later);
                # we keep only indices of existing notes and count the rest.
                valid = [c for c in d.suggested_connections if 0 <= c < len(self.notes)]
                self.counters["links_dropped_invalid"] += len(d.suggested_connections) - len(valid)
                self.counters["links_added"] += len(valid)
                note.links.extend(valid)
                note.tags = list(d.tags_to_update)
            elif action == "update_neighbor":
                self.counters["update_neighbor_actions"] += 1
                for i in range(min(len(indices), len(d.new_tags_neighborhood))):
                    neighbour = self.notes[indices[i]]
                    neighbour.tags = list(d.new_tags_neighborhood[i])
                    if i < len(d.new_context_neighborhood):
                        neighbour.context = d.new_context_neighborhood[i]
                    self.counters["neighbor_updates"] += 1
        return True

    def finalize(self) -> None:
        """Nothing to do: A-MEM has no end-of-conversation step."""

    # -- retrieval ------------------------------------------------------------------------------
    def _query(self, question: str) -> tuple[str, bool]:
        if not self.cfg.query_keywords:
            return question, True
        res = complete_json(
            self._backbone(),
            self._messages(P.QUERY_KEYWORDS.format(question=question)),
            stage="retrieve",
            validate=parse_query_keywords,
            fallback=question,
            fallback_kind="amem_query_is_question",
            prompt_version=P.VERSION,
            temperature=self.cfg.query_temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        return res.value, res.ok

    @staticmethod
    def _line(n: AMemNote) -> str:
        return (
            f"talk start time:{n.timestamp}memory content: {n.content}memory context: {n.context}"
            f"memory keywords: {_py_list(n.keywords)}memory tags: {_py_list(n.tags)}"
        )

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Top-k notes for the LLM's query keywords, each followed by its linked notes, capped the
        way their ``find_related_memories_raw`` caps them (a neighbour counter ``j``, shared or per note).

        With ``budget`` (``eval.note_cap``) k = budget and entries of notes beyond the budget-th distinct one are
        skipped, so linked neighbours count against the budget like any other note."""
        k = budget or self.cfg.retrieve_k
        search_query, ok = self._query(query)
        hits = self._search(search_query, k)
        lines: list[str] = []
        picked: dict[int, EvidenceNote] = {}

        def add(idx: int, score: float, channel: str) -> None:
            n = self.notes[idx]
            if budget is not None and idx not in picked and len(picked) >= budget:
                return
            lines.append(self._line(n))
            if idx not in picked:
                picked[idx] = EvidenceNote(
                    note_id=n.note_id,
                    text=self._line(n),
                    dia_ids=(n.dia_id,),
                    score=score,
                    channels=(channel,),
                    timestamp=n.timestamp,
                )
            elif channel not in picked[idx].channels:
                picked[idx].channels = (*picked[idx].channels, channel)

        j = 0
        for idx, sim in hits:
            if self.cfg.neighbor_counter == "per_note":
                j = 0  # upstream's fix (5b345e6): each hit may add up to k of its linked notes
            add(idx, sim, "semantic")
            for neighbour in self.notes[idx].links:
                add(neighbour, 0.0, "link")
                if j >= k:
                    break
                j += 1
        with self._lock:
            self.counters["retrievals"] += 1
            self.counters["query_fallbacks"] += int(not ok)
        context = "".join(line + "\n" for line in lines)
        return Evidence(notes=list(picked.values()), context=context, extra={"amem_query": search_query})

    # -- persistence ----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        state = {
            "format_version": self.cfg.format_version,
            "evo_cnt": self.evo_cnt,
            "counters": self.counters,
            "docs": self.docs,
            "notes": [dataclasses.asdict(n) for n in self.notes],
        }
        (path / SNAPSHOT_FILE).write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        if self.vectors is not None:
            np.save(path / VECTORS_FILE, self.vectors)

    def load(self, path: Path) -> None:
        file = path / SNAPSHOT_FILE
        if not file.is_file():
            raise FileNotFoundError(f"no A-MEM snapshot at {file}; rebuild the memory (delete the snapshot dir).")
        state = json.loads(file.read_text(encoding="utf-8"))
        if state.get("format_version") != self.cfg.format_version:
            raise ValueError(
                f"A-MEM snapshot {path} has format_version {state.get('format_version')}, config wants "
                f"{self.cfg.format_version}; rebuild it."
            )
        self.notes = [AMemNote(**n) for n in state["notes"]]
        self.docs = list(state["docs"])
        self.evo_cnt = int(state["evo_cnt"])
        self.counters.update(state["counters"])
        vec_file = path / VECTORS_FILE
        self.vectors = np.load(vec_file) if vec_file.is_file() else None
        if len(self.docs) != len(self.notes) or (self.vectors is not None and len(self.vectors) != len(self.docs)):
            raise ValueError(f"A-MEM snapshot {path} is inconsistent (notes, documents, vectors differ); rebuild it.")

    def stats(self) -> dict[str, Any]:
        with self._lock:
            counters = dict(self.counters)
        return {
            "retrieve_k": self.cfg.retrieve_k,
            "neighbor_counter": self.cfg.neighbor_counter,
            "notes": len(self.notes),
            "links": sum(len(n.links) for n in self.notes),
            "notes_with_links": sum(1 for n in self.notes if n.links),
            "evo_cnt": self.evo_cnt,
            **counters,
        }


def _factory(ctx: MethodContext) -> AMem:
    cfg = config_from_dict(AMemConfig, ctx.config, "amem")
    return AMem(cfg, lambda: ctx.backbone, lambda: ctx.embedder, ctx.seed)


SPEC = MethodSpec(
    name="amem",
    factory=_factory,
    ingest_uses_llm=lambda c, a: True,
    config_schema=(AMemConfig,),
    validate_config=method_validator(AMemConfig, build=lambda name, cfg: config_from_dict(AMemConfig, cfg, name)),
    retrieve_uses_llm=lambda c, a: bool(c.get("query_keywords", True)),
    description="A-MEM: LLM-written notes, link generation and memory evolution (authors' LoCoMo pipeline)",
    upstream_answer="baselines.amem.answer_prompt:UPSTREAM",
    paper_row="amem",
    report_rank=30,
    sweep_knob="retrieve_k",
    sim_replies="baselines.amem.sim:REPLIES",
    sim_run_kinds=("amem_analysis", "amem_evolution", "amem_query"),
    bad_configs=(
        (("method.top_k=0",), ("method.top_k=0", "unknown key", "retrieve_k")),
        (("method.retrieve_k=0",), ("method.retrieve_k=0", "amem", ">= 1")),
        (("method.temperature=-1",), ("method.temperature=-1", "in [0, 2]")),
    ),
)
