#!/usr/bin/env bash
# Fetches and builds the documents of "everyday-extra", a third tuning set for the answer reader in the style of
# datasets/everyday, into docs/ beside this script (not committed): PDF manuals and papers from Debian's
# packages (apt-get download: no root needed, nothing installed), an HTML page from Debian's python3.11-doc,
# Markdown from a pinned PyPI source archive (pip download), and Word files built by everyday's make_docs.py
# from the texts in sources/ (python-docx in a throwaway environment).
# Idempotent: a document already in docs/ is kept.
#   datasets/everyday-extra/fetch.sh    # then: local-rag eval answers datasets/everyday-extra --split tune
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
    "gnu-standards               usr/share/doc/gnu-standards/standards.pdf.gz                         gnu-coding-standards.pdf"
    "ubuntu-packaging-guide-pdf  usr/share/doc/ubuntu-packaging-guide-pdf/ubuntu-packaging-guide.pdf.gz ubuntu-packaging-guide.pdf"
    "ruby-prawn-doc              usr/share/doc/ruby-prawn/manual.pdf.gz                               prawn-manual.pdf"
    "r-cran-partykit             usr/lib/R/site-library/partykit/doc/ctree.pdf                        ctree.pdf"
    "r-cran-quantreg             usr/lib/R/site-library/quantreg/doc/rq.pdf                           rq.pdf"
    "python3.11-doc              usr/share/doc/python3.11/html/howto/urllib2.html                     python-urllib2-howto.html"
)
fetch_from_debian "${from_debian[@]}"

# PyPI source archive (pinned)        path inside the archive                          saved as
from_pypi=(
    "tabulate==0.9.0      tabulate-0.9.0/README.md                            tabulate-README.md"
)
fetch_from_pypi "${from_pypi[@]}"

# Word documents built from sources/*.txt
build_word_files "$here" "$make_docs"
