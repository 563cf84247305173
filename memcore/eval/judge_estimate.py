"""What judging a set of answers will cost, said before the first call: the calls the judge preset makes (items it
grades × runs, again for each item whose audited gold differs), their prompt tokens and their price at the judge
backbone's list price."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from omegaconf import DictConfig

from memcore.eval.judge import judge_server_overrides, judge_settings, load_backbone_preset
from memcore.eval.protocols import get_protocol
from memcore.text import count_tokens
from memcore.types import QAItem


def judge_estimate(
    cfg: DictConfig, audited: Mapping[str, QAItem], answered: Sequence[tuple[QAItem, str | None]]
) -> str:
    """One line for ``answered`` (item, answer) pairs under ``cfg``'s judge settings (``audited``: the audit's item
    by id, empty without the overlay); an empty answer is judged WRONG without a call, so it is not counted.
    Completion tokens are bounded by the preset's ``max_tokens``."""
    preset, backbone, runs = judge_settings(cfg)
    bcfg = cfg.backbone if backbone is None else load_backbone_preset(backbone, judge_server_overrides(cfg))
    protocol = get_protocol(str(cfg.protocol.name))
    calls = prompt = 0
    for item, answer in answered:
        if not preset.judges(item.category) or answer is None or not str(answer).strip():
            continue
        golds = [item]
        corrected = audited.get(item.item_id)
        if corrected is not None and corrected.answer != item.answer:
            golds.append(corrected)
        for gold_item in golds:
            messages = preset.messages(item, gold_item, str(answer), protocol)
            calls += runs
            prompt += runs * count_tokens(" ".join(str(m["content"]) for m in messages))
    completion = calls * preset.max_tokens
    price_in, price_out = float(bcfg.price_in_per_mtok), float(bcfg.price_out_per_mtok)
    low = prompt * price_in / 1e6
    high = low + completion * price_out / 1e6
    return (
        f"judge {preset.name} on {bcfg.name} ({bcfg.model}): {calls} calls ({runs} run{'s' if runs != 1 else ''} per "
        f"item it grades, again where the audited gold differs), about {prompt:,} prompt tokens and at most "
        f"{completion:,} completion tokens: ${low:.4f} to ${high:.4f} at list price "
        f"(${price_in}/${price_out} per million tokens); replies already cached cost nothing"
    )
