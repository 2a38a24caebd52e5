// Memory of another rank mapped into this one (NCCL 2.28.9 transport/p2p.cc p2pMap, register):
// a P2P connector whose sendMemIpc/recvMemIpc is set imported its peer's buffer (legacy CUDA IPC
// or cuMem; P2P_INTERMEDIATE goes through a third rank, whose number NCCL does not keep here),
// and a registration's ipcInfos[] name the peer that exported each buffer. The exporting rank's
// comm being destroyed while the import is held leaves this rank reading memory its owner is
// tearing down (legacy IPC: freed under it; cuMem: kept alive only by this import).
#include <map>

#include "audit/audit_report.h"
#include "util/strings.h"

namespace nsc::audit {
namespace {

using nlohmann::json;

constexpr const char* kRule = "ipc-import-from-dead-peer";

struct Imports {
  std::map<int64_t, json> by_peer;  // exporting rank -> what was imported from it
  std::vector<std::string> unknown;  // why some imports' exporters are unknown
};

bool nonzero_address(const json& value) {
  uint64_t address = 0;
  return value.is_string() && parse_u64(value.get<std::string>(), &address) && address != 0;
}

void add_registration_imports(const json& comm, Imports* imports) {
  Field buffers = comm_field(comm, "cuda.registrations.buffers");
  if (!buffers.known() || !buffers.value->is_array()) return imports->unknown.push_back(buffers.why);
  for (const json& buffer : *buffers.value) {
    if (!buffer.is_object() || !buffer.contains("ipc_imports") || !buffer["ipc_imports"].is_array()) continue;
    for (const json& import : buffer["ipc_imports"]) {
      const json peer = import.is_object() ? import.value("peer_rank", json()) : json();
      if (!peer.is_number_integer()) {
        imports->unknown.push_back("an IPC import of registration " + buffer.value("begin", std::string("?")) + " is unreadable");
        continue;
      }
      imports->by_peer[peer.get<int64_t>()].push_back({{"kind", "registration"}, {"begin", buffer.value("begin", json())},
                                                      {"remote_address", import.value("remote_address", json())},
                                                      {"legacy_ipc", import.value("legacy_ipc", json())}});
    }
  }
}

void add_connector_imports(const json& comm, Imports* imports) {
  Field connectors = comm_field(comm, "cuda.p2p_transport");
  if (!connectors.known() || !connectors.value->is_array()) return imports->unknown.push_back(connectors.why);
  for (const json& connector : *connectors.value) {
    if (!connector.is_object()) continue;
    if (!nonzero_address(connector.value("send_mem_ipc", json())) && !nonzero_address(connector.value("recv_mem_ipc", json())))
      continue;  // a direct pointer (same process, same GPU or no cuMem): nothing imported
    const json type = connector.value("type", json());
    const json peer = connector.value("peer", json());
    if (!type.is_string() || !peer.is_number_integer()) {
      imports->unknown.push_back("a P2P connector's type or peer is unreadable");
      continue;
    }
    if (type == "P2P_INTERMEDIATE") continue;  // exported by an intermediate rank not recorded here
    imports->by_peer[peer.get<int64_t>()].push_back({{"kind", "p2p-transport"}, {"type", type},
                                                    {"channel", connector.value("channel", json())},
                                                    {"direction", connector.value("direction", json())}});
  }
}

const CommRef* find_rank(const std::vector<CommRef>& ranks, int64_t rank) {
  for (const CommRef& ref : ranks)
    if (rank_of(*ref.comm) == rank) return &ref;
  return nullptr;
}

}  // namespace

void check_ipc_exporters(AuditReport& report, const CommRef& ref, const RanksByHash& ranks) {
  Imports imports;
  add_registration_imports(*ref.comm, &imports);
  add_connector_imports(*ref.comm, &imports);
  std::string hash = comm_hash_of(*ref.comm);
  auto same_comm = ranks.find(hash);
  size_t fired = 0;
  for (const auto& [peer, what] : imports.by_peer) {
    const CommRef* exporter = same_comm == ranks.end() ? nullptr : find_rank(same_comm->second, peer);
    if (exporter == nullptr) {
      imports.unknown.push_back("exporting rank " + std::to_string(peer) + " of comm " + hash + " is not among the inputs");
      continue;
    }
    std::string why;
    std::optional<bool> destroyed = comm_flag(*exporter->comm, "health.destroy_flag", &why);
    if (!destroyed) {
      imports.unknown.push_back("exporting rank " + std::to_string(peer) + ": " + why);
      continue;
    }
    if (!*destroyed) continue;
    ++fired;
    report.fire(kRule, {ref, *exporter},
                "holds " + std::to_string(what.size()) + " import(s) of rank " + std::to_string(peer) +
                    "'s memory, and rank " + std::to_string(peer) + "'s comm is being destroyed (destroyFlag set)",
                {{"exporter_rank", peer}, {"exporter_comm", exporter->comm->value("address", json())},
                 {"exporter_destroy_flag", true}, {"imports", what}});
  }
  if (!imports.unknown.empty())
    report.not_checked(kRule, {ref}, imports.unknown.front() +
                                         (imports.unknown.size() > 1 ? " (and " + std::to_string(imports.unknown.size() - 1) + " more)" : ""));
  else if (fired == 0)
    report.passed(kRule);
}

}  // namespace nsc::audit
