# Sourced by the tests of a live fixture process (tests/fixtures/): start_live_fixture NAME ERE
# starts build/fixtures/NAME in the background with its output in $work/fixture.out, kills it
# and removes $work at exit, and waits (10 s at most) for an output line matching ERE. Sets
# build, work and fixture_pid. Skips (77) when the fixture is not built.
start_live_fixture() {
  build=${NCCLSCOPE_BUILD:?}
  local fixture=$build/fixtures/$1
  [ -x "$fixture" ] || { echo "SKIP: $fixture not built"; exit 77; }
  work=$(mktemp -d)
  "$fixture" > "$work/fixture.out" &
  fixture_pid=$!
  trap 'kill -9 $fixture_pid 2>/dev/null; wait $fixture_pid 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 200); do grep -qE "$2" "$work/fixture.out" && break; sleep 0.05; done
}
