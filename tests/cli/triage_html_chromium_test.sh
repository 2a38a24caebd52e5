#!/usr/bin/env bash
# The --html page as a browser draws it (issue 19): headless Chromium renders the page of a
# hang to PNG; the culprit's box (#f4cccc), the waiting rank's box (#fff2cc) and the hang
# badge are painted, i.e. the inline SVG and the styles work with nothing fetched.
# Runs only where /usr/bin/chromium is installed (skipped, exit 77, otherwise).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
chromium=${NCCLSCOPE_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "skip: no $chromium"; exit 77; }
[ -x "$cli" ] || { echo "skip: $cli not built"; exit 77; }
"$cli" triage "$src/tests/data/triage/allgather-2ranks" --html "$work/page.html" > /dev/null 2>&1; rc=$?
check "triage --html (exit $rc)" test "$rc" = 0
# No network: a page that fetched anything would render without it (and the checker fails).
HOME=$work timeout 400 "$chromium" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --no-first-run --hide-scrollbars --window-size=1100,1100 --screenshot="$work/page.png" \
  "file://$work/page.html" > "$work/chromium.log" 2>&1; rc=$?
check "chromium renders the page (exit $rc)" test "$rc" = 0 -a -s "$work/page.png"
[ "$rc" = 0 ] || tail -n 5 "$work/chromium.log"
check "the culprit box, the waiting box and the hang badge are painted" \
  python3 "$src/tests/cli/png_colors.py" "$work/page.png" f4cccc:2000 fff2cc:2000
echo "$failures failure(s)"
[ "$failures" = 0 ]
