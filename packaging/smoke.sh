#!/usr/bin/env bash
# Tries the bundle as a person would: unpacks the archive into an empty folder and runs it with nothing else —
# no virtual environment, no Python and no compiler on the PATH, a fresh data folder — then:
#   doctor passes · `-m` runs a module of the app (its child processes) · the window opens (offscreen) and
#   closes cleanly on TERM · a PDF is indexed · a question gets an answer that cites the page holding it ·
#   an image is read by OCR (or, in an archive built without it, reported as needing it).
#   packaging/smoke.sh [ARCHIVE]    (default: the newest dist/local-rag-*.tar.gz)
# Exits non-zero at the first failure. As root (containers, CI) it sets LOCALRAG_ALLOW_ROOT=1 (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
archive="${1:-$(ls -t dist/local-rag-*.tar.gz 2>/dev/null | head -1)}"
[ -f "$archive" ] || { echo "smoke: no archive (run packaging/build.sh first)" >&2; exit 2; }
archive="$(realpath "$archive")"

tmp="$(mktemp -d /tmp/local-rag-smoke.XXXXXX)"
window_pid=""
cleanup() {
    if [ -n "$window_pid" ] && kill -0 "$window_pid" 2> /dev/null; then
        kill "$window_pid" 2> /dev/null || true
        wait "$window_pid" 2> /dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
# Readable by every account: as root the database server runs as its own account, from the unpacked folder.
chmod 755 "$tmp"
step() { printf '\n== %s\n' "$*"; }
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }

step "unpack $(basename "$archive") ($(du -h "$archive" | cut -f1))"
mkdir "$tmp/app" "$tmp/home" "$tmp/bin"
tar -xzf "$archive" -C "$tmp/app"
exe="$(find "$tmp/app" -maxdepth 2 -type f -name local-rag -perm -u+x | head -1)"
[ -n "$exe" ] || fail "no local-rag executable in the archive"
echo "unpacked: $(du -sh "$tmp/app" | cut -f1) in $(find "$tmp/app" -type f | wc -l) files; executable $exe"

# The PATH holds only the system tools the app calls itself: ldd (which X11 libraries are missing), useradd
# (as root: the database's account) and a shell. No Python, no compiler.
for tool in sh ldd useradd; do
    found="$(command -v "$tool" || true)"
    [ -n "$found" ] && ln -s "$found" "$tmp/bin/$tool"
done
clean_env=(env -i "PATH=$tmp/bin" "HOME=$tmp/home" "LANG=C.UTF-8" "LOCALRAG_HOME=$tmp/data"
    "LOCALRAG_CACHE=$tmp/cache")
[ "$(id -u)" = 0 ] && clean_env+=("LOCALRAG_ALLOW_ROOT=1")
for tool in python python3 cc gcc c++ clang pip; do
    if "${clean_env[@]}" sh -c "command -v $tool" > /dev/null 2>&1; then
        fail "$tool is reachable on the smoke test's PATH"
    fi
done
run() { "${clean_env[@]}" "$@"; }
echo "PATH=$tmp/bin: $(ls "$tmp/bin" | tr '\n' ' ')(no python, pip or compiler)"

step "local-rag --version"
run "$exe" --version

step "local-rag doctor"
run "$exe" doctor || fail "doctor reported a problem"
run "$exe" doctor --json > "$tmp/doctor.json" || fail "doctor --json"
grep -q '"name": "app icon",' "$tmp/doctor.json" || fail "doctor has no app icon check"
grep -A1 '"name": "app icon",' "$tmp/doctor.json" | grep -q '"ok": true' || fail "the bundle has no icon files"

step "local-rag -m localrag --version (how the app starts its child processes)"
by_module="$(run "$exe" -m localrag --version)"
[ "$by_module" = "$(run "$exe" --version)" ] || fail "-m does not run the app's module"
echo "$by_module"

step "the window, offscreen: opens, warms up, then closes on TERM"
log="$tmp/data/logs/localrag.log"
before=0
if [ -f "$log" ]; then before="$(wc -l < "$log")"; fi
window_log() { tail -n +"$((before + 1))" "$log" 2> /dev/null; }
# Started without the run function, so that $! is the app itself (env replaces itself with it).
"${clean_env[@]}" QT_QPA_PLATFORM=offscreen "$exe" > "$tmp/window.out" 2>&1 &
window_pid=$!
# Ready when the chat has warmed up: the library is open, the embedding and language models are loaded.
for _ in $(seq 360); do
    window_log | grep -q "warm-up:" && break
    kill -0 "$window_pid" 2> /dev/null || break
    sleep 0.5
done
if ! window_log | grep -q "warm-up:"; then
    cat "$tmp/window.out"; window_log; fail "the window did not warm up within 3 minutes"
fi
window_log | grep "store open at\|warm-up:"
# The programs the app starts get the system's library path, not the bundle's (packaging/entry.py): the
# database server it started shows which.
pg_pid="$(head -1 "$tmp/data/pg/postmaster.pid" 2> /dev/null || true)"
[ -n "$pg_pid" ] && [ -r "/proc/$pg_pid/environ" ] || fail "the window's database server is not running"
if tr '\0' '\n' < "/proc/$pg_pid/environ" | grep "^LD_LIBRARY_PATH=" | grep -qF "$tmp/app"; then
    fail "the programs the app starts get the bundle's library path"
