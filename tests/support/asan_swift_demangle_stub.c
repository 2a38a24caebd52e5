/* Preloaded after the ASan runtime into gdb by scripts/asan-tests.sh.
 *
 * gdb 13 links libp11-kit, whose constructor calls newlocale() (holding glibc's
 * locale write lock); the first malloc in there starts the preloaded ASan
 * runtime, which looks up swift_demangle with dlsym and, when it is missing,
 * clears the error with dlerror(). dlerror() translates its message (gettext),
 * which takes the same locale lock for reading: gdb hangs before main. With the
 * symbol defined, dlsym succeeds, dlerror() has no message and takes no lock.
 * Returning NULL tells the sanitizer the name was not demangled. */
#include <stddef.h>
#include <stdint.h>

char *swift_demangle(const char *mangled, size_t length, char *output, size_t *output_size,
                     uint32_t flags) {
  (void)mangled; (void)length; (void)output; (void)output_size; (void)flags;
  return NULL;
}
