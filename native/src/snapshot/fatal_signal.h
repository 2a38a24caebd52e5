// The signal that ended a process, from its core (issue 32): what it was (NT_SIGINFO: number,
// code, sender, fault address), the thread that took it (the first NT_PRSTATUS) and what that
// thread's frames say: a fault in its own code, abort() (std::terminate, PyTorch's watchdog),
// or a signal another process sent (a capture's `kill -ABRT`), which is no failure of its own.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "target/target.h"

namespace nsc {

// The "fatal_signal" object of docs/schema-state.md, or null when `signal` is nullopt.
// `threads`: the document's "threads" (frames innermost first); `own_pid`: the process's pid.
nlohmann::json fatal_signal_json(const std::optional<SignalInfo>& signal, int own_pid, const nlohmann::json& threads);

// Adds the C++ exception the signal's thread died of (stacks/cxx_exception.h: "exception") to a
// fatal_signal object whose thread went through std::terminate, its sentence first in "text".
void attach_in_flight_exception(const nlohmann::json& exception, nlohmann::json* fatal_signal);

// "SIGSEGV", "SIGABRT", ...; "signal 42" for one without a name here.
std::string signal_name(int signo);
// "SEGV_MAPERR", "SI_USER", "SI_TKILL", ...; "code N" otherwise.
std::string signal_code_name(int signo, int code);

}  // namespace nsc