fi
echo "the database server it started (pid $pg_pid) has the system's library path, not the bundle's"
sleep 2
kill -TERM "$window_pid"
status=0
for _ in $(seq 120); do kill -0 "$window_pid" 2> /dev/null || break; sleep 0.5; done
kill -0 "$window_pid" 2> /dev/null && fail "the window did not close within 60 s of TERM"
wait "$window_pid" || status=$?
window_pid=""
[ "$status" = 0 ] || { cat "$tmp/window.out"; window_log; fail "the window exited with status $status"; }
[ -f "$tmp/data/pg/postmaster.pid" ] && fail "the window left its database server running"
if window_log | grep -q "Traceback\| ERROR "; then window_log; fail "the window logged an error"; fi
echo "closed with status 0, database stopped, no error in the log"

step "index a PDF"
# A two-page PDF written here, so the test needs no file from elsewhere: the answer is on page 2.
pdf_page() {  # the content stream of one page: one line of text per argument
    local body="BT /F1 12 Tf 72 720 Td 16 TL" line
    for line in "$@"; do body+=" ($line) Tj T*"; done
    printf '%s ET' "$body"
}
write_pdf() {
    local out="$1" page1 page2 pdf offsets=() i
    page1="$(pdf_page "Field Notes of the Northern Glacier Observatory" \
        "This booklet describes the observatory, its staff and the instruments used on the ice." \
        "The station is staffed from May to September and reached by a gravel road.")"
    page2="$(pdf_page "Measurements" \
        "The Skalafell glacier retreats by 42 metres per year on average since 1990." \
        "Its meltwater feeds the Jokulsa river, which floods every August.")"
    local objects=(
        "<< /Type /Catalog /Pages 2 0 R >>"
        "<< /Type /Pages /Kids [3 0 R 5 0 R] /Count 2 >>"
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 7 0 R >> >> /Contents 4 0 R >>"
        "<< /Length ${#page1} >>
stream
$page1
endstream"
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 7 0 R >> >> /Contents 6 0 R >>"
        "<< /Length ${#page2} >>
stream
$page2
endstream"
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    )
    pdf=$'%PDF-1.4\n'
    for i in "${!objects[@]}"; do
        offsets+=("${#pdf}")
        pdf+="$((i + 1)) 0 obj
${objects[$i]}
endobj
"
    done
    local xref="${#pdf}"
    pdf+="xref
0 $((${#objects[@]} + 1))
0000000000 65535 f "$'\n'
    for i in "${offsets[@]}"; do pdf+="$(printf '%010d 00000 n ' "$i")"$'\n'; done
    pdf+="trailer
<< /Size $((${#objects[@]} + 1)) /Root 1 0 R >>
startxref
$xref
%%EOF
"
    printf '%s' "$pdf" > "$out"
}
mkdir "$tmp/docs"
write_pdf "$tmp/docs/observatory.pdf"
run "$exe" ingest "$tmp/docs/observatory.pdf" || fail "ingest"
run "$exe" search "glacier retreat per year" --k 3 || fail "search"

step "ask a question; the answer must cite page 2 of the PDF"
question="How many metres per year does the Skalafell glacier retreat?"
run "$exe" ask "$question" --json > "$tmp/answer.json" || { cat "$tmp/answer.json"; fail "ask"; }
# No Python here to read JSON: the checks match the fields in the JSON without its white space.
flat="$(tr -d '\n ' < "$tmp/answer.json")"
show() { cat "$tmp/answer.json"; fail "$1"; }
echo "$flat" | grep -q '"answer":"[^"]*\[[0-9][0-9]*\]' || show "the answer has no citation mark"
echo "$flat" | grep -q '"citations":{"cited":\[[0-9]' || show "the answer cites no source"
echo "$flat" | grep -q '"path":"[^"]*observatory.pdf","doc_type":"pdf","page_number":2,[^}]*"cited":true' \
    || show "the cited source is not page 2 of the PDF"
grep -q '42 metres per year' "$tmp/answer.json" || show "the answer does not quote the page"
grep '"answer"' "$tmp/answer.json"
echo "cited: observatory.pdf, page 2"

step "an image: read by OCR when the bundle has it, otherwise reported as needing OCR"
cp packaging/smoke-scan.png "$tmp/docs/scan.png"   # two lines of text, rendered: no text layer
if [ -d "$(dirname "$exe")/_internal/rapidocr" ]; then
    run "$exe" ingest "$tmp/docs/scan.png" || fail "ingest of an image with OCR"
    run "$exe" search "weather mast on the moraine" --k 1 > "$tmp/scan.out" || fail "search"
    grep -q "stands 12 metres tall" "$tmp/scan.out" || { cat "$tmp/scan.out"; fail "the image's text was not read"; }
    echo "read by OCR: $(grep -o "The weather mast.*" "$tmp/scan.out")"
else
    status=0
    run "$exe" ingest "$tmp/docs/scan.png" > "$tmp/scan.out" 2>&1 || status=$?
    if [ "$status" = 0 ] || ! grep -q "scan.png is an image; to read its text" "$tmp/scan.out"; then
        cat "$tmp/scan.out"; fail "an image in a bundle without OCR was not reported as needing it"
    fi
    echo "no OCR in this bundle; reported: $(grep -o "scan.png is an image;[^.]*" "$tmp/scan.out" | head -1)"
fi

step "nothing of the bundle is left running"
if command -v pgrep > /dev/null && pgrep -f "$tmp/app/" > /dev/null; then
    pgrep -af "$tmp/app/" >&2
    fail "processes of the bundle are still running"
fi
echo "none"

printf '\nsmoke: OK (%s)\n' "$(basename "$archive")"
