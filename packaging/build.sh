#!/usr/bin/env bash
# Builds Local RAG as one self-contained folder (PyInstaller, packaging/local-rag.spec) and packs it:
#   packaging/build.sh          -> dist/local-rag-VERSION-linux-x86_64.tar.gz
#                                  (it unpacks to local-rag-VERSION-linux-x86_64/; the executable is local-rag)
#   packaging/build.sh --ocr    the same with OCR of scanned pages and images (rapidocr, OpenCV: ~206 MB more)
# The folder runs on its own: no Python, no virtual environment, no compiler; packaging/smoke.sh tries it.
# It is built from the development environment (packaging/setup.sh makes it; its llama.cpp is the one bundled).
set -euo pipefail
cd "$(dirname "$0")/.."

ocr=0
for arg in "$@"; do
    case "$arg" in
        --ocr) ocr=1 ;;
        *) echo "usage: packaging/build.sh [--ocr]" >&2; exit 2 ;;
    esac
done

started=$(date +%s)
./packaging/setup.sh app --version > /dev/null   # the environment, set up once (PyInstaller comes with it)
# shellcheck disable=SC1091
. "${LOCALRAG_VENV:-.venv}/bin/activate"

version="$(python -c 'import localrag; print(localrag.__version__)')"
os="$(uname -s | tr '[:upper:]' '[:lower:]')"
name="local-rag-$version-$os-$(uname -m)"
[ "$ocr" = 1 ] && name="$name-ocr"
work="build/bundle"
rm -rf "$work" "dist/$name" "dist/$name.tar.gz"
mkdir -p dist

bundling=$(date +%s)
LOCALRAG_BUNDLE_OCR="$ocr" python -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$work/dist" --workpath "$work/work" packaging/local-rag.spec
mv "$work/dist/local-rag" "dist/$name"
packing=$(date +%s)
echo "packing dist/$name.tar.gz..."
tar -C dist -czf "dist/$name.tar.gz" "$name"
done=$(date +%s)

printf 'built in %ss (PyInstaller %ss, packing %ss): dist/%s (%s bytes unpacked, %s files), dist/%s.tar.gz (%s bytes)\n' \
    "$((done - started))" "$((packing - bundling))" "$((done - packing))" "$name" \
    "$(du -sb "dist/$name" | cut -f1)" "$(find "dist/$name" -type f | wc -l)" "$name" \
    "$(stat -c %s "dist/$name.tar.gz")"
