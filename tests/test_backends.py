"""Which of llama.cpp's CPU kernels run: the best variant of the portable build for this CPU, a variant forced
by the environment, a variant this CPU cannot run, and how doctor reports them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localrag.cli import doctor
from localrag.core.config import Settings
from localrag.core.llm.backends import BUILT_IN, VARIANT_ENV, cpu_backend
from localrag.core.llm.llm import LocalLLM, load_llm

# In a child process: load the bundled model as the app does, answer one prompt, print what ran.
CHILD = """
import json
from localrag.core.llm.llm import load_llm
from localrag.core.config import Settings
llm = load_llm(Settings(n_ctx=512))
prompt = llm.render([{"role": "user", "content": "Name three colours of the rainbow."}])
answer = "".join(llm.stream(prompt, max_tokens=8, temperature=0.0))
b = llm.backend
print(json.dumps({"variant": b.variant, "features": b.features, "path": b.path, "forced": b.forced,
                  "note": b.note, "scores": b.scores, "answer": answer}))
"""


@pytest.fixture(scope="module")
def llm(home) -> LocalLLM:
    return load_llm(Settings(n_ctx=512))


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _portable(llm: LocalLLM) -> None:
    if llm.backend.variant == BUILT_IN:
        pytest.skip("llama.cpp is built for one CPU here (no CPU variants to choose from)")


def _child(home: Path, variant: str) -> dict:
    env = dict(os.environ, **{VARIANT_ENV: variant})
    out = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=240, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_loaded_model_runs_on_the_best_variant_this_cpu_runs(llm):
    """(Or on the variant ``LOCALRAG_CPU_VARIANT`` names, when the suite runs with one forced.)"""
    backend = llm.backend
    assert backend is cpu_backend()
    _portable(llm)
    assert Path(backend.path).is_file() and backend.path.endswith(f"cpu-{backend.variant}.so")
    if os.environ.get(VARIANT_ENV):
        assert backend.forced and backend.variant == os.environ[VARIANT_ENV]
    else:
        assert backend.scores[backend.variant] == max(backend.scores.values()) > 0
        assert not backend.forced and not backend.note
    assert backend.variant in backend.describe()
    # The kernels use what this CPU has, as /proc/cpuinfo names it.
    flags = _cpu_flags()
    if flags:
        assert ("AVX2" in backend.features) == ("avx2" in flags)
        assert ("AVX512" in backend.features) == ("avx512f" in flags and "avx512bw" in flags)
        assert ("AVX512_BF16" in backend.features) == ("avx512_bf16" in flags)
        assert ("AMX_INT8" in backend.features) == ("amx_int8" in flags)


def test_doctor_names_the_cpu_kernels(llm):
    check = doctor._llm_check(Settings())
    assert check.ok, check.detail
    assert check.detail.endswith(f"CPU kernels {llm.backend.variant}")
    assert check.info["cpu kernels"] == llm.backend.describe()


def test_a_forced_variant_runs_and_answers(llm, home):
    """The AVX2 variant stands for a common laptop: forced here, it loads, runs without AVX-512 and answers as
    the best variant does."""
    _portable(llm)
    if not llm.backend.scores.get("haswell"):
        pytest.skip("this CPU cannot run the AVX2 (haswell) variant")
    best = _child(home, "")
    forced = _child(home, "haswell")
    assert forced["variant"] == "haswell" and forced["forced"] and not forced["note"]
    assert "AVX2" in forced["features"] and "AVX512" not in forced["features"]
    assert best["scores"][best["variant"]] == max(best["scores"].values()) and not best["forced"]
    assert forced["answer"].strip() and best["answer"].strip()


def test_a_variant_this_cpu_cannot_run_or_that_does_not_exist_falls_back_to_the_best(llm, home):
    _portable(llm)
    best = max(llm.backend.scores, key=lambda name: llm.backend.scores[name])
    missing = _child(home, "pentium-pro")
    assert missing["variant"] == best and not missing["forced"]
    assert "no such variant" in missing["note"] and missing["answer"].strip()
    unable = [name for name, score in llm.backend.scores.items() if score == 0]
    if unable:  # e.g. the AMX variant on a CPU without AMX
        result = _child(home, unable[0])
        assert result["variant"] == best
        assert "cannot run" in result["note"] and result["answer"].strip()
