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
# shellcheck source=../everyday/fetch_lib.sh
source "$here/fetch_lib.sh"

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
fetch_from_debian "${from_debian[@]}"

# PyPI source archive (pinned)        path inside the archive                                  saved as
from_pypi=(
    "pip-tools==7.4.1   pip-tools-7.4.1/README.md                                   pip-tools-README.md"
    "black==24.4.2      black-24.4.2/docs/usage_and_configuration/the_basics.md     black-the-basics.md"
)
fetch_from_pypi "${from_pypi[@]}"

# Word documents built from sources/*.txt
build_word_files "$here" "$here/make_docs.py"
