// The C API: JSON requests in, JSON documents out; exceptions stop here.
#include "ncclscope/ncclscope.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/audit.h"
#include "audit/audit_text.h"
#include "nccl/kernel_args.h"
#include "snapshot/kernels_document.h"
#include "snapshot/numerics_document.h"
#include "snapshot/numerics_text.h"
#include "snapshot/state_document.h"
#include "snapshot/state_views.h"
#include "stacks/blocked_in.h"
#include "util/errors.h"
#include "util/input_file.h"
#include "util/json_access.h"
#include "util/strings.h"

struct nsc_error {
  int kind;
  std::string message;
};

namespace {

nsc_error* make_error(int kind, std::string message) { return new nsc_error{kind, std::move(message)}; }

char* copy_string(const std::string& text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy != nullptr) std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

std::vector<std::string> string_list(const nlohmann::json& request, const char* key) {
  std::vector<std::string> list;
  auto it = request.find(key);
  if (it == request.end() || it->is_null()) return list;
  return nsc::split_colon_list(it->get<std::string>());
}

nsc::ReadMemoryCallback wrap_callback(nsc_read_memory_fn read_memory, void* context) {
  return [read_memory, context](uint64_t address, void* buffer, uint64_t length, std::string* why) {
    char reason[256] = {0};
    if (read_memory(context, address, buffer, length, reason, sizeof reason) == 0) return true;
    *why = reason;
    return false;
  };
}

nsc::StateRequest state_request_from_json(const nlohmann::json& request, nsc_read_memory_fn read_memory,
                                          void* context) {
  nsc::StateRequest state;
  state.core_path = request.value("core", "");
  state.pid = request.value("pid", 0);
  state.executable = request.value("executable", "");
  state.sysroot = request.value("sysroot", "");
  state.solib_search_path = string_list(request, "solib_search_path");
  state.profile_path = string_list(request, "profile_path");
  state.force_mismatch = request.value("force_mismatch", false);
  state.freeze = request.value("freeze", false);
  state.stacks = request.value("stacks", true);
  state.progress = false;
  if (request.value("use_callback", false)) {
    if (read_memory == nullptr) throw nsc::UsageError("use_callback set but no read_memory callback given");
    state.read_memory = wrap_callback(read_memory, context);
    state.callback_regions = request.value("regions", nlohmann::json::array());
    state.callback_threads = request.value("threads", nlohmann::json::array());
    state.callback_architecture = request.value("architecture", "");
    state.callback_signal = request.value("signal", nlohmann::json());
  }
  return state;
}

nsc::NumericsLimits numerics_limits(const nlohmann::json& request) {
  nsc::NumericsLimits limits;
  limits.full_read_bytes = request.value("full_read_bytes", limits.full_read_bytes);
  limits.sample_chunks = request.value("sample_chunks", limits.sample_chunks);
  limits.chunk_bytes = std::max<uint64_t>(1, request.value("chunk_bytes", limits.chunk_bytes));
  return limits;
}

// "numerics": the buffers of each comm's newest launched collective, read through the
// debugger's host and device readers (a "state" decoded earlier may be passed back).
nlohmann::json run_numerics(const nlohmann::json& request, nsc_read_memory_fn read_memory, void* read_context,
                            nsc_read_memory_fn read_device, void* device_context) {
  nsc::NumericsRequest numerics;
  numerics.target = state_request_from_json(request, read_memory, read_context);
  numerics.target.stacks = false;
  if (read_device != nullptr) numerics.target.read_device_memory = wrap_callback(read_device, device_context);
  numerics.options.limits = numerics_limits(request);
  numerics.options.all_launched = request.value("all", false);
  const nlohmann::json state = request.value("state", nlohmann::json());
  nlohmann::json document = nsc::build_numerics_document(numerics, &state);
  if (request.value("text", false)) document["text"] = nsc::render_numerics_text(document);  // the one renderer
  return document;
}

// One process's audit: over the state document the front end decoded earlier in its session
// ("state"), else over one decoded now; "text": the one text renderer's output beside it.
nlohmann::json run_audit(const nlohmann::json& request, nsc_read_memory_fn read_memory, void* read_context) {
  nlohmann::json state = request.value("state", nlohmann::json());
  if (!state.is_object()) state = nsc::build_state_document(state_request_from_json(request, read_memory, read_context));
  std::string kind = nsc::json_member(nsc::json_member(state, "target"), "kind").is_string()
                         ? state["target"]["kind"].get<std::string>() : "snapshot";
  nlohmann::json document = nsc::audit::build_audit_document({{request.value("name", kind), kind, state}});
  if (request.value("text", false)) document["text"] = nsc::audit::render_audit_text(document, request.value("verbose", false));
  return document;
}

// The text of one view of a document the front end holds (gdb's nccl-state, nccl-comm,
// nccl-ring, nccl-proxy, nccl-threads, nccl-kernels): the same renderer as the CLI's.
std::string render_request(const nlohmann::json& request) {
  nsc::ViewOptions options;
  options.expand = request.value("expand", false);
  options.max_frames = request.value("frames", -1L);
  const nlohmann::json& context = nsc::json_member(request, "context");
  if (context.is_object()) options.document = &context;
  return nsc::render_view(request.value("view", std::string()), nsc::json_member(request, "data"), options);
}

}  // namespace

