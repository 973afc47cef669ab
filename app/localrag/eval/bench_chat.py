"""``local-rag bench chat [--sweep] [--variant NAME ...] [--rounds N] [--json]``: time to first token and
tokens/s of the local LLM.

The prompt is a grounded prompt of 1,200 tokens (``PROMPT_TOKENS``) built by the real prompt builder: the
system prompt, the worked example, eight numbered sources (prose from the Python standard library's
documentation, so the text is fixed for a given Python), and a question. Each round, in a fresh model:

- **cold**: the first prompt on a freshly loaded model, nothing cached;
- **warm**: a second question with other sources, as in a chat; the system prompt and the worked example are
  reused from the KV cache, the rest is processed;
- **tokens/s**: the answer to the warm prompt, up to ``GEN_TOKENS`` tokens;
- **reword**: after the warm question, the prompt the app sends when the quoted sources lead and the model
  only rewords them: the fixed prefix from the KV cache, then two runs of quoted sentences and the question
  (its tokens, and how many were new, are reported);
- **prepared**: the first question again after its prompt was evaluated during a pause in typing, as the app
  does (``ChatEngine.prepare``) when the question is then sent as typed;
- **restart**: the first question on a freshly loaded model that starts, as the app's first question after a
  start and every ``local-rag ask`` do, from the fixed prefix's state saved in the cache folder
  (``LocalLLM.keep_prefix``).

Time to first token is measured from the call to the first streamed piece (prompt processing and the first
sample); retrieval (tens of milliseconds, ``bench retrieval``) and the model load (reported apart) are not in
it. The CPU seconds the process spent until then (all its threads) are reported too: on a busy machine
wall-clock times mostly measure the other work, while CPU seconds divided by the threads approximate an idle
machine.

Without ``--sweep`` the configuration is the app's own (``load_llm`` with the settings), on the CPU kernels
the app picks for this CPU. ``--variant`` runs the app's configuration on the named variant of llama.cpp's CPU
kernels (``haswell`` for AVX2, ``zen4`` for AVX-512 with VNNI and BF16 but no AMX...; ``best`` for the app's
choice), each in its own process, as ``LOCALRAG_CPU_VARIANT`` does (``core/llm/backends.py``). ``--sweep``
runs a matrix of weight types, thread counts, batch sizes, flash attention and OpenMP wait policies, each in
its own process (a crash in one configuration — llama.cpp's repacked kernels crash on some types — is
recorded, not fatal). The machine's load average is reported with every figure: other work on the cores
slows everything down.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

# Imported first: the chat package sets llama.cpp's OpenMP wait policy, which must happen before llama_cpp
# loads.
from localrag.core.llm import fastcopy, openmp
from localrag.core.llm import llm as llm_mod
from localrag.core.llm.backends import VARIANT_ENV, cpu_backend
from localrag.eval.machine import cpu_flags

PROMPT_TOKENS = 1200
GEN_TOKENS = 64
N_CTX = 2048
# A person takes a moment between questions; the model's thread choice (``cores.CoreWatch``) looks at the
# machine then.
QUESTION_PAUSE_S = 1.0
QUESTIONS = (
    "How do I parse command-line options and show a help message?",
    "Explain in detail how log records are created, filtered and formatted.",
)
# The quoted sentences of a rewording: two runs of three sentences (``evidence.MAX_SPANS``, ``MAX_RUN``).
REWORD_SPANS, REWORD_SENTENCES, REWORD_WORDS = 2, 3, 60
# Words added to a question to make the prompt exactly PROMPT_TOKENS long.
DETAIL = "Please give every step and every option that the sources mention, with examples."
# Modules whose documentation gives the sources' text.
DOC_MODULES = (
    "argparse",
    "logging",
    "json",
    "pathlib",
    "csv",
    "sqlite3",
    "http.client",
    "email",
    "unittest",
    "zipfile",
    "subprocess",
    "textwrap",
    "difflib",
    "datetime",
    "heapq",
    "shutil",
)


@dataclass
class BenchConfig:
    """One way of running the model. ``weights``: ``app`` (what the app loads), ``original``, or a fast-copy
    type (``bf16``, ``f16``, ``q8_0``); other fields left at their defaults mean the app's own choice."""

    weights: str = "app"
    threads: int = 0  # 0: the app's default (one per core), and so on for the fields below
    threads_batch: int = 0
    n_ubatch: int = 0
    flash_attn: bool | None = None
    extra_bufts: bool = False
    omp_wait_policy: str = ""
    variant: str = ""  # of llama.cpp's CPU kernels ('' or "best": the app's choice)
    label: str = ""

    @property
    def is_app(self) -> bool:
        return self.weights == "app" and not any(
            (self.threads, self.threads_batch, self.n_ubatch, self.flash_attn is not None, self.extra_bufts)
        )

    def name(self) -> str:
        if self.label:
            return self.label
        if self.is_app and self.variant:
            return f"app on {self.variant}"
        parts = [self.weights, f"t{self.threads or 'auto'}"]
        if self.threads_batch:
            parts.append(f"tb{self.threads_batch}")
        parts.append(f"ub{self.n_ubatch or llm_mod.N_UBATCH}")
        fa = llm_mod.FLASH_ATTN if self.flash_attn is None else self.flash_attn
        parts.append("fa" if fa else "no-fa")
        if self.extra_bufts:
            parts.append("extra-bufts")
        if self.omp_wait_policy:
            parts.append(f"omp-{self.omp_wait_policy.lower()}")
        if self.variant:
            parts.append(f"on {self.variant}")
        return " ".join(parts)


