#include "recorder.h"

#include <cpuid.h>
#include <pthread.h>
#include <sys/mman.h>
#include <x86intrin.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace nsc::recorder {
namespace {

constexpr uint32_t kDefaultThreads = 64;
constexpr uint32_t kDefaultRecords = 4096;
constexpr uint32_t kMaxRecords = 1u << 20;

RecorderHeader* g_region = nullptr;
uint32_t g_mask = 0;  // records_per_ring - 1

uint64_t monotonic_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
}

uint64_t realtime_ns() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return uint64_t(now.tv_sec) * 1000000000ull + uint64_t(now.tv_nsec);
}

// Invariant TSC (CPUID 0x80000007 EDX bit 8): constant rate, synchronised across cores.
bool invariant_tsc() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(0x80000000, &eax, &ebx, &ecx, &edx) || eax < 0x80000007) return false;
  __get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx);
  return (edx & (1u << 8)) != 0 && getenv("NCCLSCOPE_RECORDER_NO_TSC") == nullptr;
}

bool g_use_tsc = false;

inline uint64_t timestamp() { return g_use_tsc ? __rdtsc() : monotonic_ns(); }

// Sets the header's clock fields; with the TSC, measures its rate over ~2 ms once at load.
void choose_clock(RecorderHeader* header) {
  header->start_monotonic_ns = monotonic_ns();
  g_use_tsc = invariant_tsc();
  if (!g_use_tsc) {
    header->clock = kClockMonotonic;
    header->start_ticks = header->start_monotonic_ns;
    header->ticks_per_second = 1000000000ull;
    return;
  }
  uint64_t ns0 = monotonic_ns(), tsc0 = __rdtsc();
  uint64_t ns1 = ns0, tsc1 = tsc0;
  while (ns1 - ns0 < 2000000) {
    ns1 = monotonic_ns();
    tsc1 = __rdtsc();
  }
  header->clock = kClockTsc;
  header->start_monotonic_ns = ns0;
  header->start_ticks = tsc0;
  header->ticks_per_second = uint64_t((long double)(tsc1 - tsc0) * 1e9L / (long double)(ns1 - ns0));
}

uint32_t env_count(const char* name, uint32_t fallback, uint32_t limit) {
  const char* text = getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  unsigned long value = strtoul(text, nullptr, 10);
  if (value == 0 || value > limit) return fallback;
  return uint32_t(value);
}

uint32_t round_up_power_of_two(uint32_t value) {
  uint32_t power = 1;
  while (power < value) power <<= 1;
  return power;
}

void after_fork_in_child();

// Maps and initialises the region; runs once at load, before any thread records.
__attribute__((constructor)) void map_region() {
  uint32_t threads = env_count("NCCLSCOPE_RECORDER_THREADS", kDefaultThreads, 4096);
  uint32_t records = round_up_power_of_two(env_count("NCCLSCOPE_RECORDER_RECORDS", kDefaultRecords, kMaxRecords));
  size_t size = region_bytes(threads, records);
  // Private anonymous: lands in every core dump (coredump_filter bit 0), never shared.
  void* memory = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return;
  auto* header = static_cast<RecorderHeader*>(memory);
  header->schema_version = kSchemaVersion;
  header->header_size = sizeof(RecorderHeader);
  header->ring_header_size = sizeof(RingHeader);
  header->record_size = sizeof(Record);
  header->max_threads = threads;
  header->records_per_ring = records;
  header->region_size = size;
  header->self_address = reinterpret_cast<uint64_t>(memory);
  header->pid = getpid();
  header->start_realtime_ns = realtime_ns();
  choose_clock(header);
  g_mask = records - 1;
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  // The magic goes in last: a reader that finds it sees a complete header.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy(header->magic, kMagic, sizeof(kMagic));
  g_region = header;
}

RingHeader* ring_at(uint32_t index) {
  auto* base = reinterpret_cast<uint8_t*>(g_region);
  return reinterpret_cast<RingHeader*>(base + ring_offset(index, g_region->records_per_ring));
}

