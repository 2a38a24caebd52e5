# Builds tests/cli/torch_watchdog_mock.cc as $1/libtorch_cuda.so and $1/mock (which prints the
# addresses and tids a reader must find, then waits), and $1/profiles/torch/<build-id>.json: its
# structs and enum by name from its own DWARF (`layout extract`), the two std::thread state
# vtables and shouldDump_ from its .symtab, as a torch profile carries them. Used by
# tests/cli/torch_watchdog_live_test.sh and tests/gdb/gdb_torch_watchdog_test.sh.
# Usage: source it (with $src set), then: build_watchdog_mock WORK CLI || fail
build_watchdog_mock() {
  local work=$1 cli=$2
  g++ -std=c++17 -g -O0 -fPIC -shared -Wl,--build-id -o "$work/libtorch_cuda.so" \
    "$src/tests/cli/torch_watchdog_mock.cc" -lpthread || return 1
  printf 'extern "C" void start_watchdog_mock();\n#include <unistd.h>\nint main() { start_watchdog_mock(); for (;;) pause(); }\n' \
    > "$work/main.cc"
  g++ -O0 -o "$work/mock" "$work/main.cc" -L"$work" -ltorch_cuda -Wl,-rpath,"$work" -lpthread || return 1
  "$cli" layout extract "$work/libtorch_cuda.so" -o "$work/structs.json" --enum c10d::ErrorType \
    --root c10d::ProcessGroupNCCL --root c10d::ProcessGroupNCCL::Watchdog \
    --root c10d::ProcessGroupNCCL::HeartbeatMonitor --root c10d::ProcessGroupNCCL::Options 2> /dev/null || return 1
  readelf -sW "$work/libtorch_cuda.so" > "$work/symbols.txt"
  mkdir -p "$work/profiles/torch"
  python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
profile = json.load(open(work + "/structs.json"))
wanted = ("_ZTVNSt6thread11_State_implINS_8_InvokerISt5tupleIJMN4c10d16ProcessGroupNCCL8WatchdogEFvvEPS5_EEEEEE",
          "_ZTVNSt6thread11_State_implINS_8_InvokerISt5tupleIJMN4c10d16ProcessGroupNCCL16HeartbeatMonitorEFvvEPS5_EEEEEE",
          "_ZN4c10d16ProcessGroupNCCL11shouldDump_E")
symbols = {}
for line in open(work + "/symbols.txt"):
    fields = line.split()
    if len(fields) >= 8 and fields[7] in wanted:
        symbols[fields[7]] = int(fields[1], 16)
if len(symbols) != 3:
    sys.exit("symbols: %s" % sorted(symbols))
profile.update(library="libtorch_cuda.so of torch 2.11.0+mock", symbols=symbols,
               constants={"TORCH_VERSION_MAJOR": 2, "TORCH_VERSION_MINOR": 11, "TORCH_VERSION_PATCH": 0})
json.dump(profile, open("%s/profiles/torch/%s.json" % (work, profile["build_id"]), "w"))
PY
}
