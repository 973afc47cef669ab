#!/usr/bin/env bash
# Fetches the PDFs of the sentence benchmark from Debian's packages (apt-get download: no root needed, nothing
# installed) into pdfs/ beside this script, and makes the scanned one: pages of a manual rendered to images and
# read back by OCR (ocrmypdf with tesseract, from Debian). Not committed.
#   datasets/pdf-sentences/fetch.sh          # then: local-rag eval sentences datasets/pdf-sentences
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p pdfs debs
cd debs
# package            path inside the package                                               saved as
wanted=(
    "r-cran-lmtest      usr/lib/R/site-library/lmtest/doc/lmtest-intro.pdf                     lmtest-intro.pdf"
    "ddd-doc            usr/share/doc/ddd/ddd.pdf.gz                                           ddd.pdf"
    "libmpfr-doc        usr/share/doc/libmpfr-doc/mpfr.pdf.gz                                  mpfr.pdf"
    "fonts-sil-dai-banna usr/share/doc/fonts-sil-dai-banna/doc/DaiBannaSIL.pdf.gz              DaiBannaSIL.pdf"
    "fonts-sil-shimenkan usr/share/doc/fonts-sil-shimenkan/documentation/UsingTheFonts.pdf.gz  UsingTheFonts.pdf"
    "fonts-sil-abyssinica usr/share/doc/fonts-sil-abyssinica/documentation/AbyssinicaSILFontFeatures.pdf.gz AbyssinicaSILFontFeatures.pdf"
)
FETCH_INTO=pdfs
source ../../everyday/fetch_lib.sh
fetch_from_debian "${wanted[@]}"
# The scanned documents: pages of a manual as 200 dpi images, with tesseract's text layer on them.
scanned() {  # SOURCE FIRST LAST SAVED_AS
    [ -s "../pdfs/$4" ] && return
    if ! command -v tesseract > /dev/null; then
        echo "fetch.sh: tesseract is needed for $4 (apt-get install tesseract-ocr-eng)" >&2
        exit 1
    fi
    rm -rf scan && mkdir scan
    pdftoppm -r 200 -f "$2" -l "$3" -png "../pdfs/$1" scan/page
    ls scan/page-*.png > scan/list.txt
    tesseract scan/list.txt scan/scanned -l eng --dpi 200 pdf > /dev/null 2>&1
    mv scan/scanned.pdf "../pdfs/$4"
    rm -rf scan
    echo "pdfs/$4"
}
scanned mpfr.pdf 5 8 mpfr-scanned.pdf
scanned ddd.pdf 30 31 ddd-scanned.pdf
