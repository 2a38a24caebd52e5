/* Native user code that crashes (issue 32, crash-native-segfault): loaded by
 * tests/scenarios/torch_crash_order.py through ctypes. Built on the GPU machine by
 * scripts/device-torch-multigroup.sh: gcc -O0 -g -shared -fPIC. */
#include <stddef.h>

struct sample { int label; float weight; };

/* A data-loader helper that trusts its input: given NULL it writes through it (SIGSEGV,
 * SEGV_MAPERR, fault address 0x4: the offset of weight). */
__attribute__((noinline)) void ncclscope_demo_normalize(struct sample *sample)
{
  sample->weight = sample->weight / 2.0f;
}

void ncclscope_demo_segfault(void)
{
  volatile struct sample *missing = NULL;
  ncclscope_demo_normalize((struct sample *)missing);
}
