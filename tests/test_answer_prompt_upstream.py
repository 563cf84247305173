"""eval.answer_prompt: the harness's prompt by default (run keys unchanged), each method's upstream answer prompt
under ``upstream`` (text, layout, sampling as upstream), disclosed, keyed, and rescorable."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from baselines.lightmem.answer_prompt import UPSTREAM as LIGHTMEM
from baselines.lightmem.answer_prompt import speaker_blocks
from baselines.mem0.answer_prompt import ANSWER_PROMPT, UPSTREAM, render
from experiments.measure.answer_prompt_effect import compare, to_markdown
from memcore.commands.rescore import main as rescore_main
from memcore.datasets.locomo.categories import Category
from memcore.eval.answerer import Answerer
from memcore.interfaces import Message
from memcore.itemlog import LoggedItem, read_items
from memcore.llm.scripted import ScriptedBackbone, echo_responder
from memcore.methods import get_method
from memcore.pipeline.rundir import RunConflictError, result_fields
from memcore.rescore import rescore
from memcore.runner import run_config
from memcore.types import Evidence, QAItem
from tests.fakes import Mem0TwoPhaseLLM

MEM0_REPLY = "Step 1: the memories say so. Answer: the support group"


def _item(category: int = 1) -> QAItem:
    return QAItem(
        conv_id="conv-t", index=0, question="What did Caroline attend?", answer="support group",
        category=Category(category), evidence=("D1:1",),
    )  # fmt: skip


def test_mem0_prompt_renders_as_their_jinja_template_in_one_system_message() -> None:
    import jinja2

    lines = ['1:56 pm on 8 May, 2023: Went to a "support" group', "8 May: Likes {{braces}}"]
    evidence = Evidence(layout={"speaker_memories": [("Caroline", lines), ("Melanie", [])]})
    answerer = Answerer(ScriptedBackbone(lambda m: MEM0_REPLY), UPSTREAM.spec, seed=1)
    prompt = answerer.build_prompt(_item(), answerer.context_of(evidence))
    want = jinja2.Template(ANSWER_PROMPT).render(
        speaker_1_user_id="Caroline",
        speaker_2_user_id="Melanie",
        speaker_1_memories=json.dumps(lines, indent=4),
        speaker_2_memories=json.dumps([], indent=4),
        question="What did Caroline attend?",
    )
    assert prompt.messages == [{"role": "system", "content": want}]
    assert prompt.temperature == 0.0 and prompt.max_tokens == UPSTREAM.spec.max_tokens
    assert answerer.answer(_item(), answerer.context_of(evidence)).text == MEM0_REPLY  # the reply as it comes
    assert render("{{a}} {{b}}", {"a": "{{b}}"}) == "{{b}} "  # one pass, unknown names empty (jinja2's default)


def test_lightmem_layout_groups_by_speaker_with_their_date_line() -> None:
    entries = [
        ("Melanie", "1:56 pm on 8 May, 2023", "Melanie painted a lake."),
        ("Caroline", "1:14 pm on 25 May, 2023", "Caroline left the group."),
        ("Melanie", "1:14 pm on 25 May, 2023", "Melanie ran a race."),
    ]
    blocks = speaker_blocks(entries)
    assert blocks == [
        (
            "Melanie",
            "[Memory recorded on: 08 May 2023, Mon]\nMelanie painted a lake.\n\n"
            "[Memory recorded on: 25 May 2023, Thu]\nMelanie ran a race.",
        ),
        ("Caroline", "[Memory recorded on: 25 May 2023, Thu]\nCaroline left the group."),
    ]
    assert speaker_blocks([]) == [("Speaker 1", "No memories available."), ("Speaker 2", "No memories available.")]
    spec = LIGHTMEM.spec
    messages = spec.messages(_item(), spec.context(Evidence(layout={"entries": entries[:1]})), ())
    assert messages[0]["role"] == "system" and len(messages) == 1
    assert "Memories for user Melanie:\n\n[Memory recorded on: 08 May 2023, Mon]" in messages[0]["content"]
    assert "Memories for user Speaker 2:\n\nNo memories available." in messages[0]["content"]
    assert messages[0]["content"].endswith("Question: What did Caroline attend?\n\nAnswer:\n")


def test_which_methods_have_an_upstream_prompt() -> None:
    have = {"amem", "mem0", "mem0-two-phase", "lightmem", "full_context", "rag_locomo"}
    for name in ("amem", "mem0", "mem0-two-phase", "lightmem", "full_context", "rag_locomo", "memcore", "rag_dense",
                 "fluxmem", "memgpt"):  # fmt: skip
        assert bool(get_method(name).upstream_answer) == (name in have), name


class _Mem0AnswerLLM(Mem0TwoPhaseLLM):
    """mem0-two-phase's build prompts, and Mem0's upstream answer prompt (a system message) answered in prose."""

    def kind(self, messages: Sequence[Message]) -> str | None:
        if "You are an intelligent memory assistant" in messages[0]["content"]:
            return "mem0_answer"
        return super().kind(messages)

    def on_mem0_answer(self, messages: Sequence[Message]) -> str:
        return MEM0_REPLY


@pytest.mark.usefixtures("locomo_path")
def test_an_upstream_run_answers_with_mem0s_prompt_discloses_it_and_is_keyed(tmp_path: Path, compose) -> None:
    base = ["dataset=locomo-tiny", "dataset.max_qa=3", "embedder=hashing", "backbone=scripted", "method=mem0-two-phase"]
    script = _Mem0AnswerLLM(answer="a guess")
    run_config(
        compose([*base, "eval.answer_prompt=upstream"]), tmp_path / "run", backbone_override=ScriptedBackbone(script)
    )
    items = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert {r["prompt_version"] for r in items} == {"mem0-answer-aae5989e7"}
    assert {r["answer"] for r in items} == {MEM0_REPLY}
    assert len([k for k in script.kinds if k == "mem0_answer"]) == len(items)
    info = json.loads((tmp_path / "run" / "metrics.json").read_text())["run"]["answer"]
    assert info["answer_prompt"] == "upstream" and "aae5989e7" in info["prompt_source"]
    assert info["temperature"] == 0.0 and info["prompt_name"].startswith("Mem0's ANSWER_PROMPT")
    assert "eval.answer_prompt=upstream: the method's own" in (tmp_path / "run" / "table.md").read_text()
    state = json.loads((tmp_path / "run" / "run_state.json").read_text())
    assert state["fields"]["eval"]["answer_prompt"] == "upstream"
    with pytest.raises(RunConflictError, match="eval"):  # a resumed run never mixes the two prompts
        run_config(compose(base), tmp_path / "run", backbone_override=ScriptedBackbone(script))
    # rescoring reads the items: it works on an upstream run under either protocol
    assert rescore_main([str(tmp_path / "run"), "--protocol", "locomo", "--out", str(tmp_path / "rescored")]) == 0
    judge = ScriptedBackbone(lambda m: json.dumps({"label": "CORRECT"}))
    result = rescore(
        tmp_path / "run", tmp_path / "judged", judge=True, judge_preset="mem0-judge", judge_backbone="scripted",
        backbone_override=judge, usage=judge.usage,
    )  # fmt: skip
    assert result.metrics["run"]["judge"]["judge_preset"] == "mem0-judge"  # Mem0's judge grades these answers too
    judged = [r for r in read_items(tmp_path / "judged" / "items.jsonl") if "judge" in r["scores"]]
    assert judged and all(r["scores"]["judge"] == 1.0 for r in judged)
    assert result.metrics["run"]["answer"]["answer_prompt"] == "upstream"


@pytest.mark.usefixtures("locomo_path")
def test_harness_is_the_default_and_leaves_run_keys_as_they_were(compose) -> None:
    cfg = compose(["dataset=locomo-tiny", "method=mem0-two-phase"])
    assert cfg.eval.answer_prompt == "harness"
    assert "answer_prompt" not in result_fields(cfg, "sha")["eval"]
    upstream = compose(["dataset=locomo-tiny", "method=mem0-two-phase", "eval.answer_prompt=upstream"])
    assert result_fields(upstream, "sha")["eval"]["answer_prompt"] == "upstream"


@pytest.mark.usefixtures("locomo_path")
def test_a_method_without_one_keeps_the_harness_prompt_and_says_so(tmp_path: Path, compose) -> None:
    base = ["dataset=locomo-tiny", "dataset.max_qa=2", "embedder=hashing", "backbone=scripted", "method=rag_dense"]
    run_config(
        compose([*base, "eval.answer_prompt=upstream"]),
        tmp_path / "run",
        backbone_override=ScriptedBackbone(echo_responder),
    )
    info = json.loads((tmp_path / "run" / "metrics.json").read_text())["run"]["answer"]
    assert info["prompt"] == "answer-v1/amem" and "no upstream answer prompt" in info["answer_prompt_note"]
    assert "no upstream prompt for this method" in (tmp_path / "run" / "table.md").read_text()


def test_the_effect_table_pairs_items_and_counts_words() -> None:
    def rec(i: int, cat: int, f1: float, answer: str) -> LoggedItem:
        return LoggedItem(item_id=f"c#{i}", category=cat, answer=answer, scores={"f1": f1, "bleu1": f1 / 2})

    harness = [rec(0, 2, 1.0, "7 May"), rec(1, 4, 0.5, "a dog"), rec(2, 4, 0.0, "no")]
    upstream = [rec(0, 2, 0.5, "Step by step: it was 7 May 2023"), rec(1, 4, 0.5, "a big dog")]  # item 2 unanswered
    rows = {r["group"]: r for r in compare(harness, upstream)}
    one_four = rows["overall 1-4"]
    assert one_four["n"] == 2 and one_four["f1_harness"] == 75.0 and one_four["f1_upstream"] == 50.0
    assert one_four["f1_delta"][0] == -25.0 and one_four["words_harness"] == 2.0 and one_four["words_upstream"] == 5.5
    assert "| 2 temporal | 1 | 100.00 | 50.00 |" in to_markdown(list(rows.values()))