extern "C" {

int nsc_error_kind(const nsc_error* error) { return error ? error->kind : 0; }
const char* nsc_error_message(const nsc_error* error) { return error ? error->message.c_str() : ""; }
void nsc_error_free(nsc_error* error) { delete error; }
void nsc_string_free(char* string) { std::free(string); }
const char* nsc_version(void) { return NCCLSCOPE_VERSION; }

nsc_error* nsc_run_json(const char* request_json, nsc_read_memory_fn read_memory, void* read_context,
                        char** json_out) {
  return nsc_run_json_device(request_json, read_memory, read_context, nullptr, nullptr, json_out);
}

nsc_error* nsc_run_json_device(const char* request_json, nsc_read_memory_fn read_memory, void* read_context,
                               nsc_read_memory_fn read_device, void* device_context, char** json_out) {
  if (json_out == nullptr) return make_error(NSC_ERROR_USAGE, "json_out is NULL");
  *json_out = nullptr;
  try {
    nlohmann::json request = nlohmann::json::parse(request_json ? request_json : "");
    std::string command = request.value("command", "state");
    if (command == "classify-threads") {
      nlohmann::json classes = {{"blocked_in", nsc::classify_json_threads(request.value("threads", nlohmann::json::array()))}};
      *json_out = copy_string(classes.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return nullptr;
    }
    if (command == "read-file") {  // gdb's `set ncclscope snapshot FILE`: the one checked reader
      std::string path = request.value("path", std::string());
      nlohmann::json text = {{"text", nsc::read_regular_file(path, request.value("what", std::string("file")) + " " + path)}};
      *json_out = copy_string(text.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return nullptr;
    }
    if (command == "render") {
      nlohmann::json text = {{"text", render_request(request)}};
      *json_out = copy_string(text.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return nullptr;
    }
    if (command == "kernel-names" || command == "kernel-args") {  // decisions on what cuda-gdb showed
      nlohmann::json answer = command == "kernel-names" ? nsc::kernel_names_answer(request)
                                                        : nsc::kernel_args_answer(request);
      *json_out = copy_string(answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return nullptr;
    }
    if (command == "numerics") {
      nlohmann::json document = run_numerics(request, read_memory, read_context, read_device, device_context);
      *json_out = copy_string(document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return nsc::numerics_exit_code(document) != 0
                 ? make_error(NSC_ERROR_PARTIAL, "some buffers or fields were unreadable (see \"buffers\", \"errors\")")
                 : nullptr;
    }
    if (command == "audit") {
      nlohmann::json document = run_audit(request, read_memory, read_context);
      *json_out = copy_string(document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return document["summary"]["inputs_read_in_part"] != 0
                 ? make_error(NSC_ERROR_PARTIAL, "some memory or fields were unreadable: their rules are not checked")
                 : nullptr;
    }
    if (command != "state" && command != "kernel-view") throw nsc::UsageError("unknown command '" + command + "'");
    nlohmann::json document;
    if (command == "kernel-view" && request.contains("state")) {
      document = request["state"];  // decoded earlier in this session: join only
    } else {
      nsc::StateRequest state = state_request_from_json(request, read_memory, read_context);
      if (read_device != nullptr) state.read_device_memory = wrap_callback(read_device, device_context);
      document = nsc::build_state_document(state);
    }
    int exit_code = nsc::state_exit_code(document);
    if (command == "kernel-view") document = nsc::build_kernels_document(document, request.value("kernels", nlohmann::json::array()),
                                                                    request.value("other_kernels", nlohmann::json::array()));
    *json_out = copy_string(document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    if (exit_code != 0)
      return make_error(NSC_ERROR_PARTIAL, "some memory or fields were unreadable (see \"errors\")");
    return nullptr;
  } catch (const nsc::BadInput& error) {
    return make_error(NSC_ERROR_BAD_INPUT, error.what());
  } catch (const nsc::UsageError& error) {
    return make_error(NSC_ERROR_USAGE, error.what());
  } catch (const nlohmann::json::exception& error) {
    return make_error(NSC_ERROR_USAGE, std::string("request: ") + error.what());
  } catch (const std::exception& error) {
    return make_error(NSC_ERROR_BAD_INPUT, std::string("internal error: ") + error.what());
  } catch (...) {
    return make_error(NSC_ERROR_BAD_INPUT, "internal error");
  }
}

}  // extern "C"
