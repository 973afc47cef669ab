"""Per-machine tuning, measured once in a child process and remembered, and the fixed prompt prefix's state
kept on disk: real model, real llama.cpp, real child processes."""

from __future__ import annotations

import sys

import pytest

from localrag.core import paths
from localrag.core.chat import machine_check, tuning
from localrag.core.chat.engine import keep_prefix
from localrag.core.chat.fastcopy import ensure_fast_copy, fast_copy_path, fast_copy_type
from localrag.core.chat.llm import LocalLLM, load_llm, tuning_for
from localrag.core.config import Settings
from localrag.core.embed import model_files

QUESTION = {
    "role": "user",
    "content": "Sources:\n\n[1] The night train leaves at 22:10.\n\nWhen does it leave?",
}


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALRAG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_first_load_measures_once_and_loads_the_winner(home, own_cache, monkeypatch):
    monkeypatch.setenv(tuning.BUDGET_ENV, "10")
    source = model_files.default_gguf()
    settings = Settings(n_ctx=512)
    assert tuning_for(settings) is None
    llm = load_llm(settings)
    tuned = llm.tuning
    assert tuned is not None and not tuned.note
    measured = [m for m in tuned.measured if "prompt_s" in m]
    assert len(measured) >= 2 and measured[0]["weights"] == fast_copy_type()
    assert all(m["prompt_cpu_s"] > 0 and m["prompt_tokens"] == tuning.PROMPT_TOKENS for m in measured)
    # The winner is the measured configuration whose prompt took least CPU time, among those fast enough.
    winner = tuning.choose(measured, tuned)
    assert (tuned.weights, tuned.flash_attn, tuned.n_ubatch) == (
        winner.weights,
        winner.flash_attn,
        winner.n_ubatch,
    )
    assert llm.path == fast_copy_path(source, tuned.weights)
    assert (llm.flash_attn, llm.n_ubatch) == (tuned.flash_attn, tuned.n_ubatch)
    for weights in tuning.candidate_weights(llm.backend.features):  # only the chosen copy is kept
        assert fast_copy_path(source, weights).exists() == (weights == tuned.weights)
    assert tuned.weights in tuned.describe() and "measured once" in tuned.describe()

    # Remembered: the next load measures nothing.
    def never(*args, **kwargs):
        raise AssertionError("measured twice")

    monkeypatch.setattr(machine_check, "run_child", never)
    again = load_llm(settings)
    assert again.tuning == tuned and again.path == llm.path
    assert tuning_for(settings) == tuned


def test_a_measurement_that_dies_leaves_the_defaults_once(home, own_cache, monkeypatch):
    crash = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    monkeypatch.setattr(tuning, "_command", lambda plan: [sys.executable, "-c", crash])
    llm = load_llm(Settings(n_ctx=512))
    assert llm.tuning is not None and "stopped" in llm.tuning.note
    assert llm.tuning.weights == fast_copy_type() and llm.path == fast_copy_path(
        model_files.default_gguf(), fast_copy_type()
    )
    assert "defaults" in llm.tuning.describe()
    monkeypatch.setattr(tuning, "_command", lambda plan: pytest.fail("measured twice"))
    assert load_llm(Settings(n_ctx=512)).tuning == llm.tuning


def _answer(llm: LocalLLM, prompt: list[int]) -> str:
    return "".join(llm.stream(prompt, max_tokens=12, temperature=0.0))


def test_the_kept_prefix_state_is_restored_from_disk_and_changes_no_answer(home, own_cache):
    path = ensure_fast_copy(model_files.default_gguf())
    scratch = LocalLLM(path, n_ctx=1024)
    prompt = scratch.render([*_prefix_messages(), QUESTION])
    fresh = _answer(scratch, prompt)
    assert scratch.last_stats.cached_tokens == 0

    first = LocalLLM(path, n_ctx=1024)
    prefix = keep_prefix(first)
    assert first.prime(prefix) > 0
    states = list(paths.cache_dir().glob("prefix-state.*.bin"))
    assert len(states) == 1
    del first

    restarted = LocalLLM(path, n_ctx=1024)
    keep_prefix(restarted)
    assert _answer(restarted, prompt) == fresh
    assert restarted.last_stats.cached_tokens >= len(prefix) - 8  # from disk, not evaluated

    # Other settings shape another state: a new file, never the old one.
    other = LocalLLM(path, n_ctx=1024, n_ubatch=256)
    keep_prefix(other)
    assert _answer(other, prompt) == fresh
    assert len(list(paths.cache_dir().glob("prefix-state.*.bin"))) == 2

    # Only the newest few states are kept.
    from localrag.core.chat import llm as llm_mod

    for n in range(llm_mod.KEPT_STATES + 2):
        extra = LocalLLM(path, n_ctx=512 + 256 * n)
        keep_prefix(extra)
        extra.prime(keep_prefix(extra))
    assert len(list(paths.cache_dir().glob("prefix-state.*.bin"))) == llm_mod.KEPT_STATES

    # A damaged file is not used: the prefix is evaluated again and the answer is the same.
    for state in paths.cache_dir().glob("prefix-state.*.bin"):
        state.write_bytes(state.read_bytes()[:100])
    damaged = LocalLLM(path, n_ctx=1024)
    keep_prefix(damaged)
    assert _answer(damaged, prompt) == fresh


def test_warm_up_writes_the_prefix_state_and_the_next_start_reads_it(home, own_cache, library):
    from localrag.core.chat.engine import ChatEngine

    path = ensure_fast_copy(model_files.default_gguf())
    ChatEngine(library, LocalLLM(path, n_ctx=2048)).warm_up()
    assert len(list(paths.cache_dir().glob("prefix-state.*.bin"))) == 1

    llm = LocalLLM(path, n_ctx=2048)

    def evaluate(*args):
        raise AssertionError("the prefix was evaluated instead of read from disk")

    llm._evaluate = evaluate  # type: ignore[method-assign]
    ChatEngine(library, llm).warm_up()
    assert llm.llama.n_tokens == len(keep_prefix(llm))


def _prefix_messages() -> list[dict[str, str]]:
    from localrag.core.chat import prompts

    return prompts.prefix_messages(prompts.GROUNDED)[:-1]
