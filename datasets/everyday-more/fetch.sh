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
# shellcheck source=../everyday/fetch_lib.sh
source "$here/../everyday/fetch_lib.sh"

# package                  path inside the package                                              saved as
from_debian=(
    "python-reportlab-doc    usr/share/doc/python-reportlab-doc/reportlab-userguide.pdf           reportlab-userguide.pdf"
    "glpk-doc                usr/share/doc/glpk-doc/gmpl.pdf                                      gmpl.pdf"
    "r-cran-survival         usr/lib/R/library/survival/doc/timedep.pdf                           timedep.pdf"
    "r-cran-lme4             usr/lib/R/site-library/lme4/doc/lmer.pdf                             lmer.pdf"
    "python3.11-doc          usr/share/doc/python3.11/html/howto/logging.html                     python-logging-howto.html"
)
fetch_from_debian "${from_debian[@]}"

# PyPI source archive (pinned)        path inside the archive                          saved as
from_pypi=(
    "python-dotenv==1.0.1   python-dotenv-1.0.1/README.md                       python-dotenv-README.md"
)
fetch_from_pypi "${from_pypi[@]}"

# Word documents built from sources/*.txt
build_word_files "$here" "$make_docs"
