"""The language model as an answer uses it: whether it leads the answer or only rewords the quoted sources,
the prompt prefix it keeps evaluated, and how it runs on this machine (for the developer pane)."""

from __future__ import annotations

from typing import Any

from localrag.core.answer import prompts
from localrag.core.answer.events import MODEL, SOURCES
from localrag.core.answer.prompts import GROUNDED
from localrag.core.errors import ModelMissing
from localrag.core.llm.llm import LocalLLM
from localrag.core.llm.provider import LLMProvider
from localrag.core.progress import CancelToken

# "auto" lets a model this large (parameters) lead; a smaller one only rewords the quoted sources.
LARGE_MODEL_PARAMS = 1_000_000_000


def keep_prefix(llm: LocalLLM) -> list[int]:
    """The tokens every grounded prompt starts with (system prompt, worked example), kept on disk by the model
    once evaluated (``LocalLLM.keep_prefix``): the first question after a start, and every ``local-rag ask``,
    begins from their saved state."""
    tokens = llm.render(prompts.prefix_messages(GROUNDED))
    llm.keep_prefix(tokens)
    return tokens


def choose_lead(settings: Any, provider: LLMProvider | None, cancel: CancelToken) -> str:
    """What leads the answer: the setting, or for "auto" the sources unless the model is a large one."""
    choice = str(settings.answer_lead or "auto").lower()
    if choice in (SOURCES, MODEL):
        return choice
    llm = provider.llm if provider is not None else None
    if llm is None and provider is not None and not provider.failed:
        if small_model_file(settings):  # decided without waiting for it to load
            return SOURCES
        try:  # a large model leads, and the answer waits for it anyway
            llm = provider.get(cancel)
        except ModelMissing:
            llm = None
    return MODEL if llm is not None and llm.n_params >= LARGE_MODEL_PARAMS else SOURCES


def small_model_file(settings: Any) -> bool:
    """Whether the configured GGUF is too small a file to hold ``LARGE_MODEL_PARAMS`` parameters (at 4.5 bits
    a weight, the smallest quantisation worth running), so that what leads is known before the model loads."""
    from localrag.core.llm.llm import gguf_path

    try:
        return gguf_path(settings).stat().st_size < LARGE_MODEL_PARAMS * 4.5 / 8
    except (ModelMissing, OSError):
        return True


def llm_setup(llm: Any) -> str:
    """How the language model runs here, for the developer pane: its CPU kernels and the tuning measured for
    this machine (``zen4 kernels · bf16 weights, flash attention, batches of 512``); "" when unknown."""
    parts = []
    variant = str(getattr(getattr(llm, "backend", None), "variant", "") or "")
    if variant:
        parts.append(f"{variant} kernels")
    tuning = getattr(llm, "tuning", None)
    if tuning is not None:
        parts.append(tuning.setup)
    return " · ".join(parts)