// Per-thread ring; `kNoRing` once a thread found none free (it then records nothing).
RingHeader* const kNoRing = reinterpret_cast<RingHeader*>(uintptr_t(1));
thread_local RingHeader* t_ring = nullptr;

// A forked child owns a copy of the region: it is now the child's, and the parent's other
// threads do not exist here (their rings are marked inherited, which readers skip).
void after_fork_in_child() {
  if (g_region == nullptr) return;
  g_region->pid = getpid();
  uint32_t rings = std::min(g_region->threads_claimed, g_region->max_threads);
  for (uint32_t index = 0; index < rings; ++index) {
    RingHeader* ring = ring_at(index);
    if (ring != t_ring) ring->in_use = kRingInherited;
  }
  if (t_ring != nullptr && reinterpret_cast<uintptr_t>(t_ring) > 1) t_ring->tid = int32_t(syscall(SYS_gettid));
}


RingHeader* claim_ring() {
  if (g_region == nullptr) return kNoRing;
  uint32_t index = __atomic_fetch_add(&g_region->threads_claimed, 1, __ATOMIC_RELAXED);
  if (index >= g_region->max_threads) {
    __atomic_fetch_add(&g_region->dropped_threads, 1, __ATOMIC_RELAXED);
    return kNoRing;
  }
  RingHeader* ring = ring_at(index);
  ring->tid = int32_t(syscall(SYS_gettid));
  prctl(PR_GET_NAME, ring->thread_name, 0, 0, 0);
  ring->thread_name[sizeof(ring->thread_name) - 1] = '\0';
  __atomic_store_n(&ring->in_use, 1, __ATOMIC_RELEASE);
  return ring;
}

}  // namespace

RecorderHeader* region() { return g_region; }

void record(RecordKind kind, RecordPhase phase, RecordApi api, int32_t aux, uint64_t a0,
            uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) {
  RingHeader* ring = t_ring;
  if (__builtin_expect(ring == nullptr, 0)) ring = t_ring = claim_ring();
  if (ring == kNoRing) return;
  uint64_t index = ring->written;  // only this thread writes it
  Record* slot = reinterpret_cast<Record*>(ring + 1) + (index & g_mask);
  // Invalidate the slot first so a reader never pairs a new body with an old sequence.
  __atomic_store_n(&slot->sequence, 0, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  slot->time = timestamp();
  slot->kind = kind;
  slot->phase = phase;
  slot->api = api;
  slot->aux = aux;
  slot->args[0] = a0;
  slot->args[1] = a1;
  slot->args[2] = a2;
  slot->args[3] = a3;
  slot->args[4] = a4;
  __atomic_store_n(&slot->sequence, index + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&ring->written, index + 1, __ATOMIC_RELEASE);
}

void mark_source(RecorderSource source) {
  if (g_region != nullptr) __atomic_fetch_or(&g_region->sources, uint32_t(source), __ATOMIC_RELAXED);
}

CommEntry* claim_comm(uint64_t comm_hash, int rank, int nranks, int nnodes, const char* name) {
  if (g_region == nullptr) return nullptr;
  uint32_t index = __atomic_fetch_add(&g_region->comms_claimed, 1, __ATOMIC_RELAXED);
  if (index >= kMaxComms) return nullptr;
  CommEntry* entry = &g_region->comms[index];
  entry->comm_hash = comm_hash;
  entry->rank = rank;
  entry->nranks = nranks;
  entry->nnodes = nnodes;
  if (name != nullptr) strncpy(entry->name, name, kCommNameSize - 1);
  __atomic_store_n(&entry->in_use, 1, __ATOMIC_RELEASE);
  return entry;
}

uint64_t fingerprint(const void* bytes, uint64_t size) {
  const auto* data = static_cast<const uint8_t*>(bytes);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 0x100000001b3ull;
  return hash;
}

}  // namespace nsc::recorder

extern "C" __attribute__((visibility("default"))) void* ncclscope_recorder_region(void) {
  return nsc::recorder::region();
}
