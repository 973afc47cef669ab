"""Per-machine tuning of the local model, measured once: which weight type, attention kernel, batch size and
thread counts process a grounded prompt soonest on this CPU.

What is fastest depends on the CPU (docs/benchmarks.md, "Chat"): with AMX kernels Q8_0 weights win; on an
AVX-512 CPU with BF16 instructions BF16 weights may; on an AVX2 laptop, neither BF16 nor the AMX path exists.
So the first load of a model on a machine measures it in a child process (``machine_check``): the weight types
the bundled model can be re-typed to here (``fastcopy``) with the app's attention and batch settings, then the
fastest of them with flash attention flipped and with smaller batches, then the winner with other thread
counts (``thread_candidates``: one per physical core, one fewer). Each configuration evaluates a
``PROMPT_TOKENS`` prompt and generates ``GEN_TOKENS``; the child starts no new measurement after ``BUDGET_S``.
The winner needs the least CPU time for the prompt among those that generate at least ``MIN_TOKENS_PER_S``;
near-ties go to the faster generator (``choose``). Thread counts are compared by wall-clock time instead (CPU
time cannot tell whether threads ran side by side), and only when the machine was otherwise idle meanwhile:
another count replaces the one per core only when it is faster by more than ``TIE``. The answer is remembered
in the cache folder, keyed by the llama.cpp build, the CPU kernels, the model, the threads and the candidates,
so a new build, CPU variant or model measures again. A child that fails leaves the app's defaults (remembered
too, so a start is never slowed twice).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localrag.core.llm import machine_check
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.llm.tuning")

VERSION = 4  # of the measurement: a change measures again
BUDGET_S = 15.0  # no new measurement starts after this; the last one ends a few seconds later
BUDGET_ENV = "LOCALRAG_TUNING_BUDGET_S"
PROMPT_TOKENS = 768
GEN_TOKENS = 16
MIN_TOKENS_PER_S = 20.0
# Prompt costs this close are the same within the noise of one measurement; generation speed decides then.
# Another thread count must be faster than this to replace the default.
TIE = 0.08
# Other work keeping more cores busy than this during a measurement makes its wall-clock times a matter of
# chance: thread counts measured then are not compared.
BUSY_CORES = 0.25
MAX_OTHER_THREADS = 2
_TIMEOUT_S = 120.0


@dataclass
class Tuning:
    """How the model runs here.

    Attributes:
        weights: the fast-copy weight type (``q8_0``, ``bf16``, ``f16``), or '' for the model file as it is.
        flash_attn, n_ubatch: attention kernel and physical batch size.
        threads, threads_batch: CPU threads for generation and for the prompt (0: the default, one per core,
            used whenever both are 0; else both are set and ``threads <= threads_batch``).
        measured: every configuration measured (weights, flash_attn, n_ubatch, threads, prompt_s,
            tokens_per_s, busy_cores: how many cores other work kept busy meanwhile, ...).
        seconds: how long the measurement took.
        note: why the defaults are used, if the measurement failed; or why thread counts were not compared.
    """

    weights: str
    flash_attn: bool
    n_ubatch: int
    threads: int = 0
    threads_batch: int = 0
    measured: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    @property
    def best(self) -> dict[str, Any] | None:
        """The measurement of the chosen configuration with the default threads (the first measured)."""
        return next(iter(self._of_setup()), None)

    def _of_setup(self) -> list[dict[str, Any]]:
        setup = (self.weights, self.flash_attn, self.n_ubatch)
        return [m for m in self.measured if _setup_of(m) == setup]

    @property
    def setup(self) -> str:
        """The configuration alone: ``bf16 weights, flash attention, batches of 512``, and the threads when
        they are not one per core (``…, 2 threads (1 for generation)``)."""
        text = (
            f"{self.weights or 'weights as in the file'}{' weights' if self.weights else ''}, "
            f"{'flash attention' if self.flash_attn else 'plain attention'}, batches of {self.n_ubatch}"
        )
        if self.threads or self.threads_batch:
            batch = self.threads_batch or self.threads
            text += f", {_threads_text(batch)}"
            if (self.threads or batch) != batch:
                text += f" ({self.threads} for generation)"
        return text

    def describe(self) -> str:
        """One line for people: ``bf16 weights, flash attention, batches of 512 (measured in 14 s: ...)``."""
        text = self.setup
        best = self.best
        if best is not None:
            text += (
                f" (measured once in {self.seconds:.0f} s: the prompt took {best['prompt_cpu_s']:.2f} CPU-s "
                f"for {best['prompt_tokens']} tokens; generation {best['tokens_per_cpu_s']:.0f} tokens "
                f"per CPU-s{self._threads_measured(best)}{'; ' + self.note if self.note else ''})"
            )
        elif self.note:
            text += f" (defaults: {self.note})"
        return text

    def _threads_measured(self, best: dict[str, Any]) -> str:
        """What made other thread counts win: ``; 1 thread: 95 tokens/s against 80 with 2``."""
        found = {m.get("threads"): m for m in self._of_setup()}
        text = ""
        gen, batch = found.get(self.threads), found.get(self.threads_batch)
        if batch is not None and batch is not best:
            text += (
                f"; {_threads_text(self.threads_batch)}: the prompt in {batch['prompt_s']:.2f} s against "
                f"{best['prompt_s']:.2f} s with {best['threads']}"
            )
        if gen is not None and gen is not best and gen is not batch:
            text += (
                f"; {_threads_text(self.threads)}: {gen['tokens_per_s']:.0f} tokens/s against "
                f"{best['tokens_per_s']:.0f} with {best['threads']}"
            )
        return text

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def candidate_weights(features: tuple[str, ...] | set[str]) -> list[str]:
    """The weight types worth measuring with these CPU kernels, the app's default first: BF16 only where the
    kernels have BF16 instructions (elsewhere it is converted in software and slow)."""
    from localrag.core.llm.fastcopy import fast_copy_type

    weights = [fast_copy_type(), "f16"]
    if "AVX512_BF16" in features or "AMX_BF16" in features:
        weights.append("bf16")
    return list(dict.fromkeys(weights))


def _setup_of(m: dict[str, Any]) -> tuple[Any, Any, Any]:
    return m.get("weights"), m.get("flash_attn"), m.get("n_ubatch")


def thread_candidates(threads: int) -> list[int]:
    """The thread counts worth measuring against ``threads`` (one per logical CPU), at most
    ``MAX_OTHER_THREADS``: one per physical core where cores run two hardware threads each (the pair shares
    one core's arithmetic units), and one fewer (a core left to the rest of the app and the system; with two
    threads that is one thread, which never waits at a barrier — and the two logical CPUs of a virtual
    machine may be the hardware threads of one core without saying so)."""
    import psutil

    physical = psutil.cpu_count(logical=False) or threads
    found = [physical, threads - 1]
    return [n for n in dict.fromkeys(found) if 1 <= n < threads][:MAX_OTHER_THREADS]


def _threads_text(n: int) -> str:
    return f"{n} thread{'' if n == 1 else 's'}"


def budget_s() -> float:
    """Seconds the measurement may take: ``BUDGET_S``, or ``LOCALRAG_TUNING_BUDGET_S`` (0: measure only the
    default weight type, which then wins)."""
    try:
        return max(0.0, float(os.environ.get(BUDGET_ENV, BUDGET_S)))
    except ValueError:
        return BUDGET_S


def _name(source: Path, weights: list[str], threads: int, defaults: Tuning, other_threads: list[int]) -> str:
    parts = [
        VERSION,
        threads,
        defaults.flash_attn,
        defaults.n_ubatch,
        budget_s(),
        machine_check.model_part(source),
        other_threads,
    ]
    return f"tuning.{machine_check.key(*parts, *weights)}.json"


def remembered(
    source: Path,
    weights: list[str],
    *,
    threads: int,
    defaults: Tuning,
    other_threads: list[int] | None = None,
) -> Tuning | None:
    """The tuning ``tune`` measured for these arguments, if it has (nothing is measured here)."""
    name = _name(source, weights, threads, defaults, other_threads or [])
    text = machine_check.recall(name)
    if text:
        try:
            known = Tuning(**json.loads(text))
        except (TypeError, ValueError):
            log.debug("ignoring an unreadable %s", name)
            return None
        if known.best is None:  # the measurement failed: the defaults, as remembered
            return known
        chosen = choose(known.measured, defaults, threads=threads)  # by today's rule, from what was measured
        chosen.seconds = known.seconds
        return chosen
    return None


def tune(
    source: Path,
    weights: list[str],
    *,
    threads: int,
    defaults: Tuning,
    other_threads: list[int] | None = None,
    cancel: CancelToken | None = None,
) -> Tuning:
    """The tuning of the model ``source`` among these weight types (the default first) with ``threads``, and
    of the winner with ``other_threads`` (``thread_candidates``; none: the threads stay), measured in a child
    process the first time and remembered. The child makes the fast copies it measures (``fastcopy``) and
    checks their extra buffers (``extra_buffers``) as it goes.

    Raises:
        Cancelled: ``cancel`` was set (the child is ended; nothing is remembered).
    """
    budget = budget_s()
    other_threads = list(other_threads or [])[:MAX_OTHER_THREADS]
    name = _name(source, weights, threads, defaults, other_threads)
    known = remembered(source, weights, threads=threads, defaults=defaults, other_threads=other_threads)
    if known is not None:
        return known
    plan = {
        "source": str(source),
        "weights": weights,
        "threads": threads,
        "other_threads": other_threads,
        "flash_attn": defaults.flash_attn,
        "n_ubatch": defaults.n_ubatch,
        "budget_s": budget,
    }
    started = time.monotonic()
    note = ""
    measured: list[dict[str, Any]] = []
    try:
        returncode, stdout = machine_check.run_child(_command(plan), _TIMEOUT_S, cancel)
        for line in stdout.splitlines():
            if line.startswith("{"):
                measured.append(json.loads(line))
        if returncode != 0:
            note = f"the measurement stopped (exit status {returncode})"
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        note = f"the measurement failed ({type(exc).__name__})"
    result = choose(measured, defaults, threads=threads)
    result.seconds = round(time.monotonic() - started, 1)
    if result.best is None:
        result.note = note or "nothing could be measured"
        log.warning("tuning the language model: %s; using the defaults", result.note)
    else:
        log.info("language model tuned for this machine: %s", result.describe())
    machine_check.remember(name, result.to_json())
    return result


def choose(measured: list[dict[str, Any]], defaults: Tuning, *, threads: int) -> Tuning:
    """The configuration whose prompt needs the least CPU time per token with ``threads`` (the default),
    among those that would generate at least ``MIN_TOKENS_PER_S`` on an otherwise idle machine (all of them if
    none would); of configurations within ``TIE`` of the least, the one that generates fastest — batch sizes
    are not told apart by generation, which they do not change: the cheaper prompt's size wins. ``defaults``
    when nothing was measured. Then its thread counts (``choose_threads``).

    CPU time, not wall-clock time: the first start may well happen while the machine is busy (installing,
    indexing), and other programs stretch the wall-clock time of each configuration by chance, while the CPU
    time the model itself needs stays about the same. On an idle machine its threads run side by side, so
    tokens per CPU-second times the threads approximate the tokens per second a person would see.
    """
    ok = [
        m
        for m in measured
        if m.get("prompt_cpu_s", 0) > 0
        and m.get("tokens_per_cpu_s") is not None
        and m.get("threads", threads) == threads
    ]
    if not ok:
        return Tuning(defaults.weights, defaults.flash_attn, defaults.n_ubatch, measured=measured)

    def idle_tokens_per_s(m: dict[str, Any]) -> float:
        return float(m["tokens_per_cpu_s"]) * max(1, int(m.get("threads", 1)))

    def cost(m: dict[str, Any]) -> float:
        return float(m["prompt_cpu_s"]) / int(m["prompt_tokens"])

    fast_enough = [m for m in ok if idle_tokens_per_s(m) >= MIN_TOKENS_PER_S] or ok
    # The batch size changes the prompt's work, not generation's: of the sizes measured with the same weights
    # and attention, the cheapest prompt stands for them (their generation figures differ only by chance).
    cheapest: dict[tuple[Any, Any], dict[str, Any]] = {}
    for m in fast_enough:
        kind = (m.get("weights"), m.get("flash_attn"))
        if kind not in cheapest or cost(m) < cost(cheapest[kind]):
            cheapest[kind] = m
    least = min(cost(m) for m in cheapest.values())
    best = max((m for m in cheapest.values() if cost(m) <= least * (1 + TIE)), key=idle_tokens_per_s)
    chosen = Tuning(best["weights"], best["flash_attn"], best["n_ubatch"], measured=measured)
    others = [
        m
        for m in chosen._of_setup()
        if m.get("threads") != threads and m.get("prompt_s", 0) > 0 and m.get("tokens_per_s") is not None
    ]
    gen, batch, chosen.note = choose_threads(best, others, threads=threads)
    if (gen, batch) != (threads, threads):
        chosen.threads, chosen.threads_batch = gen, batch
    return chosen


def choose_threads(
    base: dict[str, Any], others: list[dict[str, Any]], *, threads: int
) -> tuple[int, int, str]:
    """The threads for generation and for the prompt, from the measurement ``base`` with the default
    ``threads`` and ``others`` of the same configuration with other counts, and a note when some could not be
    compared.

    By wall-clock time: generation by tokens per second, the prompt by its seconds; another count replaces
    the default only when it is faster by more than ``TIE``, and only when other work kept at most
    ``BUSY_CORES`` busy during both measurements (else the comparison says more about that work). The prompt's
    count must generate at least ``MIN_TOKENS_PER_S`` (or as fast as the default), and generation runs on no
    more threads than the prompt.
    """

    def busy(m: dict[str, Any]) -> float:
        return float(m.get("busy_cores", 0.0))

    quiet = [m for m in others if busy(m) <= BUSY_CORES] if busy(base) <= BUSY_CORES else []
    note = ""
    if len(quiet) < len(others):
        ignored = sorted(int(m["threads"]) for m in others if m not in quiet)
        most = max(busy(m) for m in [base, *others])
        counts = " and ".join(str(n) for n in ignored) + (" thread" if ignored == [1] else " threads")
        note = (
            f"{counts} not compared with {threads}: other work kept {most:.1f} cores busy while they were "
            "measured"
        )
    gen = batch = threads
    faster = [m for m in quiet if float(m["tokens_per_s"]) > float(base["tokens_per_s"]) * (1 + TIE)]
    if faster:
        gen = int(max(faster, key=lambda m: float(m["tokens_per_s"]))["threads"])
    enough = min(MIN_TOKENS_PER_S, float(base["tokens_per_s"]))
    faster = [
        m
        for m in quiet
        if float(m["prompt_s"]) * (1 + TIE) < float(base["prompt_s"]) and float(m["tokens_per_s"]) >= enough
    ]
    if faster:
        batch = int(min(faster, key=lambda m: float(m["prompt_s"]))["threads"])
    return min(gen, batch), batch, note


def _command(plan: dict[str, Any]) -> list[str]:
    return [sys.executable, "-m", "localrag.core.llm.probes", "tune", json.dumps(plan)]