@dataclass
class RoundResult:
    load_s: float
    cold_ttft_s: float
    warm_ttft_s: float
    cold_cpu_s: float  # CPU seconds of all threads until the first token
    warm_cpu_s: float
    prepared_ttft_s: float  # the question's prompt evaluated while it was typed
    reword_ttft_s: float  # the prompt of a rewording of the quoted sentences, after the warm question
    reword_cpu_s: float
    reword_prompt_tokens: int
    reword_new_tokens: int  # of them, those not in the KV cache
    restart_ttft_s: float  # the first question with the fixed prefix's state read from disk
    restart_cached_tokens: int
    cached_tokens: int
    tokens_per_s: float
    tokens: int
    prompt_tokens: list[int] = field(default_factory=list)
    extra_bufts: bool = False
    threads: list[int] = field(default_factory=list)  # used for the cold and the warm question
    cpu_kernels: str = ""  # the variant of llama.cpp's CPU kernels and what it uses
    tuning: str = ""  # what the per-machine measurement chose, for the app's configuration
    weights: str = ""  # the model file loaded
    flash_attn: bool = False
    n_ubatch: int = 0
    loaded_threads: list[int] = field(default_factory=list)  # loaded with, for generation and the prompt


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chat", help="time to first token and tokens/s for a 1,200-token grounded prompt")
    p.add_argument("--rounds", type=int, default=3, help="fresh-model rounds per configuration (default 3)")
    p.add_argument("--sweep", action="store_true", help="compare weight types, threads, batch sizes and more")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME",
        help="run on this variant of llama.cpp's CPU kernels (haswell, skylakex, icelake, zen4, "
        "sapphirerapids...; best: the app's choice), each in its own process; repeatable",
    )
    p.add_argument("--config", help=argparse.SUPPRESS)  # one configuration as JSON (a --sweep child)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.config:
        config = BenchConfig(**json.loads(args.config))
        print(json.dumps(measure(config, args.rounds)))
        return 0
    report: dict[str, Any] = {"machine": machine(), "prompt_tokens": PROMPT_TOKENS, "gen_tokens": GEN_TOKENS}
    report["conversion_s"] = conversion_time()
    if args.sweep:
        report["configs"] = [run_child(c, args.rounds) for c in sweep_configs()]
    elif args.variant:
        report["configs"] = [run_child(BenchConfig(variant=v), args.rounds) for v in args.variant]
    else:
        report["configs"] = [measure(BenchConfig(), args.rounds)]
    report["machine"]["load_after"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


# -- the prompt ----------------------------------------------------------------------------------------------


def _passages() -> list[tuple[str, str]]:
    """(title, text) pairs of about 150-250 tokens from standard-library documentation."""
    import importlib

    out = []
    for name in DOC_MODULES:
        try:
            doc = inspect.getdoc(importlib.import_module(name)) or ""
        except ImportError:
            continue
        words = " ".join(doc.split()).split(" ")
        for start in range(0, min(len(words), 540), 180):
            chunk = " ".join(words[start : start + 180])
            if len(chunk) > 400:
                out.append((f"{name} documentation", chunk))
    return out


def _results(passages: list[tuple[str, str]]) -> list[Any]:
    from localrag.core.retrieve import Result

    return [
        Result(
            chunk_ids=[i],
            doc_id=i,
            doc_type="pdf",
            title=title,
            path=f"/docs/{title}.pdf",
            page_number=1 + i,
            heading_path="",
            text=text,
            similarity=0.5,
            scores={"vector": 0.5, "bm25": None, "vector_rank": i, "bm25_rank": None, "fused": 0.01},
        )
        for i, (title, text) in enumerate(passages, 1)
    ]


def grounded_prompt(llm: Any, question: str, results: list[Any], target: int = PROMPT_TOKENS) -> Any:
    """The real grounded prompt for ``question``, exactly ``target`` tokens long: the context budget is
    searched (whole sentences), then the question gets a few words of detail to make up the last tokens."""
    from localrag.core.answer.prompts import GROUNDED, build_prompt

    def build(q: str, budget: int) -> Any:
        return build_prompt(
            llm, q, mode=GROUNDED, results=results, max_tokens=GEN_TOKENS, context_tokens=budget
        )

    lo, hi, budget = 0, target, 0
    while lo <= hi:
        mid = (lo + hi) // 2
        if build(question, mid).prompt_tokens <= target:
            budget, lo = mid, mid + 1
        else:
            hi = mid - 1
    best = build(question, budget)
    detail = DETAIL.split() * 4
    for n in range(1, len(detail)):
        p = build(question + " " + " ".join(detail[:n]), budget)
        if p.prompt_tokens > target:
            break
        best = p
    return best


def reword_prompt(llm: Any, passages: list[tuple[str, str]]) -> Any:
    """The prompt the app sends when the quoted sources lead and the model only rewords them
    (``AnswerRun._prompt_for``): the sentences the reader quoted (``REWORD_SPANS`` runs of
    ``REWORD_SENTENCES`` sentences, at most ``REWORD_WORDS`` words, from two passages) in place of the
    passages, and the question."""
    import re

    from localrag.core.answer.prompts import GROUNDED, build_prompt

    quoted = []
    for title, text in passages[:REWORD_SPANS]:
        sentences = [x for x in re.split(r"(?<=[.!?])\s+", text) if x]
        words = " ".join(sentences[:REWORD_SENTENCES]).split()  # documentation's code runs on: cut it
        quoted.append((title, " ".join(words[:REWORD_WORDS])))
    return build_prompt(llm, QUESTIONS[0], mode=GROUNDED, results=_results(quoted), max_tokens=GEN_TOKENS)


# -- measuring -----------------------------------------------------------------------------------------------


def _load(config: BenchConfig) -> Any:
    from localrag.core.config import Settings
    from localrag.core.embed import model_files

    settings = Settings.load()
    settings.n_ctx = N_CTX
    if config.is_app:
        return llm_mod.load_llm(settings)
    source = model_files.default_gguf()
    if config.weights in ("app", "original"):
        path = fastcopy.ensure_fast_copy(source) if config.weights == "app" else source
    else:
        path = fastcopy.ensure_fast_copy(source, config.weights)
    return llm_mod.LocalLLM(
        path,
        source=source,
        n_ctx=N_CTX,
        threads=config.threads or settings.thread_count,
        threads_batch=config.threads_batch,
        n_ubatch=config.n_ubatch or llm_mod.N_UBATCH,
        flash_attn=llm_mod.FLASH_ATTN if config.flash_attn is None else config.flash_attn,
        extra_bufts=config.extra_bufts,
    )


def measure_round(config: BenchConfig) -> RoundResult:
    started = time.monotonic()
    llm = _load(config)
    load_s = time.monotonic() - started
    passages = _passages()
    half = len(passages) // 2
    first = grounded_prompt(llm, QUESTIONS[0], _results(passages[:half]))
    second = grounded_prompt(llm, QUESTIONS[1], _results(passages[half:]))
    time.sleep(QUESTION_PAUSE_S)
    cpu = time.process_time()
    list(llm.stream(first.tokens, max_tokens=1, temperature=0.0))
    cold, cold_cpu = llm.last_stats, time.process_time() - cpu
    threads = [llm._threads_now[1]]
    time.sleep(QUESTION_PAUSE_S)
    cpu = time.process_time()
    warm_cpu = 0.0
    for _ in llm.stream(second.tokens, max_tokens=GEN_TOKENS, temperature=0.0, repeat_penalty=1.0):
        if not warm_cpu:
            warm_cpu = time.process_time() - cpu
    warm = llm.last_stats
    threads.append(llm._threads_now[1])
    # The sources lead and the model rewords the sentences they quoted: a short prompt after the fixed prefix
    # (quoted from the first question's passages: the cache holds the second's).
    reword = reword_prompt(llm, passages[:half])
    time.sleep(QUESTION_PAUSE_S)
    cpu = time.process_time()
    list(llm.stream(reword.tokens, max_tokens=1, temperature=0.0))
    reworded, reword_cpu = llm.last_stats, time.process_time() - cpu
    # Typed, paused, then sent as typed: the app has evaluated the prompt during the pause
    # (``ChatEngine.prepare``).
    llm.prime(first.tokens)
    time.sleep(QUESTION_PAUSE_S)
    list(llm.stream(first.tokens, max_tokens=1, temperature=0.0))
    prepared = llm.last_stats
    # The first question after a restart: a freshly loaded model whose fixed prefix's state comes from the
    # cache folder (``LocalLLM.keep_prefix``; written by this model first if it is not there yet).
    from localrag.core.answer.model_setup import keep_prefix

    prefix = keep_prefix(llm)
    _empty_cache(llm)
    llm.prime(prefix)
    del llm
    llm = _load(config)
    keep_prefix(llm)
    time.sleep(QUESTION_PAUSE_S)
    list(llm.stream(first.tokens, max_tokens=1, temperature=0.0))
    restart = llm.last_stats
    extra = llm.extra_bufts
    kernels = llm.backend.describe()
    tuning = llm.tuning.describe() if llm.tuning is not None else ""
    loaded = (llm.path.name, llm.flash_attn, llm.n_ubatch, [llm.threads, llm.threads_batch])
    del llm
    return RoundResult(
        load_s=load_s,
        cold_ttft_s=cold.prompt_s,
        warm_ttft_s=warm.prompt_s,
        cold_cpu_s=cold_cpu,
        warm_cpu_s=warm_cpu,
        prepared_ttft_s=prepared.prompt_s,
        reword_ttft_s=reworded.prompt_s,
        reword_cpu_s=reword_cpu,
        reword_prompt_tokens=reword.prompt_tokens,
        reword_new_tokens=reword.prompt_tokens - reworded.cached_tokens,
        restart_ttft_s=restart.prompt_s,
        restart_cached_tokens=restart.cached_tokens,
        cached_tokens=warm.cached_tokens,
        tokens_per_s=warm.tokens_per_s,
        tokens=warm.tokens,
        prompt_tokens=[first.prompt_tokens, second.prompt_tokens],
        extra_bufts=extra,
        threads=threads,
        cpu_kernels=kernels,
        tuning=tuning,
        weights=loaded[0],
        flash_attn=loaded[1],
        n_ubatch=loaded[2],
        loaded_threads=loaded[3],
    )


def _empty_cache(llm: Any) -> None:
    llm.llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    llm.llama.n_tokens = 0


def measure(config: BenchConfig, rounds: int) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    results = [measure_round(config) for _ in range(max(1, rounds))]

    def summary(values: list[float]) -> dict[str, float]:
        return {"best": round(min(values), 3), "median": round(statistics.median(values), 3)}

    name = config.name()
    if config.is_app:  # what the app chose here (the tuning), not the defaults
        file, fa, ub = results[-1].weights, results[-1].flash_attn, results[-1].n_ubatch
        weights = file.split(".")[-3] if file.count(".") >= 3 else file
        name = f"{name if config.variant else 'app'}: {weights} ub{ub} {'fa' if fa else 'no-fa'}"
    return {
        "config": name,
        "settings": {
            **asdict(config),
            "n_ubatch": config.n_ubatch or llm_mod.N_UBATCH,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
            "extra_bufts": results[0].extra_bufts,
        },
        "threads_used": [r.threads for r in results],
        "cpu_kernels": results[0].cpu_kernels,
        "tuning": results[-1].tuning,
        "loaded": {
            "file": results[-1].weights,
            "flash_attn": results[-1].flash_attn,
            "n_ubatch": results[-1].n_ubatch,
            "threads": results[-1].loaded_threads,
        },
        "ok": True,
        "rounds": len(results),
        "prompt_tokens": results[0].prompt_tokens,
        "cached_tokens": results[0].cached_tokens,
        "load_s": summary([r.load_s for r in results]),
        "cold_ttft_s": summary([r.cold_ttft_s for r in results]),
        "warm_ttft_s": summary([r.warm_ttft_s for r in results]),
        "prepared_ttft_s": summary([r.prepared_ttft_s for r in results]),
        "reword_ttft_s": summary([r.reword_ttft_s for r in results]),
        "reword_cpu_s": summary([r.reword_cpu_s for r in results]),
        "reword_prompt_tokens": results[0].reword_prompt_tokens,
        "reword_new_tokens": results[0].reword_new_tokens,
        "restart_ttft_s": summary([r.restart_ttft_s for r in results]),
        "restart_cached_tokens": results[0].restart_cached_tokens,
        "cold_cpu_s": summary([r.cold_cpu_s for r in results]),
        "warm_cpu_s": summary([r.warm_cpu_s for r in results]),
        "tokens_per_s": {
            "best": round(max(r.tokens_per_s for r in results), 1),
            "median": round(statistics.median(r.tokens_per_s for r in results), 1),
        },
        "generated_tokens": results[0].tokens,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def run_child(config: BenchConfig, rounds: int) -> dict[str, Any]:
    """``measure`` in a separate process (its own OpenMP settings; a crash stays there)."""
    env = dict(os.environ)
    if config.omp_wait_policy:
        env["OMP_WAIT_POLICY"] = config.omp_wait_policy
    if config.variant:
        env[VARIANT_ENV] = "" if config.variant == "best" else config.variant
    cmd = [
        sys.executable,
        "-m",
        "localrag",
        "bench",
        "chat",
        "--rounds",
        str(rounds),
        "--config",
        json.dumps(asdict(config)),
    ]
    print(f"… {config.name()}", file=sys.stderr, flush=True)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
    except subprocess.TimeoutExpired:
        return {"config": config.name(), "ok": False, "error": "timed out"}
    if out.returncode != 0:
        return {
            "config": config.name(),
            "ok": False,
            "error": f"exit code {out.returncode}" + (" (crashed)" if out.returncode < 0 else ""),
            "stderr": out.stderr.strip().splitlines()[-3:],
        }
    return json.loads(out.stdout.strip().splitlines()[-1])


def sweep_configs() -> list[BenchConfig]:
    """The app's configuration, then one change at a time from it (Q8_0 with the AMX/repacked kernels, which
    the app turns on where they run; each configuration runs in a process of its own, so a crash stays
    there)."""
    app = BenchConfig(weights="q8_0", extra_bufts=True)
    configs = [BenchConfig(label="app defaults")]
    configs += [BenchConfig(weights=w) for w in ("original", "bf16", "f16", "q8_0")]  # weight types, no AMX
    configs.append(replace(app, flash_attn=not llm_mod.FLASH_ATTN))
    configs += [replace(app, n_ubatch=ub) for ub in (128, 256) if ub != llm_mod.N_UBATCH]
    configs += [
        replace(app, threads=1),
        replace(app, threads=1, threads_batch=2),
        replace(app, omp_wait_policy="ACTIVE"),
        BenchConfig(weights="bf16", extra_bufts=True),
    ]
    return configs


def conversion_time() -> float:
    """Seconds to make the fast copy of the bundled model (into a temporary folder, the cache untouched)."""
    openmp.configure()
    import llama_cpp

    from localrag.core.embed import model_files

    source = model_files.default_gguf()
    with tempfile.TemporaryDirectory() as tmp:
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = fastcopy._ftype(fastcopy.fast_copy_type())
        params.allow_requantize = True
        started = time.monotonic()
        import ctypes

        with fastcopy.quiet_stderr():
            llama_cpp.llama_model_quantize(
                str(source).encode(), str(Path(tmp) / "copy.gguf").encode(), ctypes.byref(params)
            )
        return round(time.monotonic() - started, 3)


def machine() -> dict[str, Any]:
    openmp.configure()
    import llama_cpp

    from localrag.eval.machine import machine as basics

    cpu = basics()["cpu"]
    features = sorted(
        f for f in fastcopy.cpu_features() if f.startswith(("AVX", "AMX", "F16C", "NEON", "SVE"))
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cpu_flags": cpu_flags(),
        "llama_cpp_python": llama_cpp.__version__,
        "cpu_kernels": cpu_backend().describe(),
        "features": features,
        "fast_copy_type": fastcopy.fast_copy_type(),
        "load_before": round(os.getloadavg()[0], 2),
    }


def print_report(report: dict[str, Any]) -> None:
    m = report["machine"]
    print(
        f"{m['cpu']} × {m['cores']}; llama-cpp-python {m['llama_cpp_python']}; load average "
        f"{m['load_before']} → {m['load_after']}"
    )
    print(f"CPU flags: {' '.join(m['cpu_flags'])}; CPU kernels: {m['cpu_kernels']}")
    print(
        f"grounded prompt {report['prompt_tokens']} tokens; one-time conversion to {m['fast_copy_type']}: "
        f"{report['conversion_s']} s"
    )
    print(
        f"{'configuration':34} {'cold TTFT':>11} {'warm TTFT':>11} {'tok/s':>7} {'load':>6}  (best/median s)"
    )
    for c in report["configs"]:
        if not c.get("ok"):
            print(f"{c['config']:34} failed: {c.get('error')}")
            continue
        print(
            f"{c['config']:34} {c['cold_ttft_s']['best']:5.2f}/{c['cold_ttft_s']['median']:<5.2f} "
            f"{c['warm_ttft_s']['best']:5.2f}/{c['warm_ttft_s']['median']:<5.2f} "
            f"{c['tokens_per_s']['median']:7.1f} {c['load_s']['median']:6.2f}  "
            f"(rewording the quoted sentences {c['reword_ttft_s']['median']:.2f} s for "
            f"{c['reword_prompt_tokens']} tokens, {c['reword_new_tokens']} new; "
            f"prepared while typed {c['prepared_ttft_s']['median']:.2f} s; after a restart "
            f"{c['restart_ttft_s']['median']:.2f} s with {c['restart_cached_tokens']} tokens from disk; "
            f"cpu {c['cold_cpu_s']['median']:.2f}/{c['warm_cpu_s']['median']:.2f} s, cached "
            f"{c['cached_tokens']}, load avg {c['load_average'][0]}→{c['load_average'][1]}; "
            f"kernels {c['cpu_kernels']})"
        )
