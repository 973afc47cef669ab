"""Per-machine tuning, measured once in a child process and remembered, and the fixed prompt prefix's state
kept on disk: real model, real llama.cpp, real child processes."""

from __future__ import annotations

import sys

import pytest

from localrag.core import paths
from localrag.core.answer.model_setup import keep_prefix
from localrag.core.config import Settings
from localrag.core.embed import model_files
from localrag.core.llm import machine_check, tuning
from localrag.core.llm.fastcopy import ensure_fast_copy, fast_copy_path, fast_copy_type
from localrag.core.llm.llm import LocalLLM, load_llm, tuning_for

QUESTION = {
    "role": "user",
    "content": "Sources:\n\n[1] The night train leaves at 22:10.\n\nWhen does it leave?",
}


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALRAG_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_first_load_measures_once_and_loads_the_winner(home, own_cache, monkeypatch):
    # Every configuration is measured (six here, about 12 s on an idle machine; the other thread counts last),
    # however long a busy machine takes: no budget cuts the measurement short, and the child is waited for up
    # to the test's own time limit.
    monkeypatch.setenv(tuning.BUDGET_ENV, "100000")
    monkeypatch.setattr(tuning, "_TIMEOUT_S", 280.0)
    source = model_files.default_gguf()
    settings = Settings(n_ctx=512)
    threads = settings.thread_count
    assert tuning_for(settings) is None
    llm = load_llm(settings)
    tuned = llm.tuning
    assert tuned is not None and (not tuned.note or "not compared" in tuned.note)  # only a busy machine's
    measured = [m for m in tuned.measured if "prompt_s" in m]
    assert len(measured) >= 2 and measured[0]["weights"] == fast_copy_type()
    assert all(m["prompt_cpu_s"] > 0 and m["prompt_tokens"] == tuning.PROMPT_TOKENS for m in measured)
    assert all(m["busy_cores"] >= 0 for m in measured)
    # The winner is the measured configuration whose prompt took least CPU time, among those fast enough.
    winner = tuning.choose(measured, tuned, threads=threads)
    assert (tuned.weights, tuned.flash_attn, tuned.n_ubatch) == (
        winner.weights,
        winner.flash_attn,
        winner.n_ubatch,
    )
    # ... then measured again with the other thread counts, and run with the faster ones (or one per core).
    others = tuning.thread_candidates(threads)
    again_with = [m for m in measured if m["threads"] != threads]
    assert [m["threads"] for m in again_with] == others
    assert all(
        (m["weights"], m["flash_attn"], m["n_ubatch"]) == (tuned.weights, tuned.flash_attn, tuned.n_ubatch)
        for m in again_with
    )
    assert (tuned.threads, tuned.threads_batch) == (winner.threads, winner.threads_batch)
    assert (llm.threads, llm.threads_batch) == (tuned.threads or threads, tuned.threads_batch or threads)
    assert llm.threads <= llm.threads_batch
    assert ("thread" in tuned.setup) == bool(tuned.threads)
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


def test_threads_the_user_set_are_used_and_no_others_measured(home, own_cache, monkeypatch):
    plans = []

    def crash(plan):
        plans.append(plan)
        return [sys.executable, "-c", "raise SystemExit(3)"]

    monkeypatch.setattr(tuning, "_command", crash)
    llm = load_llm(Settings(n_ctx=512, threads=1))
    assert [p["other_threads"] for p in plans] == [[]]
    assert (llm.threads, llm.threads_batch) == (1, 1)
    load_llm(Settings(n_ctx=512))
    assert plans[1]["other_threads"] == tuning.thread_candidates(Settings().thread_count)


# -- choosing, from measurements written here ----------------------------------------------------------------

DEFAULTS = tuning.Tuning("q8_0", True, 512)


def _measured(
    threads: int,
    prompt_s: float,
    tokens_per_s: float,
    busy: float = 0.0,
    weights: str = "q8_0",
    n_ubatch: int = 512,
):
    return {
        "weights": weights,
        "flash_attn": True,
        "n_ubatch": n_ubatch,
        "threads": threads,
        "prompt_tokens": 768,
        "prompt_s": prompt_s,
        "prompt_cpu_s": prompt_s * threads,
        "tokens_per_s": tokens_per_s,
        "tokens_per_cpu_s": tokens_per_s / threads,
        "busy_cores": busy,
    }


def test_a_thread_count_faster_by_more_than_a_tie_wins():
    prompt = tuning.choose([_measured(4, 1.0, 50), _measured(3, 0.8, 60)], DEFAULTS, threads=4)
    assert (prompt.threads, prompt.threads_batch) == (3, 3)
    assert prompt.setup.endswith("batches of 512, 3 threads")
    assert "3 threads: the prompt in 0.80 s against 1.00 s with 4" in prompt.describe()

    generation = tuning.choose([_measured(2, 1.0, 50), _measured(1, 1.9, 70)], DEFAULTS, threads=2)
    assert (generation.threads, generation.threads_batch) == (1, 2)
    assert generation.setup == "q8_0 weights, flash attention, batches of 512, 2 threads (1 for generation)"
    assert "1 thread: 70 tokens/s against 50 with 2" in generation.describe()


