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
for line in "${wanted[@]}"; do
    read -r package inside saved <<< "$line"
    [ -s "../pdfs/$saved" ] && continue
    ls "${package}"_*.deb > /dev/null 2>&1 || apt-get download "$package" > /dev/null 2>&1
    deb="$(ls "${package}"_*.deb | head -n 1)"
    rm -rf x && mkdir x && dpkg-deb -x "$deb" x
    if [ ! -e "x/$inside" ]; then
        echo "fetch.sh: $inside not found in $deb" >&2
        exit 1
    fi
    case "$inside" in
        *.gz) gzip -dc "x/$inside" > "../pdfs/$saved" ;;
        *) cp "x/$inside" "../pdfs/$saved" ;;
    esac
    rm -rf x
    echo "pdfs/$saved"
done
