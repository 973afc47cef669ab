#!/usr/bin/env bash
# Fetches the real PDF manuals the answer benchmark's questions were written from, from Debian's packages
# (apt-get download: no root needed, nothing installed), into pdfs/ beside this script. Not committed.
#   datasets/debian-manuals/fetch.sh          # then: local-rag eval answers datasets/debian-manuals
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p pdfs debs
cd debs
# package           path inside the package                                          saved as
wanted=(
    "gnuplot-doc     usr/share/doc/gnuplot/gnuplot.pdf                                 gnuplot.pdf"
    "debian-policy   usr/share/doc/debian-policy/policy.pdf.gz                         policy.pdf"
    "debian-policy   usr/share/doc/debian-policy/fhs/fhs-3.0.pdf.gz                    fhs-3.0.pdf"
    "octave-doc      usr/share/doc/octave/octave.pdf                                   octave.pdf"
    "r-doc-pdf       usr/share/R/doc/manual/R-FAQ.pdf                                  R-FAQ.pdf"
    "r-doc-pdf       usr/share/R/doc/manual/R-admin.pdf                                R-admin.pdf"
)
FETCH_INTO=pdfs
source ../../everyday/fetch_lib.sh
fetch_from_debian "${wanted[@]}"
