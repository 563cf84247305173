"""LLMLingua-2 as LightMem's sensory pre-compressor (``compressor: llmlingua2``), used only where the optional
``llmlingua`` package (``pip install -e .[llmlingua]``) and its model are available.

Mirrors upstream's ``LlmLingua2Compressor`` (zjunlp/LightMem ``src/lightmem/factory/pre_compressor/llmlingua_2.py``
at 8fc9a91): each message is compressed on its own with ``compress_prompt(context=[text], instruction="",
rate=r, target_token=-1)`` (``add_locomo.py``'s ``compress_config``); a message still at 512 model tokens or
more is compressed again; an empty result keeps the original text. The model must be a local directory or
already in the Hugging Face cache: nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

#: The LLMLingua-2 model's window; upstream re-compresses a message that is still this long.
MAX_MODEL_TOKENS = 512


def llmlingua_unavailable(model: str) -> str | None:
    """Why ``compressor: llmlingua2`` cannot run here (one line saying what to do), or None when it can:
    the ``llmlingua`` package must be importable and ``model`` a local directory or a cached hub model.
    Cheap: imports nothing heavy and loads no weights."""
    if importlib.util.find_spec("llmlingua") is None:
        return (
            "method.compressor=llmlingua2 needs the llmlingua package (pip install -e '.[llmlingua]'); "
            "use method.compressor=idf (the offline stand-in) otherwise"
        )
    if Path(model).expanduser().is_dir():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return f"method.llmlingua_model={model!r} is not a local directory and huggingface_hub is not installed"
    cached = try_to_load_from_cache(model, "config.json")
    if isinstance(cached, str):
        return None
    return (
        f"method.llmlingua_model={model!r} is neither a local directory nor in the Hugging Face cache "
        "(download it once with `hf download <model>`, or point method.llmlingua_model at a directory); "
        "use method.compressor=idf otherwise"
    )


class LlmLingua2Compressor:
    """LLMLingua-2 at ``rate`` (share of tokens kept), on CPU. Loads the model at construction; stateless."""

    def __init__(self, model: str, rate: float) -> None:
        from llmlingua import PromptCompressor  # optional extra; availability checked before any work

        self.rate = rate
        self._compressor: Any = PromptCompressor(model_name=model, device_map="cpu", use_llmlingua2=True)
        self._tokenizer: Any = getattr(self._compressor, "tokenizer", None)

    def _once(self, context: Any) -> str:
        out = self._compressor.compress_prompt(context=context, instruction="", rate=self.rate, target_token=-1)
        return str(out["compressed_prompt"])

    def compress(self, text: str) -> str:
        """The compressed message (the original text when compression leaves nothing)."""
        if not text.strip():
            return text
        out = self._once([text])
        if self._tokenizer is not None:
            while out.strip() and len(self._tokenizer.encode(out)) >= MAX_MODEL_TOKENS:
                shorter = self._once(out)
                if len(shorter) >= len(out):  # no progress: stop rather than loop
                    break
                out = shorter
        return out.strip() or text
