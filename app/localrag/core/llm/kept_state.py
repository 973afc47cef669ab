"""The evaluated state of the prompt prefix kept on disk (``LocalLLM.keep_prefix``): the first question after
a start, and every ``local-rag ask``, begins from it instead of evaluating the system prompt again.

A state file is keyed by the model file, the llama.cpp build and CPU kernels, the tokens and the settings
that shape the state (context size, attention kernel, batch size, cache types, extra buffers); the newest
``KEPT_STATES`` are kept.
"""

from __future__ import annotations

import array
import ctypes
import hashlib
import logging
import struct
from collections.abc import Sequence
from typing import Any

from localrag.core.llm import openmp

log = logging.getLogger("localrag.llm")

STATE_MAGIC = b"LRAGKV1\n"
# Saved prefix states kept in the cache folder (the newest; older ones are for settings or builds gone by).
KEPT_STATES = 6


def _name(llm: Any, tokens: Sequence[int]) -> str:
    from localrag.core.llm import machine_check

    digest = hashlib.sha256(array.array("i", tokens).tobytes()).hexdigest()[:16]
    key = machine_check.key(
        machine_check.model_part(llm.path),
        llm.n_ctx,
        llm.flash_attn,
        llm.n_ubatch,
        llm.kv_types,
        llm.extra_bufts,
        digest,
    )
    return f"prefix-state.{key}.bin"


def save(llm: Any, tokens: Sequence[int]) -> None:
    """Write the evaluated state of ``tokens`` (the model's cache holds just them) to the cache folder."""
    openmp.configure()
    import llama_cpp

    from localrag.core.llm import machine_check

    ctx = llm.llama.ctx
    size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
    buffer = (ctypes.c_uint8 * size)()
    n = int(llama_cpp.llama_state_seq_get_data(ctx, buffer, size, 0))
    if not 0 < n <= size:
        log.debug("llama.cpp gave no state for the prompt prefix")
        return
    header = STATE_MAGIC + struct.pack("<I", len(tokens)) + array.array("i", tokens).tobytes()
    machine_check.remember(_name(llm, tokens), header + bytes(memoryview(buffer)[:n]))
    machine_check.prune("prefix-state.*.bin", KEPT_STATES)


def load(llm: Any, tokens: Sequence[int]) -> bool:
    """Restore the saved state of exactly ``tokens`` into the empty cache; False when there is none or it
    does not fit (then nothing changed)."""
    openmp.configure()
    import llama_cpp

    from localrag.core.llm import machine_check

    data = machine_check.recall_bytes(_name(llm, tokens))
    head = len(STATE_MAGIC) + 4
    if data is None or len(data) <= head or not data.startswith(STATE_MAGIC):
        return False
    (count,) = struct.unpack("<I", data[len(STATE_MAGIC) : head])
    body = head + 4 * count
    if count != len(tokens) or array.array("i", data[head:body]).tolist() != list(tokens):
        return False
    state = data[body:]
    buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
    llm.llama._ctx.kv_cache_seq_rm(-1, 0, -1)  # n_tokens 0 may still leave cells of an earlier prompt
    if int(llama_cpp.llama_state_seq_set_data(llm.llama.ctx, buffer, len(state), 0)) == 0:
        log.info("the saved state of the prompt prefix does not fit this model; evaluating it")
        llm.llama._ctx.kv_cache_seq_rm(-1, 0, -1)
        return False
    llm.llama.input_ids[: len(tokens)] = tokens
    llm.llama.n_tokens = len(tokens)
    llm.llama._requires_eval = True  # no logits yet: a prompt of exactly these tokens replays the last
    return True
