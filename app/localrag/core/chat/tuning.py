"""Per-machine tuning of the local model, measured once: which weight type, attention kernel and batch size
process a grounded prompt soonest on this CPU.

What is fastest depends on the CPU (docs/benchmarks.md, "Chat"): with AMX kernels Q8_0 weights win; on an
AVX-512 CPU with BF16 instructions BF16 weights may; on an AVX2 laptop, neither BF16 nor the AMX path exists.
So the first load of a model on a machine measures it in a child process (``machine_check``): the weight types
the bundled model can be re-typed to here (``fastcopy``) with the app's attention and batch settings, then the
fastest of them with flash attention flipped and with smaller batches. Each configuration evaluates a
``PROMPT_TOKENS`` prompt and generates ``GEN_TOKENS``; the child starts no new measurement after ``BUDGET_S``.
The winner needs the least CPU time for the prompt among those that generate at least ``MIN_TOKENS_PER_S``;
near-ties go to the faster generator (``choose``). The answer
is remembered in the cache folder, keyed by the llama.cpp build, the CPU kernels, the model, the threads and
the candidates, so a new build, CPU variant or model measures again. A child that fails leaves the app's
defaults (remembered too, so a start is never slowed twice).
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from localrag.core.chat import machine_check
from localrag.core.progress import CancelToken

log = logging.getLogger("localrag.llm.tuning")

VERSION = 2  # of the measurement: a change measures again
BUDGET_S = 15.0  # no new measurement starts after this; the last one ends a few seconds later
BUDGET_ENV = "LOCALRAG_TUNING_BUDGET_S"
PROMPT_TOKENS = 768
GEN_TOKENS = 16
MIN_TOKENS_PER_S = 20.0
# Prompt costs this close are the same within the noise of one measurement; generation speed decides then.
TIE = 0.08
_TIMEOUT_S = 120.0


@dataclass
class Tuning:
    """How the model runs here.

    Attributes:
        weights: the fast-copy weight type (``q8_0``, ``bf16``, ``f16``), or '' for the model file as it is.
        flash_attn, n_ubatch: attention kernel and physical batch size.
        measured: every configuration measured (weights, flash_attn, n_ubatch, prompt_s, tokens_per_s).
        seconds: how long the measurement took.
        note: why the defaults are used, if the measurement failed.
    """

    weights: str
    flash_attn: bool
    n_ubatch: int
    measured: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    note: str = ""

    @property
    def best(self) -> dict[str, Any] | None:
        for m in self.measured:
            if (m["weights"], m["flash_attn"], m["n_ubatch"]) == (
                self.weights,
                self.flash_attn,
                self.n_ubatch,
            ):
                return m
        return None

    @property
    def setup(self) -> str:
        """The configuration alone: ``bf16 weights, flash attention, batches of 512``."""
        return (
            f"{self.weights or 'weights as in the file'}{' weights' if self.weights else ''}, "
            f"{'flash attention' if self.flash_attn else 'plain attention'}, batches of {self.n_ubatch}"
        )

    def describe(self) -> str:
        """One line for people: ``bf16 weights, flash attention, batches of 512 (measured in 14 s: ...)``."""
        text = self.setup
        best = self.best
        if best is not None:
            text += (
                f" (measured once in {self.seconds:.0f} s: the prompt took {best['prompt_cpu_s']:.2f} CPU-s "
                f"for {best['prompt_tokens']} tokens; generation {best['tokens_per_cpu_s']:.0f} tokens "
                "per CPU-s)"
            )
        elif self.note:
            text += f" (defaults: {self.note})"
        return text

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def candidate_weights(features: tuple[str, ...] | set[str]) -> list[str]:
    """The weight types worth measuring with these CPU kernels, the app's default first: BF16 only where the
    kernels have BF16 instructions (elsewhere it is converted in software and slow)."""
    from localrag.core.chat.fastcopy import fast_copy_type

    weights = [fast_copy_type(), "f16"]
    if "AVX512_BF16" in features or "AMX_BF16" in features:
        weights.append("bf16")
    return list(dict.fromkeys(weights))


def budget_s() -> float:
    """Seconds the measurement may take: ``BUDGET_S``, or ``LOCALRAG_TUNING_BUDGET_S`` (0: measure only the
    default weight type, which then wins)."""
    try:
        return max(0.0, float(os.environ.get(BUDGET_ENV, BUDGET_S)))
    except ValueError:
        return BUDGET_S


def _name(source: Path, weights: list[str], threads: int, defaults: Tuning) -> str:
    parts = [
        VERSION,
        threads,
        defaults.flash_attn,
        defaults.n_ubatch,
        budget_s(),
        machine_check.model_part(source),
    ]
    return f"tuning.{machine_check.key(*parts, *weights)}.json"


def remembered(source: Path, weights: list[str], *, threads: int, defaults: Tuning) -> Tuning | None:
    """The tuning ``tune`` measured for these arguments, if it has (nothing is measured here)."""
    name = _name(source, weights, threads, defaults)
    text = machine_check.recall(name)
    if text:
        try:
            known = Tuning(**json.loads(text))
        except (TypeError, ValueError):
            log.debug("ignoring an unreadable %s", name)
            return None
        if known.best is None:  # the measurement failed: the defaults, as remembered
            return known
        chosen = choose(known.measured, defaults)  # by today's rule, from what was measured then
        chosen.seconds, chosen.note = known.seconds, known.note
        return chosen
    return None


def tune(
    source: Path,
    weights: list[str],
    *,
    threads: int,
    defaults: Tuning,
    cancel: CancelToken | None = None,
) -> Tuning:
    """The tuning of the model ``source`` among these weight types (the default first), measured in a child
    process the first time and remembered. The child makes the fast copies it measures (``fastcopy``) and
    checks their extra buffers (``extra_buffers``) as it goes.

    Raises:
        Cancelled: ``cancel`` was set (the child is ended; nothing is remembered).
    """
    budget = budget_s()
    name = _name(source, weights, threads, defaults)
    known = remembered(source, weights, threads=threads, defaults=defaults)
    if known is not None:
        return known
    plan = {
        "source": str(source),
        "weights": weights,
        "threads": threads,
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
    result = choose(measured, defaults)
    result.seconds = round(time.monotonic() - started, 1)
    if result.best is None:
        result.note = note or "nothing could be measured"
        log.warning("tuning the language model: %s; using the defaults", result.note)
    else:
        log.info("language model tuned for this machine: %s", result.describe())
    machine_check.remember(name, result.to_json())
    return result


def choose(measured: list[dict[str, Any]], defaults: Tuning) -> Tuning:
    """The configuration whose prompt needs the least CPU time per token, among those that would generate at
    least ``MIN_TOKENS_PER_S`` on an otherwise idle machine (all of them if none would); of configurations
    within ``TIE`` of the least, the one that generates fastest. ``defaults`` when nothing was measured.

    CPU time, not wall-clock time: the first start may well happen while the machine is busy (installing,
    indexing), and other programs stretch the wall-clock time of each configuration by chance, while the CPU
    time the model itself needs stays about the same. On an idle machine its threads run side by side, so
    tokens per CPU-second times the threads approximate the tokens per second a person would see.
    """
    ok = [m for m in measured if m.get("prompt_cpu_s", 0) > 0 and m.get("tokens_per_cpu_s") is not None]
    if not ok:
        return Tuning(defaults.weights, defaults.flash_attn, defaults.n_ubatch, measured=measured)

    def idle_tokens_per_s(m: dict[str, Any]) -> float:
        return float(m["tokens_per_cpu_s"]) * max(1, int(m.get("threads", 1)))

    def cost(m: dict[str, Any]) -> float:
        return float(m["prompt_cpu_s"]) / int(m["prompt_tokens"])

    fast_enough = [m for m in ok if idle_tokens_per_s(m) >= MIN_TOKENS_PER_S] or ok
    least = min(cost(m) for m in fast_enough)
    best = max((m for m in fast_enough if cost(m) <= least * (1 + TIE)), key=idle_tokens_per_s)
    return Tuning(best["weights"], best["flash_attn"], best["n_ubatch"], measured=measured)


def _command(plan: dict[str, Any]) -> list[str]:
    return [sys.executable, "-m", "localrag.core.chat.tuning", json.dumps(plan)]


# -- the child -----------------------------------------------------------------------------------------------


def _prompt_text() -> str:
    """Varied English prose (standard-library documentation), enough for ``PROMPT_TOKENS``."""
    import argparse
    import logging as logging_module
    import subprocess as subprocess_module

    return " ".join(
        " ".join((inspect.getdoc(m) or "").split())
        for m in (argparse, logging_module, subprocess_module, json)
    )


def _measure(path: Path, weights: str, threads: int, extra: bool, flash_attn: bool, n_ubatch: int) -> dict:
    from localrag.core.chat.llm import LocalLLM

    llm = LocalLLM(
        path,
        n_ctx=PROMPT_TOKENS + GEN_TOKENS + 64,
        threads=threads,
        n_ubatch=n_ubatch,
        flash_attn=flash_attn,
        extra_bufts=extra,
    )
    tokens = llm.tokenize(_prompt_text())
    tokens = (tokens * (1 + PROMPT_TOKENS // max(1, len(tokens))))[:PROMPT_TOKENS]
    started, cpu = time.monotonic(), time.process_time()
    llm.llama.eval(tokens)
    prompt_s, prompt_cpu_s = time.monotonic() - started, time.process_time() - cpu
    n = 0
    for n, _token in enumerate(llm.llama.generate(tokens, temp=0.0), 1):
        if n == 1:
            started, cpu = time.monotonic(), time.process_time()
        if n >= GEN_TOKENS:
            break
    gen_s, gen_cpu_s = time.monotonic() - started, time.process_time() - cpu
    return {
        "weights": weights,
        "flash_attn": flash_attn,
        "n_ubatch": n_ubatch,
        "threads": llm.threads,
        "prompt_tokens": len(tokens),
        "prompt_s": round(prompt_s, 4),
        "prompt_cpu_s": round(prompt_cpu_s, 4),
        "tokens_per_s": round((n - 1) / gen_s, 1) if n > 1 and gen_s > 0 else 0.0,
        "tokens_per_cpu_s": round((n - 1) / gen_cpu_s, 1) if n > 1 and gen_cpu_s > 0 else 0.0,
    }


def _run(plan: dict[str, Any]) -> None:
    """Measure the plan's configurations, printing one JSON line each; start none after ``budget_s`` (but
    always measure the first)."""
    from localrag.core.chat.extra_buffers import extra_buffers_work
    from localrag.core.chat.fastcopy import ensure_fast_copy
    from localrag.core.errors import ModelMissing

    deadline = time.monotonic() + plan["budget_s"]
    source, threads, fa, ub = Path(plan["source"]), plan["threads"], plan["flash_attn"], plan["n_ubatch"]
    models: dict[str, tuple[Path, bool]] = {}
    results: list[dict[str, Any]] = []

    def run(weights: str, flash_attn: bool, n_ubatch: int) -> None:
        if results and time.monotonic() > deadline:
            return
        if weights not in models:
            try:
                copy = ensure_fast_copy(source, weights, threads=threads)
            except ModelMissing as exc:
                print(json.dumps({"weights": weights, "error": exc.message}), flush=True)
                return
            models[weights] = copy, extra_buffers_work(copy, threads=threads)
        path, extra = models[weights]
        result = _measure(path, weights, threads, extra, flash_attn, n_ubatch)
        results.append(result)
        print(json.dumps(result), flush=True)

    for weights in plan["weights"]:
        run(weights, fa, ub)
    if results:
        best = min(results, key=lambda r: r["prompt_cpu_s"])["weights"]
        run(best, not fa, ub)
        run(best, fa, ub // 2)


if __name__ == "__main__":
    _run(json.loads(sys.argv[1]))
