"""What runs in the child processes that check this machine (``machine_check.run_child``): whether llama.cpp's
extra weight buffers work (``extra_buffers``), and the tuning's measurements (``tuning``). A crash here ends
only the child.

    python -m localrag.core.llm.probes extra-buffers MODEL THREADS
    python -m localrag.core.llm.probes tune PLAN_JSON
"""

from __future__ import annotations

import inspect
import json
import sys
import time
from pathlib import Path
from typing import Any

from localrag.core.cores import busy_cpu_seconds
from localrag.core.llm import extra_buffers, tuning
from localrag.core.llm.llm import LocalLLM


def _probe(model: Path, threads: int) -> None:
    """Load ``model`` with extra buffers and decode one batch; print ``ok`` if the process survives."""
    llm = LocalLLM(model, n_ctx=512, threads=threads, extra_bufts=True)
    tokens = llm.tokenize("The quick brown fox jumps over the lazy dog. " * 16)[: extra_buffers.PROBE_TOKENS]
    llm.llama.eval(tokens)
    print("ok", flush=True)


def _prompt_text() -> str:
    """Varied English prose (standard-library documentation), enough for ``tuning.PROMPT_TOKENS``."""
    import argparse
    import logging as logging_module
    import subprocess as subprocess_module

    return " ".join(
        " ".join((inspect.getdoc(m) or "").split())
        for m in (argparse, logging_module, subprocess_module, json)
    )


def _measure(path: Path, weights: str, threads: int, extra: bool, flash_attn: bool, n_ubatch: int) -> dict:
    """One configuration's figures; ``busy_cores``: how many cores other work kept busy meanwhile (the whole
    system's busy CPU time less this process's, over the wall-clock time of the prompt and the generation)."""
    llm = LocalLLM(
        path,
        n_ctx=tuning.PROMPT_TOKENS + tuning.GEN_TOKENS + 64,
        threads=threads,
        n_ubatch=n_ubatch,
        flash_attn=flash_attn,
        extra_bufts=extra,
    )
    tokens = llm.tokenize(_prompt_text())
    tokens = (tokens * (1 + tuning.PROMPT_TOKENS // max(1, len(tokens))))[: tuning.PROMPT_TOKENS]
    window = time.monotonic(), time.process_time(), busy_cpu_seconds()
    started, cpu = window[0], window[1]
    llm.llama.eval(tokens)
    prompt_s, prompt_cpu_s = time.monotonic() - started, time.process_time() - cpu
    n = 0
    for n, _token in enumerate(llm.llama.generate(tokens, temp=0.0), 1):
        if n == 1:
            started, cpu = time.monotonic(), time.process_time()
        if n >= tuning.GEN_TOKENS:
            break
    gen_s, gen_cpu_s = time.monotonic() - started, time.process_time() - cpu
    own_s = time.process_time() - window[1]
    other_s = busy_cpu_seconds() - window[2] - own_s
    wall_s = time.monotonic() - window[0]
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
        "busy_cores": round(max(0.0, other_s / wall_s), 2) if wall_s > 0 else 0.0,
    }


def _run(plan: dict[str, Any]) -> None:
    """Measure the plan's configurations, printing one JSON line each; start none after ``budget_s`` (but
    always measure the first). The thread counts last: the configuration ``choose`` picks from the rest, with
    each of ``other_threads``."""
    from localrag.core.errors import ModelMissing
    from localrag.core.llm.fastcopy import ensure_fast_copy

    deadline = time.monotonic() + plan["budget_s"]
    source, threads, fa, ub = Path(plan["source"]), plan["threads"], plan["flash_attn"], plan["n_ubatch"]
    models: dict[str, tuple[Path, bool]] = {}
    results: list[dict[str, Any]] = []

    def run(weights: str, flash_attn: bool, n_ubatch: int, n_threads: int = threads) -> None:
        if results and time.monotonic() > deadline:
            return
        if weights not in models:
            try:
                copy = ensure_fast_copy(source, weights, threads=threads)
            except ModelMissing as exc:
                print(json.dumps({"weights": weights, "error": exc.message}), flush=True)
                return
            models[weights] = copy, extra_buffers.extra_buffers_work(copy, threads=threads)
        path, extra = models[weights]
        result = _measure(path, weights, n_threads, extra, flash_attn, n_ubatch)
        results.append(result)
        print(json.dumps(result), flush=True)

    for weights in plan["weights"]:
        run(weights, fa, ub)
    if results:
        best = min(results, key=lambda r: r["prompt_cpu_s"])["weights"]
        run(best, not fa, ub)
        run(best, fa, ub // 2)
        chosen = tuning.choose(results, tuning.Tuning(plan["weights"][0], fa, ub), threads=threads)
        for n in plan.get("other_threads", [])[: tuning.MAX_OTHER_THREADS]:
            run(chosen.weights, chosen.flash_attn, chosen.n_ubatch, n)


if __name__ == "__main__":
    if sys.argv[1] == "extra-buffers":
        _probe(Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    elif sys.argv[1] == "tune":
        _run(json.loads(sys.argv[2]))
