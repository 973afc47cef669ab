#!/usr/bin/env bash
# Gathers the documents of the "figures" benchmark into docs/ beside this script (not committed): the Word
# reports of datasets/everyday (built by its fetch.sh, run first when they are missing) and two annual reports
# of the FinanceBench filings (FINANCEBENCH_DOCS: the folder holding 3M_2018_10K.pdf and NETFLIX_2017_10K.pdf).
#   FINANCEBENCH_DOCS=/path/to/financebench/docs datasets/figures/fetch.sh
#   local-rag eval figures datasets/figures [--split tune|test]
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p docs
everyday=../everyday/docs
for name in harbour-lane-bakery-annual-report-2023.docx millbrook-allotment-society-report-2023.docx; do
    [ -s "docs/$name" ] && continue
    [ -s "$everyday/$name" ] || ../everyday/fetch.sh
    cp "$everyday/$name" docs/
done
for name in 3M_2018_10K.pdf NETFLIX_2017_10K.pdf; do
    [ -s "docs/$name" ] && continue
    if [ -z "${FINANCEBENCH_DOCS:-}" ] || [ ! -s "$FINANCEBENCH_DOCS/$name" ]; then
        echo "fetch.sh: set FINANCEBENCH_DOCS to the folder of the FinanceBench filings (with $name)" >&2
        exit 1
    fi
    cp "$FINANCEBENCH_DOCS/$name" docs/
done
ls docs
