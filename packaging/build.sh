#!/usr/bin/env bash
# Builds Local RAG as one self-contained folder (PyInstaller, packaging/local-rag.spec) and packs it:
#   packaging/build.sh          -> dist/local-rag-VERSION-linux-x86_64.tar.gz
#                                  (it unpacks to local-rag-VERSION-linux-x86_64/; the executable is local-rag)
#                                  on macOS: dist/local-rag-VERSION-darwin-arm64.dmg holding "Local RAG.app"
#                                  on Windows (Git Bash): dist/local-rag-VERSION-windows-x86_64.zip
#   packaging/build.sh --ocr    the same with OCR of scanned pages and images (rapidocr, OpenCV: ~206 MB more)
# Only the Linux archive is built and tried here (packaging/smoke.sh); the other two follow the same steps.
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
case "$(uname -s)" in
    Darwin) os=darwin ;;
    MINGW* | MSYS* | CYGWIN*) os=windows ;;
    *) os="$(uname -s | tr '[:upper:]' '[:lower:]')" ;;
esac
name="local-rag-$version-$os-$(uname -m)"
[ "$ocr" = 1 ] && name="$name-ocr"
work="build/bundle"
rm -rf "$work" "dist/$name" "dist/$name".*
mkdir -p dist

bundling=$(date +%s)
LOCALRAG_BUNDLE_OCR="$ocr" python -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$work/dist" --workpath "$work/work" packaging/local-rag.spec
mv "$work/dist/local-rag" "dist/$name"
packing=$(date +%s)
case "$os" in
    darwin)
        archive="dist/$name.dmg"
        echo "packing $archive..."
        hdiutil create -quiet -volname "Local RAG" -srcfolder "$work/dist/Local RAG.app" -format UDZO "$archive"
        ;;
    windows)
        archive="dist/$name.zip"
        echo "packing $archive..."
        (cd dist && python -m zipfile -c "$name.zip" "$name")
        ;;
    *)
        archive="dist/$name.tar.gz"
        echo "packing $archive..."
        tar -C dist -czf "$archive" "$name"
        ;;
esac
done=$(date +%s)

sizes="$(python - "dist/$name" "$archive" <<'PY'
import sys
from pathlib import Path

files = [f for f in Path(sys.argv[1]).rglob("*") if f.is_file() and not f.is_symlink()]
print(sum(f.stat().st_size for f in files), "bytes unpacked,", len(files), "files;", Path(sys.argv[2]).stat().st_size, "bytes")
PY
)"
printf 'built in %ss (PyInstaller %ss, packing %ss): dist/%s and %s (%s)\n' \
    "$((done - started))" "$((packing - bundling))" "$((done - packing))" "$name" "$archive" "$sizes"