def test_within_a_tie_the_threads_stay_one_per_core():
    close = 1 + tuning.TIE / 2
    chosen = tuning.choose([_measured(4, 1.0, 50), _measured(3, 1 / close, 50 * close)], DEFAULTS, threads=4)
    assert (chosen.threads, chosen.threads_batch, chosen.note) == (0, 0, "")
    assert "thread" not in chosen.setup and "thread" not in chosen.describe()


def test_thread_counts_measured_while_other_work_ran_are_not_compared():
    busy = tuning.BUSY_CORES + 0.35
    chosen = tuning.choose([_measured(2, 1.0, 50), _measured(1, 0.5, 90, busy=busy)], DEFAULTS, threads=2)
    assert (chosen.threads, chosen.threads_batch) == (0, 0)
    assert chosen.note == (
        "1 thread not compared with 2: other work kept 0.6 cores busy while they were measured"
    )
    assert chosen.note in chosen.describe()
    # The default's own measurement counts too; a quiet one among several is still compared.
    base_busy = [_measured(4, 1.0, 50, busy=busy), _measured(3, 0.5, 90)]
    assert tuning.choose(base_busy, DEFAULTS, threads=4).threads == 0
    mixed = [_measured(4, 1.0, 50), _measured(2, 0.5, 90, busy=busy), _measured(3, 0.7, 60)]
    chosen = tuning.choose(mixed, DEFAULTS, threads=4)
    assert (chosen.threads, chosen.threads_batch) == (3, 3) and "2 threads not compared" in chosen.note


def test_generation_never_runs_on_more_threads_than_the_prompt():
    # The prompt is faster on one thread, generation on two: both run on one.
    chosen = tuning.choose([_measured(2, 1.0, 50), _measured(1, 0.8, 45)], DEFAULTS, threads=2)
    assert (chosen.threads, chosen.threads_batch) == (1, 1)
    # A prompt count that would generate too slowly is not taken.
    slow = tuning.MIN_TOKENS_PER_S - 5
    chosen = tuning.choose([_measured(2, 1.0, 50), _measured(1, 0.8, slow)], DEFAULTS, threads=2)
    assert (chosen.threads, chosen.threads_batch) == (0, 0)


def test_other_thread_counts_do_not_take_part_in_the_choice_of_weights():
    # One thread needs less CPU time (no waiting at barriers): the weights are still compared at one per core.
    measured = [_measured(2, 1.0, 50), _measured(2, 0.8, 45, weights="f16"), _measured(1, 1.2, 40)]
    chosen = tuning.choose(measured, DEFAULTS, threads=2)
    assert chosen.weights == "f16" and chosen.best is measured[1] and chosen.threads == 0


def test_of_two_batch_sizes_the_cheaper_prompt_wins_whatever_generation_measured():
    """Generation does not depend on the batch size: a smaller batch that generated faster by chance in its
    measurement does not win against a cheaper prompt within the tie, while another weight type that really
    generates faster does."""
    measured = [_measured(2, 1.00, 50), _measured(2, 1.03, 60, n_ubatch=256)]
    chosen = tuning.choose(measured, DEFAULTS, threads=2)
    assert chosen.n_ubatch == 512 and chosen.best is measured[0]
    measured = [_measured(2, 1.00, 50), _measured(2, 0.97, 45, n_ubatch=256)]
    assert tuning.choose(measured, DEFAULTS, threads=2).n_ubatch == 256
    measured = [_measured(2, 1.00, 50), _measured(2, 1.03, 60, weights="f16")]
    assert tuning.choose(measured, DEFAULTS, threads=2).weights == "f16"


def test_thread_candidates(monkeypatch):
    import psutil

    def machine(physical):
        monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: physical)

    machine(8)
    assert tuning.thread_candidates(8) == [7]
    assert tuning.thread_candidates(16) == [8, 15]  # two hardware threads per core
    machine(1)
    assert tuning.thread_candidates(2) == [1]  # one core, two hardware threads: one measurement
    assert tuning.thread_candidates(1) == []
    machine(None)
    assert tuning.thread_candidates(2) == [1]


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
    from localrag.core.llm import kept_state

    for n in range(kept_state.KEPT_STATES + 2):
        extra = LocalLLM(path, n_ctx=512 + 256 * n)
        keep_prefix(extra)
        extra.prime(keep_prefix(extra))
    assert len(list(paths.cache_dir().glob("prefix-state.*.bin"))) == kept_state.KEPT_STATES

    # A damaged file is not used: the prefix is evaluated again and the answer is the same.
    for state in paths.cache_dir().glob("prefix-state.*.bin"):
        state.write_bytes(state.read_bytes()[:100])
    damaged = LocalLLM(path, n_ctx=1024)
    keep_prefix(damaged)
    assert _answer(damaged, prompt) == fresh


def test_warm_up_writes_the_prefix_state_and_the_next_start_reads_it(home, own_cache, library):
    from localrag.core.answer.engine import ChatEngine

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
    from localrag.core.answer import prompts

    return prompts.prefix_messages(prompts.GROUNDED)[:-1]
