#!/usr/bin/env bash
# Fetches and builds the documents of "everyday-fresh", a held-out set in the style of datasets/everyday whose
# documents are all in the test half (nothing is tuned on them), into docs/ beside this script (not committed):
# PDF manuals and a paper from Debian's packages (apt-get download: no root needed, nothing installed), an HTML
# page from Debian's git-doc, reStructuredText from a pinned PyPI source archive (pip download), and Word files
# built by everyday's make_docs.py from the texts in sources/ (python-docx in a throwaway environment).
# Idempotent: a document already in docs/ is kept.
#   datasets/everyday-fresh/fetch.sh    # then: local-rag eval answers datasets/everyday-fresh --split test
set -euo pipefail
cd "$(dirname "$0")"
here="$(pwd)"
make_docs="$here/../everyday/make_docs.py"
mkdir -p docs cache
cd cache
# shellcheck source=../everyday/fetch_lib.sh
source "$here/../everyday/fetch_lib.sh"

# package                      path inside the package                                              saved as
from_debian=(
    "libtasn1-doc                usr/share/doc/libtasn1-doc/libtasn1.pdf                              libtasn1.pdf"
    "developers-reference        usr/share/developers-reference/developers-reference.pdf              developers-reference.pdf"
    "debian-faq                  usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz                        debian-faq.pdf"
    "r-cran-strucchange          usr/lib/R/site-library/strucchange/doc/strucchange-intro.pdf         strucchange-intro.pdf"
    "git-doc                     usr/share/doc/git-doc/gitfaq.html                                    gitfaq.html"
)
fetch_from_debian "${from_debian[@]}"

# PyPI source archive (pinned)        path inside the archive                          saved as
from_pypi=(
    "tqdm==4.66.4         tqdm-4.66.4/README.rst                              tqdm-README.rst"
)
fetch_from_pypi "${from_pypi[@]}"

# Word documents built from sources/*.txt
build_word_files "$here" "$make_docs"
