/* ncclscope C API: coarse calls that return JSON documents.
 *
 * Used by the gdb extension through ctypes (no Python ABI coupling) and by any
 * other front end. No C++ exception ever crosses this boundary: every call
 * returns NULL on success or an nsc_error the caller frees.
 */
#ifndef NCCLSCOPE_NCCLSCOPE_H
#define NCCLSCOPE_NCCLSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nsc_error nsc_error;

/* Error kinds; they map onto the CLI exit codes. */
enum nsc_error_kind {
  NSC_ERROR_PARTIAL = 1,   /* some memory or fields were unreadable */
  NSC_ERROR_BAD_INPUT = 2, /* the core/pid/library/profile cannot be used */
  NSC_ERROR_USAGE = 64,    /* the request itself is malformed */
};

int nsc_error_kind(const nsc_error *error);
const char *nsc_error_message(const nsc_error *error);
void nsc_error_free(nsc_error *error);

/* Memory supplied by the front end (gdb, cuda-gdb) for addresses the library
 * cannot read itself. Returns 0 on success; on failure writes a short reason
 * ("not saved in core", "Cannot access memory") into why (NUL-terminated). */
typedef int (*nsc_read_memory_fn)(void *context, uint64_t address, void *buffer,
                                  uint64_t length, char *why, size_t why_size);

/* Runs one request and returns its JSON document in *json_out (free it with
 * nsc_string_free). The request is a JSON object, and these are all its commands
 * ("command" left out means "state"; any other is refused, NSC_ERROR_USAGE):
 *   {"command":"state",                     one process's ncclscope.state/1 document
 *    "core":"/path/core" | "pid":1234,      the target
 *    "executable":"/path/exe",              optional
 *    "sysroot":"DIR", "solib_search_path":"DIR:DIR", "profile_path":"DIR:DIR",
 *    "force_mismatch":false, "freeze":false,
 *    "use_callback":false,                  read through read_memory instead; then also
 *    "regions":[{"start":"0x..","end":"0x..","path":..,"file_offset":"0x.."}...],
 *    "threads":[{"tid":N,"name":"..","registers":{"rip":"0x..","rsp":"0x..",...}}...],
 *    "architecture":"i386:x86-64"}          x86-64 registers of each thread's frame 0: the
 *                                           library unwinds the stacks over read_memory
 * read_memory may be NULL. A document is returned even with a PARTIAL error.
 * {"command":"classify-threads", "threads":[{"name":..., "frames":[{"function",
 * "module", "pc"}...]}...]} returns {"blocked_in":["cudaStreamSynchronize", ...]}:
 * the library's classes (docs/schema-state.md) for frames a debugger unwound.
 * {"command":"read-file", "path":"/x/rank0.json", "what":"snapshot"} returns
 *   {"text": the file's bytes}: only a regular file (or /proc), bounded by its size and a cap;
 *   anything else is one line naming it (gdb's `set ncclscope snapshot` reads through this).
 * {"command":"render", "view":"state"|"comm"|"ring"|"proxy"|"threads"|"kernels",
 * "data":{...}, "context":{state document}, "expand":false, "frames":N} returns
 * {"text":"..."}: the library's one text of that view (the CLI prints the same).
 * {"command":"audit", "state":{...}, "name":"rank0", "text":true} returns the
 * ncclscope.audit/1 document (docs/audit.md) over that state document (without
 * "state": over one decoded from the target as above), its text in "text".
 * {"command":"numerics", ...target as above..., "state":{...}, "all":false,
 * "text":true, "full_read_bytes":N, "sample_chunks":N, "chunk_bytes":N} returns the
 * ncclscope.numerics/1 document of each communicator's newest launched collective's
 * buffers (with "all": every launched one), its text in "text"; device memory through
 * nsc_run_json_device's read_device. PARTIAL when some buffers were unreadable. */
nsc_error *nsc_run_json(const char *request_json, nsc_read_memory_fn read_memory,
                        void *read_context, char **json_out);

/* Like nsc_run_json with a second reader for memory as the GPU sees it (under
 * cuda-gdb: @global reads); read_device may be NULL. With it, "state" gives each
 * communicator a "device" section (connection step counters), and the command
 *   {"command":"kernel-view", ...target as above..., "kernels":[...]}
 * joins the kernels the debugger saw (docs/kernels.md) with them and returns an
 * ncclscope.kernels/1 document; given "state" (a state document decoded with a
 * device reader), kernel-view only joins and reads no memory. The decisions on what
 * cuda-gdb showed are the library's (docs/kernels.md):
 *   {"command":"kernel-names", "names":["ncclDevKernel_...()", ...]}
 *     -> {"nccl":[{"kernel_name","collective","op","datatype","algorithm","protocol"} | null]}
 *   {"command":"kernel-args", "shared_words":[u64 | "0x..."], "dev_comms":["0x..."],
 *    "nblocks":24, "args_layout":{"comm_offset","channel_mask_offset","size"}}
 *     -> {"found":true, "args_shared_offset", "dev_comm", "channel_mask", "channel_id_offset"}
 *      | {"found":false, "reason"}
 * and each kernel-view kernel carries the raw material: cuda-gdb's row, "nblocks",
 * "args" (the kernel-args answer), per block "function" (`info symbol $pc`) and
 * "channel_word" (the shared word at channel_id_offset). */
nsc_error *nsc_run_json_device(const char *request_json, nsc_read_memory_fn read_memory,
                               void *read_context, nsc_read_memory_fn read_device,
                               void *device_context, char **json_out);

void nsc_string_free(char *string);

/* "0.1.0" */
const char *nsc_version(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCLSCOPE_NCCLSCOPE_H */
