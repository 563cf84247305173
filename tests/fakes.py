"""The fake LLMs of the tests: one family.

:class:`FakeLLM` is the base of every scripted model: a responder (messages → reply text) for
:class:`~memcore.llm.scripted.ScriptedBackbone` that sorts each call into a prompt *kind*, records it in
``calls``, answers through ``on_<kind>``, makes the kinds named in ``garbage`` (or ``"all"``) unparseable and
fails on a prompt it does not know. With ``answer`` set, a prompt no kind claims is the protocol's answer
prompt and gets ``{"answer": answer}`` (what the runner tests need besides the method's own prompts).
One subclass per method's prompts follows; :class:`RecordingBackbone` is the scripted backbone that also keeps
each call's keyword arguments (the ``scripted`` fixture of ``conftest.py`` builds one).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from baselines.fluxmem import prompt_verify as FLUX_VERIFY
from baselines.fluxmem import prompts as FLUX_PROMPT
from baselines.lightmem import prompt_extract as LIGHT_EXTRACT
from baselines.lightmem import prompt_update as LIGHT_UPDATE
from memcore.datasets.locomo.prompts import judge as JUDGE_PROMPT
from memcore.datasets.locomo.prompts import judge_mem0
from memcore.interfaces import Completion, Message
from memcore.llm.scripted import Responder, ScriptedBackbone
from memcore.memory.prompts import batch as BATCH_PROMPT
from memcore.memory.prompts import ingest as INGEST_PROMPT
from memcore.memory.prompts import merge as MERGE_PROMPT

#: The system prompt of the A-MEM-protocol answerer (and of A-MEM's own prompts).
JSON_SYSTEM = "You must respond with a JSON object"


class FakeLLM:
    """Base of the family (see the module docstring). Subclasses implement :meth:`kind` and ``on_<kind>``."""

    #: What a kind listed in ``garbage`` gets instead of its reply.
    UNPARSEABLE = "sorry, I cannot do that"

    def __init__(self, *, garbage: Iterable[str] = (), answer: str | None = None) -> None:
        self.garbage = set(garbage)
        self.answer = answer
        self.calls: list[tuple[str, list[Message]]] = []

    def kind(self, messages: Sequence[Message]) -> str | None:
        """The prompt's kind, or None when it is not one of this model's prompts."""
        raise NotImplementedError

    @staticmethod
    def user(messages: Sequence[Message]) -> str:
        """The user text of a call: the second message, or the only one."""
        return messages[1]["content"] if len(messages) > 1 else messages[0]["content"]

    def __call__(self, messages: Sequence[Message]) -> str:
        kind = self.kind(messages)
        if kind is None:
            if self.answer is None:
                raise AssertionError(f"unexpected prompt: {self.user(messages)[:80]}")
            kind = "answer"
        self.calls.append((kind, [dict(m) for m in messages]))
        if kind in self.garbage or "all" in self.garbage:
            return self.UNPARSEABLE
        return getattr(self, f"on_{kind}")(messages)

    def on_answer(self, messages: Sequence[Message]) -> str:
        return json.dumps({"answer": self.answer})

    @property
    def kinds(self) -> list[str]:
        """The kind of every call so far, in order."""
        return [k for k, _ in self.calls]

    def prompts_of(self, kind: str) -> list[str]:
        """The user text of every call of ``kind``."""
        return [self.user(msgs) for k, msgs in self.calls if k == kind]

    def backbone(self, **kwargs: Any) -> ScriptedBackbone:
        return ScriptedBackbone(self, **kwargs)


class RecordingBackbone(ScriptedBackbone):
    """A ScriptedBackbone that also keeps the keyword arguments of every call (``kwargs``).

    ``replies``: a responder, or one reply text, or reply texts given in turn (the last one repeats).
    ``cached``: every completion says it came from the response cache."""

    def __init__(self, replies: str | Sequence[str] | Responder, *, cached: bool = False, **kwargs: Any) -> None:
        if callable(replies):
            responder: Responder = replies
        else:
            texts = [replies] if isinstance(replies, str) else list(replies)

            def responder(_messages: Sequence[Message]) -> str:
                return texts.pop(0) if len(texts) > 1 else texts[0]

        self.kwargs: list[dict[str, Any]] = []
        self.cached = cached
        super().__init__(responder, **kwargs)

    def complete(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        self.kwargs.append(kwargs)
        c = super().complete(messages, **kwargs)
        if self.cached:
            return Completion(c.text, c.prompt_tokens, c.completion_tokens, 0.0, True, c.model)
        return c

    @property
    def prompt_versions(self) -> list[str]:
        return [kw["prompt_version"] for kw in self.kwargs]


def upstream_backbone(url: str, *, attempts: int = 12, timeout_s: float = 1.0) -> list[str]:
    """Overrides: the gpt-4o-mini preset pointed at a fake OpenAI-compatible server (``tests/fault_proxy.py``),
    with fast backoff for tests."""
    return [
        "backbone=gpt-4o-mini",
        f"++backbone.base_url={url}",
        "++backbone.api_key_required=false",
        f"++backbone.max_attempts={attempts}",
        "++backbone.backoff_cap_s=0.05",
        f"++backbone.timeout_s={timeout_s}",
    ]


# ---------------------------------------------------------------- MemCoRe
def tag_strength(new: str, cand: str) -> float:
    """Same tag + "dup" → redundant (0.9); same tag → complementary (0.6); else unrelated (0.1)."""
    tag_new = re.search(r"tag(\w)", new)
    tag_cand = re.search(r"tag(\w)", cand)
    if not tag_new or not tag_cand or tag_new.group(1) != tag_cand.group(1):
        return 0.1
    return 0.9 if "dup" in new else 0.6


def _section(text: str, start: str, end: str | None = None) -> str:
    s = text.split(start, 1)[1]
    return s.split(end, 1)[0] if end else s


def _undated(note: str) -> str:
    """A note as the prompts show it, without its leading ``(session date)``: what a model writes back."""
    return re.sub(r"^\([^)]*\d{4}\) ", "", note)


class MemCoReLLM(FakeLLM):
    """Every MemCoRe prompt. ``strength`` maps (new note, candidate note) → s; ``ier_plan`` scripts the IER
    judge; ``verdict`` (when given) is the gate's one judgement, of candidate 1, whatever the notes."""

    def __init__(
        self,
        strength: Callable[[str, str], float] = tag_strength,
        edge: str = "Supports",
        garbage: Sequence[str] = (),
        ier_plan: Sequence[dict[str, Any]] | None = None,
        verdict: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(garbage=garbage)
        self.strength = strength
        self.edge = edge
        self.verdict = verdict
        self.ier_plan = list(ier_plan or [{"sufficient": True, "sub_queries": []}])
        self.ier_calls = 0

    def kind(self, messages: Sequence[Message]) -> str | None:
        user = messages[1]["content"]
        if "Turn to record" in user:
            return "ingest"
        if "Existing notes:" in user:
            return "gate"
        if "Two memory notes" in user:
            return "merge"
        if "New related note" in user:
            return "link_update"
        if "Retrieved notes" in user:
            return "ier"
        if user.startswith("Question:"):
            return "decompose"
        return None

    def on_ingest(self, messages: Sequence[Message]) -> str:
        line = _section(messages[1]["content"], "Turn to record", "\n\nWrite").split("\n", 1)[1]
        speaker, text = line.split(": ", 1)
        words = [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4]
        return json.dumps({"context": f"{speaker} said that {text}", "keywords": words[:4]})

    def on_gate(self, messages: Sequence[Message]) -> str:
        user = messages[1]["content"]
        if self.verdict is not None:
            return json.dumps({"judgements": [{"id": 1, **self.verdict}]})
        new = _section(user, "New note:\n", "\n\nExisting notes:")
        cands = re.findall(r"^\[(\d+)\] (.*)$", _section(user, "Existing notes:\n", "\n\nFor every"), flags=re.M)
        judgements = [
            {"id": int(i), "relation": "x", "strength": self.strength(new, c), "edge": self.edge} for i, c in cands
        ]
        return json.dumps({"judgements": judgements})

    def on_merge(self, messages: Sequence[Message]) -> str:
        user = messages[1]["content"]
        a = _undated(_section(user, "Note A:\n", "\n\nNote B:"))
        b = _undated(_section(user, "Note B:\n", "\n\nFormat"))
        return json.dumps({"context": f"MERGED {a} + {b}"})

    def on_link_update(self, messages: Sequence[Message]) -> str:
        old = _undated(_section(messages[1]["content"], "Existing note:\n", "\n\nNew related note:"))
        return json.dumps({"context": f"{old} (followed up later)"})

    def on_decompose(self, messages: Sequence[Message]) -> str:
        q = _section(messages[1]["content"], "Question: ", "\n")
        ents = [w for w in re.findall(r"[a-z]+", q.lower()) if len(w) > 3]
        return json.dumps({"topic": q, "entities": ents[:4]})

    def on_ier(self, messages: Sequence[Message]) -> str:
        reply = self.ier_plan[min(self.ier_calls, len(self.ier_plan) - 1)]
        self.ier_calls += 1
        return json.dumps(reply)


_BATCH_TURN_RE = re.compile(r"^\[([^\]]+)\] \([^)]*\) (.*)$", re.MULTILINE)


class BatchedLLM(FakeLLM):
    """memcore-batched's prompts. Batch ingest: "<speaker> says <text> (noted)" per turn; ``drop_last`` leaves a
    chunk's last turn out, ``garbage`` answers no JSON to every batch ingest, ``runaway`` (``gate_runaway``) lets
    the last ingest entry (gate judgement) run on until the reply is cut at max_tokens. Per-turn ingest:
    "<text> (single)". Batch gate: in the Rex chunk, N2 and N3 repeat their predecessor (redundant, 0.9 and 0.8);
    nothing else is related. Merge: "merged"."""

    UNPARSEABLE = "sorry, no JSON here"
    KINDS: ClassVar[dict[str, str]] = {
        BATCH_PROMPT.INGEST_SYSTEM: "batch_ingest",
        INGEST_PROMPT.SYSTEM: "ingest",
        BATCH_PROMPT.GATE_SYSTEM: "batch_gate",
        MERGE_PROMPT.SYSTEM: "merge",
    }

    def __init__(
        self, *, drop_last: bool = False, garbage: bool = False, runaway: bool = False, gate_runaway: bool = False
    ) -> None:
        super().__init__(garbage=["batch_ingest"] if garbage else ())
        self.drop_last, self.runaway, self.gate_runaway = drop_last, runaway, gate_runaway

    def kind(self, messages: Sequence[Message]) -> str | None:
        return self.KINDS.get(messages[0]["content"])

    @staticmethod
    def user(messages: Sequence[Message]) -> str:
        return messages[1]["content"] if len(messages) > 2 else messages[-1]["content"]

    def on_batch_ingest(self, messages: Sequence[Message]) -> str:
        turns = _BATCH_TURN_RE.findall(self.user(messages).split("Turns to record", 1)[1])
        if self.drop_last:
            turns = turns[:-1]
        notes = [{"id": i, "context": f"{t} (noted)", "keywords": ["rex"]} for i, t in turns]
        if self.runaway and len(turns) > 1:
            head = json.dumps({"notes": notes[:-1]})[:-2]  # without the closing "]}"
            return head + ', {"id": "' + turns[-1][0] + '", "context": "' + "and then " * 2000  # cut off
        return json.dumps({"notes": notes})

    def on_ingest(self, messages: Sequence[Message]) -> str:
        text = self.user(messages).split("Turn to record", 1)[1].split("\n")[1]
        return json.dumps({"context": f"{text} (single)", "keywords": ["rex"]})

    def on_batch_gate(self, messages: Sequence[Message]) -> str:
        if "puppy" not in self.user(messages).split("New notes", 1)[1]:
            return json.dumps({"judgements": []})
        pairs = [("N2", "N1", 0.9), ("N3", "N2", 0.8)]
        judgements = [{"new": a, "candidate": b, "relation": "redundant", "strength": s} for a, b, s in pairs]
        if self.gate_runaway:  # the first judgement, then a reason that runs on until the reply is cut
            return json.dumps({"judgements": judgements[:1]})[:-2] + ', {"new": "N3", "reason": "' + "so " * 3000
        return json.dumps({"judgements": judgements})

    def on_merge(self, messages: Sequence[Message]) -> str:
        return json.dumps({"context": "merged"})


# ---------------------------------------------------------------- A-MEM and Mem0
def _amem_kind(user: str) -> str | None:
    """Which of A-MEM's three prompts ``user`` is."""
    if user.startswith("Generate a structured analysis"):
        return "analysis"
    if "memory evolution agent" in user:
        return "evolution"
    if "generate several keywords" in user:
        return "query"
    return None


class AMemLLM(FakeLLM):
    """A-MEM's three prompts; the evolution of the third note strengthens + updates."""

    def __init__(self, analysis_reply: str | None = None) -> None:
        super().__init__()
        self.analysis_reply = analysis_reply

    def kind(self, messages: Sequence[Message]) -> str | None:
        assert messages[0]["content"] == "You must respond with a JSON object."
        return _amem_kind(messages[1]["content"])

    @property
    def evolution_prompts(self) -> list[str]:
        return self.prompts_of("evolution")

    def on_analysis(self, messages: Sequence[Message]) -> str:
        if self.analysis_reply is not None:
            return self.analysis_reply
        content = messages[1]["content"].split("Content for analysis:\n", 1)[1]
        return json.dumps(
            {"keywords": content.split()[-2:], "context": f"about {content.split()[-1]}", "tags": ["chat"]}
        )

    def on_evolution(self, messages: Sequence[Message]) -> str:
        if len(self.evolution_prompts) < 3:
            return json.dumps({"should_evolve": False, "actions": []})
        return json.dumps(
            {
                "should_evolve": True,
                "actions": ["strengthen", "update_neighbor"],
                "suggested_connections": [0, 7],
                "tags_to_update": ["support", "group"],
                "new_context_neighborhood": ["Caroline attends an LGBTQ support group"],
                "new_tags_neighborhood": [["lgbtq", "support"]],
            }
        )

    def on_query(self, messages: Sequence[Message]) -> str:
        return json.dumps({"keywords": "LGBTQ support group"})


def mem0_section(prompt: str, name: str) -> str:
    """The ``## name`` section of a mem0 prompt."""
    return prompt.split(f"## {name}\n", 1)[1].split("\n\n#", 1)[0]


class Mem0ExtractorLLM(FakeLLM):
    """The LLM behind mem0's extraction prompt: one memory per new message (``broken``: no JSON at all)."""

    UNPARSEABLE = "I cannot answer in JSON"

    def __init__(self, broken: bool = False) -> None:
        super().__init__(garbage=["extract"] if broken else ())

    def kind(self, messages: Sequence[Message]) -> str | None:
        assert messages[0]["role"] == "system" and "Memory Extractor" in messages[0]["content"]
        return "extract"

    @property
    def prompts(self) -> list[str]:
        return self.prompts_of("extract")

    def on_extract(self, messages: Sequence[Message]) -> str:
        lines = [ln for ln in mem0_section(messages[1]["content"], "New Messages").splitlines() if ln.strip()]
        return json.dumps({"memory": [{"id": str(i), "text": f"{ln} [fact]"} for i, ln in enumerate(lines)]})


class Mem0TwoPhaseLLM(FakeLLM):
    """mem0-two-phase. Extraction: one fact per user line. Update: ADD everything into an empty memory; with
    memories, UPDATE memory 0 with the first fact and DELETE nothing. With ``answer``, the A-MEM-protocol
    answer prompt (checked first: it too has a system message) gets it."""

    def kind(self, messages: Sequence[Message]) -> str | None:
        if self.answer is not None and messages[0]["content"].startswith(JSON_SYSTEM):
            return None
        return "extract" if messages[0]["role"] == "system" else "update"

    @property
    def extractions(self) -> list[list[Message]]:
        return [msgs for k, msgs in self.calls if k == "extract"]

    @property
    def updates(self) -> list[str]:
        return [msgs[0]["content"] for k, msgs in self.calls if k == "update"]

    def on_extract(self, messages: Sequence[Message]) -> str:
        lines = [ln for ln in messages[1]["content"].splitlines() if ln.startswith("user: ")]
        return json.dumps({"facts": [ln.split(": ", 2)[2] for ln in lines]})

    def on_update(self, messages: Sequence[Message]) -> str:
        prompt = messages[0]["content"]
        facts = ast.literal_eval(re.findall(r"```\n    (\[.*?\])\n    ```", prompt, re.S)[-1])
        if "Current memory is empty." in prompt:
            return json.dumps({"memory": [{"id": str(i), "text": f, "event": "ADD"} for i, f in enumerate(facts)]})
        return json.dumps({"memory": [{"id": "0", "text": facts[0] + " (updated)", "event": "UPDATE"}]})


class AMemMem0RunnerLLM(FakeLLM):
    """A-MEM's analysis/evolution/query prompts and mem0's extraction prompt as the runner tests need them
    (every note evolves and links to note 0; one memory per user line); anything else is the answer prompt."""

    def __init__(self, answer: str = "a guess") -> None:
        super().__init__(answer=answer)

    def kind(self, messages: Sequence[Message]) -> str | None:
        kind = _amem_kind(messages[-1]["content"])
        if kind is None and "Memory Extractor" in messages[0]["content"]:
            return "extract"
        return kind

    def on_analysis(self, messages: Sequence[Message]) -> str:
        content = messages[-1]["content"].split("Content for analysis:\n", 1)[1]
        return json.dumps({"keywords": content.split()[2:5], "context": content[:60], "tags": ["dialogue"]})

    def on_evolution(self, messages: Sequence[Message]) -> str:
        return json.dumps({"should_evolve": True, "actions": ["strengthen"], "suggested_connections": [0]})

    def on_query(self, messages: Sequence[Message]) -> str:
        return json.dumps({"keywords": messages[-1]["content"].split("Question: ", 1)[1].split("\n", 1)[0]})

    def on_extract(self, messages: Sequence[Message]) -> str:
        new = messages[-1]["content"].split("## New Messages\n", 1)[1].split("\n\n#", 1)[0]
        lines = [ln for ln in new.splitlines() if ln.startswith("user: ")]
        return json.dumps({"memory": [{"id": str(i), "text": ln[6:]} for i, ln in enumerate(lines)]})


# ---------------------------------------------------------------- LightMem
class LightMemLLM(FakeLLM):
    """LightMem. Extraction: one fact per listed message, quoting it; update: ignore. With ``answer``, only the
    update prompt (its system prompt) is an update and anything else is the answer prompt."""

    def kind(self, messages: Sequence[Message]) -> str | None:
        if messages[0]["content"] == LIGHT_EXTRACT.METADATA_GENERATE_PROMPT_LOCOMO:
            return "extract"
        if self.answer is None or messages[0]["content"] == LIGHT_UPDATE.UPDATE_PROMPT:
            return "update"
        return None

    def on_extract(self, messages: Sequence[Message]) -> str:
        found = re.findall(r"\] (\d+)\.(\w+): (.*)", messages[-1]["content"])
        return json.dumps({"data": [{"source_id": int(i), "fact": f"{sp} said: {text}"} for i, sp, text in found]})

    def on_update(self, messages: Sequence[Message]) -> str:
        return json.dumps({"action": "ignore"})


# ---------------------------------------------------------------- FluxMem
FLUX_TURN_RE = re.compile(r"Turn to record \((?P<dia>[^)]+)\):\n(?P<speaker>[^:]+): (?P<text>.+)")
FLUX_KINDS = {
    FLUX_VERIFY.VERIFY_SYSTEM: "grade",
    FLUX_PROMPT.FACTS_SYSTEM: "facts",
    FLUX_PROMPT.VERIFY_SYSTEM: "verify",
    FLUX_PROMPT.CHECK_SYSTEM: "check",
    FLUX_PROMPT.RESHAPE_SYSTEM: "reshape",
    FLUX_PROMPT.SKILL_EXTRACT_SYSTEM: "skill_extract",
    FLUX_PROMPT.SKILL_REFINE_SYSTEM: "skill_refine",
    FLUX_PROMPT.SKILL_RERUN_SYSTEM: "skill_rerun",
}


class FluxMemLLM(FakeLLM):
    """FluxMem's prompts, routed by system prompt; ``log`` holds (purpose, user text) of every call."""

    UNPARSEABLE = "sorry, no JSON"

    def __init__(
        self,
        *,
        relevant: list[int] | None = None,
        checks: list[dict[str, Any]] | None = None,
        reshape: str = "Rex is a beagle puppy adopted by Alice.",
        skills: list[str] | None = None,
        rerun: dict[str, list[bool]] | None = None,
        bad_facts: bool = False,
        empty_facts: bool = False,
        grade: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(garbage=["facts"] if bad_facts else ())
        self.grade = grade or (lambda evidence: "0.5")
        self.relevant = relevant if relevant is not None else [1]
        self.checks = list(checks or [])
        self.reshape = reshape
        self.skills = list(skills or ["S0"])
        self.rerun = rerun or {}
        self.empty_facts = empty_facts
        self._rerun_i: dict[str, int] = {}

    def kind(self, messages: Sequence[Message]) -> str | None:
        return FLUX_KINDS.get(messages[0]["content"])

    @property
    def log(self) -> list[tuple[str, str]]:
        return [(k, msgs[1]["content"]) for k, msgs in self.calls]

    def purposes(self) -> list[str]:
        return self.kinds

    def on_facts(self, messages: Sequence[Message]) -> str:
        if self.empty_facts:
            return json.dumps({"facts": []})
        m = FLUX_TURN_RE.search(messages[1]["content"])
        assert m is not None
        facts = [f"{m['speaker']} says: {m['text']}"]
        if "puppy" in m["text"]:
            facts.append("Alice has a dog named Rex.")
        return json.dumps({"facts": facts})

    def on_verify(self, messages: Sequence[Message]) -> str:
        return json.dumps({"relevant": self.relevant})

    def on_grade(self, messages: Sequence[Message]) -> str:
        """Upstream's graded verification: ``grade(evidence)`` is the plain-text reply."""
        return self.grade(messages[1]["content"].split("\n\nEvidence: ", 1)[1].rsplit("\n\nRelevance score", 1)[0])

    def on_check(self, messages: Sequence[Message]) -> str:
        return json.dumps(self.checks.pop(0) if self.checks else {"supported": True})

    def on_reshape(self, messages: Sequence[Message]) -> str:
        return json.dumps({"mode": "expand", "text": self.reshape})

    def on_skill_extract(self, messages: Sequence[Message]) -> str:
        return json.dumps({"skill": self._next_skill()})

    on_skill_refine = on_skill_extract

    def on_skill_rerun(self, messages: Sequence[Message]) -> str:
        skill = re.search(r"Procedure: (.*)", messages[1]["content"])
        assert skill is not None
        key = skill.group(1)
        i = self._rerun_i.get(key, 0)
        self._rerun_i[key] = i + 1
        pattern = self.rerun.get(key, [True])
        return json.dumps({"answer": "x", "success": pattern[i % len(pattern)]})

    def _next_skill(self) -> str:
        """The next scripted skill text; the last one repeats (upstream's loop may rewrite more often)."""
        return self.skills.pop(0) if len(self.skills) > 1 else self.skills[0]


class FluxMemRunnerLLM(FakeLLM):
    """FluxMem through the runner: facts = the turn itself; verification keeps candidate 1; no answer is ever
    judged supported; anything else is the protocol's answer prompt."""

    def __init__(self, answer: str = "a guess") -> None:
        super().__init__(answer=answer)

    def kind(self, messages: Sequence[Message]) -> str | None:
        return FLUX_KINDS.get(messages[0]["content"])

    def on_facts(self, messages: Sequence[Message]) -> str:
        line = messages[-1]["content"].split("):\n", 1)[1].split("\n", 1)[0]
        return json.dumps({"facts": [line]})

    def on_verify(self, messages: Sequence[Message]) -> str:
        return json.dumps({"relevant": [1]})

    def on_grade(self, messages: Sequence[Message]) -> str:
        return "0.5"

    def on_check(self, messages: Sequence[Message]) -> str:
        return json.dumps({"supported": False, "failure": "under_connection", "missing": "date"})

    def on_skill_extract(self, messages: Sequence[Message]) -> str:
        return json.dumps({"skill": "Look for the dated fact."})

    on_skill_refine = on_skill_extract

    def on_skill_rerun(self, messages: Sequence[Message]) -> str:
        return json.dumps({"answer": "x", "success": True})

    def on_reshape(self, messages: Sequence[Message]) -> str:
        return json.dumps({"mode": "expand", "text": "x"})


# ---------------------------------------------------------------- the judge
def has_digit(gold: str) -> bool:
    return any(ch.isdigit() for ch in gold)


class JudgeLLM(FakeLLM):
    """Answers every question with ``answer``; the judge (the default preset's prompt, or with
    ``preset="mem0-judge"`` Mem0's) says CORRECT iff ``correct(gold)`` (by default: the gold contains a digit)."""

    def __init__(
        self, preset: str = "default", answer: str = "beagle", correct: Callable[[str], bool] = has_digit
    ) -> None:
        super().__init__(answer=answer)
        self.preset = preset
        self.correct = correct

    def kind(self, messages: Sequence[Message]) -> str | None:
        if self.preset == "mem0-judge":
            content = messages[-1]["content"] if len(messages) == 1 else messages[0]["content"]
            return "judge" if content.startswith(judge_mem0.ACCURACY_PROMPT[:40]) else None
        return "judge" if messages[0]["content"] == JUDGE_PROMPT.SYSTEM else None

    def on_judge(self, messages: Sequence[Message]) -> str:
        if self.preset == "mem0-judge":
            content = messages[-1]["content"] if len(messages) == 1 else messages[0]["content"]
            gold = content.split("Gold answer: ")[-1].split("\n", 1)[0]
            return json.dumps({"label": "CORRECT" if self.correct(gold) else "WRONG"})
        gold = messages[1]["content"].split("Gold answer: ", 1)[1].split("\n", 1)[0]
        label = "CORRECT" if self.correct(gold) else "WRONG"
        return json.dumps({"reason": "scripted", "label": label})
