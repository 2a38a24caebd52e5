// A process shaped like a JAX rank for the unwinder: THREADS threads (default 200), each sitting in
// pause() below DEPTH frames (default 8) of the generated large module (gen_big_module.py), at
// functions spread over its whole symbol table (a different chain per thread and per process).
//   waiter THREADS DEPTH SEED
// Prints "ready" once every thread is parked, then waits until killed.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern char* const big_module_chunks[];  // each chunk's first function (gen_big_module.py)
extern const uint64_t big_module_chunk_count;
extern const uint64_t big_module_per_chunk;

typedef void (*chain_fn)(void**);

enum { kFunctionBytes = 16, kMaxDepth = 64 };

struct chain {
  void* links[kMaxDepth + 1];  // DEPTH functions of the module, then pause()
};

static int depth = 8;
static pthread_barrier_t parked;

static uint64_t next_random(uint64_t* state) {  // xorshift64: the same chains for the same seed
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static void fill_chain(struct chain* chain, uint64_t seed) {
  uint64_t state = seed * 2654435761u + 88172645463325252ull;
  for (int i = 0; i < depth; ++i) {
    uint64_t function = next_random(&state) % (big_module_chunk_count * big_module_per_chunk);
    chain->links[i] = big_module_chunks[function / big_module_per_chunk] +
                      kFunctionBytes * (function % big_module_per_chunk);
  }
  chain->links[depth] = (void*)pause;
}

static void* park(void* arg) {
  struct chain* chain = arg;
  pthread_barrier_wait(&parked);
  ((chain_fn)chain->links[0])(&chain->links[1]);
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 200;
  depth = argc > 2 ? atoi(argv[2]) : 8;
  uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
  if (threads < 1 || depth < 1 || depth > kMaxDepth) {
    fprintf(stderr, "usage: waiter THREADS DEPTH(1-%d) SEED\n", kMaxDepth);
    return 64;
  }
  struct chain* chains = calloc((size_t)threads + 1, sizeof *chains);
  pthread_barrier_init(&parked, NULL, (unsigned)threads + 1);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 256 * 1024);
  for (int t = 0; t < threads; ++t) {
    fill_chain(&chains[t], seed * 1000003u + (uint64_t)t + 1);
    pthread_t thread;
    if (pthread_create(&thread, &attributes, park, &chains[t]) != 0) {
      perror("pthread_create");
      return 1;
    }
  }
  pthread_barrier_wait(&parked);
  printf("ready\n");
  fflush(stdout);
  fill_chain(&chains[threads], seed * 1000003u);
  ((chain_fn)chains[threads].links[0])(&chains[threads].links[1]);
  return 0;
}
