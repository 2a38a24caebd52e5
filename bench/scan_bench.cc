// scan_bench CORE [REPEAT [PROFILE]]: times the communicator scan (NCCL_MAGIC, 16-byte
// stride over writable private memory) on a core file; prints one JSON line. With PROFILE (a
// layout profile), also the whole discovery by scan with that layout: for a 2.18-2.20 profile
// the sharedRes->owner scan (owner_scan_best_s, comms).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "layout/layout_profile.h"
#include "nccl/comm_scanner.h"
#include "target/core_file.h"
#include "util/errors.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: scan_bench CORE [REPEAT]\n");
    return 64;
  }
  int repeat = argc > 2 ? std::stoi(argv[2]) : 5;
  try {
    auto open_start = std::chrono::steady_clock::now();
    auto target = nsc::open_core(argv[1], "");
    double open_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - open_start).count();
    double best = 1e9;
    uint64_t bytes = 0, regions = 0;
    size_t matches_found = 0;
    for (int i = 0; i < repeat; ++i) {
      std::vector<uint64_t> matches;
      regions = 0;
      auto start = std::chrono::steady_clock::now();
      bytes = nsc::scan_for_value(*target, nsc::kNcclMagic, 8, 16, 0, {}, &matches, &regions);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::min(best, seconds);
      matches_found = matches.size();
    }
    std::printf("{\"core\":\"%s\",\"open_s\":%.6f,\"scan_best_s\":%.6f,\"bytes\":%llu,\"regions\":%llu,"
                "\"matches\":%zu,\"gb_per_s\":%.2f",
                argv[1], open_seconds, best, static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(regions), matches_found, bytes / best / 1e9);
    if (argc > 3) {
      nsc::LayoutProfile layout = nsc::read_layout_profile(argv[3]);
      nsc::DiscoveryOptions options;
      options.force_scan = true;
      double discovery_best = 1e9;
      nsc::Discovery discovery;
      for (int i = 0; i < repeat; ++i) {
        auto start = std::chrono::steady_clock::now();
        discovery = nsc::discover_communicators(*target, layout, options);
        discovery_best = std::min(discovery_best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      std::printf(",\"discovery_anchor\":\"%s\",\"discovery_best_s\":%.6f,\"discovery_gb_per_s\":%.2f,"
                  "\"candidates\":%llu,\"comms\":%zu", discovery.scan_anchor.c_str(), discovery_best,
                  discovery.bytes_scanned / discovery_best / 1e9,
                  static_cast<unsigned long long>(discovery.candidates), discovery.addresses.size());
    }
    std::printf("}\n");
    return 0;
  } catch (const nsc::BadInput& error) {
    std::fprintf(stderr, "scan_bench: %s\n", error.what());
    return 2;
  }
}
