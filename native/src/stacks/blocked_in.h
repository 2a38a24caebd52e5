// The one blocked-in classifier for frames unwound elsewhere (gdb's unwinder in the gdb
// extension, through the C API; a snapshot's frames in triage): same classes, same rules as
// the library's own stacks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nsc {

// blocked_in of each entry of `threads`: [{"name": "...", "frames": [{"function", "module",
// "pc", "offset"}, ...]}, ...] (the "threads" shape of docs/schema-state.md; a missing or null
// field counts as unknown). In order; "unknown" for an entry that is not an object.
std::vector<std::string> classify_json_threads(const nlohmann::json& threads);

// A frame's part in delivering the signal that stopped its thread (the SIGABRT that wrote the
// core, faulthandler re-raising it): delivery (pthread_kill, raise, gsignal, abort,
// faulthandler_*), or the sigreturn trampoline the kernel returns through (a glibc, ld.so or
// vDSO frame with no name, or restore_rt). `module`: the module's file name.
enum class SignalRole : unsigned char { none, delivery, trampoline };
SignalRole signal_role(const std::string& function, const std::string& module);

// How many innermost frames (roles innermost first) are the signal's: the delivery frames, then
// one trampoline. 0 when there are none, or when they would be every frame.
size_t signal_frame_count(const std::vector<SignalRole>& roles);

}  // namespace nsc
