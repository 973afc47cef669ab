#!/usr/bin/env bash
# Fetches and builds the documents of the "everyday" answer benchmark into docs/ beside this script (not
# committed): PDF manuals and papers from Debian's packages (apt-get download: no root needed, nothing
# installed), Markdown from PyPI source archives (pip download), HTML pages from Debian's python3.11-doc, and
# Word files built by make_docs.py from the texts in sources/ (python-docx in a throwaway environment).
# Idempotent: a document already in docs/ is kept.
#   datasets/everyday/fetch.sh          # then: local-rag eval answers datasets/everyday [--split tune|test]
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"
mkdir -p docs cache
cd cache

# package                        path inside the package                                        saved as
from_debian=(
    "bash-doc                      usr/share/doc/bash/bashref.pdf                                   bashref.pdf"
    "fasta3-doc                    usr/share/doc/fasta3/fasta_guide.pdf                             fasta_guide.pdf"
    "gutenprint-doc                usr/share/doc/gutenprint-doc/gutenprint-users-manual.pdf         gutenprint-users-manual.pdf"
    "auto-multiple-choice-doc-pdf  usr/share/doc/auto-multiple-choice/auto-multiple-choice.en.pdf   auto-multiple-choice.en.pdf"
    "r-cran-zoo                    usr/lib/R/site-library/zoo/doc/zoo.pdf                           zoo.pdf"
    "r-cran-pscl                   usr/lib/R/site-library/pscl/doc/countreg.pdf                     countreg.pdf"
    "r-cran-sandwich               usr/lib/R/site-library/sandwich/doc/sandwich.pdf                 sandwich.pdf"
    "r-cran-desolve                usr/lib/R/site-library/deSolve/doc/deSolve.pdf                   deSolve.pdf"
    "python3.11-doc                usr/share/doc/python3.11/html/howto/argparse.html                python-argparse-tutorial.html"
    "python3.11-doc                usr/share/doc/python3.11/html/howto/sorting.html                 python-sorting-howto.html"
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

# PyPI source archive (pinned)        path inside the archive                                  saved as
from_pypi=(
    "pip-tools==7.4.1   pip-tools-7.4.1/README.md                                   pip-tools-README.md"
    "black==24.4.2      black-24.4.2/docs/usage_and_configuration/the_basics.md     black-the-basics.md"
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
        python3 "$here/make_docs.py" "$here/sources" "$here/docs"
    else
        tmp="$(mktemp -d)"
        trap 'rm -rf "$tmp"' EXIT
        if python3 -m venv "$tmp/venv" > /dev/null 2>&1; then
            "$tmp/venv/bin/python" -m pip install --quiet "python-docx>=1.1"
            "$tmp/venv/bin/python" "$here/make_docs.py" "$here/sources" "$here/docs"
        else
            python3 -m pip install --quiet --target "$tmp/lib" "python-docx>=1.1"
            PYTHONPATH="$tmp/lib" python3 "$here/make_docs.py" "$here/sources" "$here/docs"
        fi
    fi
fi
