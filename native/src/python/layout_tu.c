/* Compiled with -g against the headers of one CPython tag (with Py_BUILD_CORE)
 * so that its DWARF holds the interpreter structs the Python decoder reads;
 * `ncclscope layout python` turns that DWARF into a layout profile. Not part
 * of the library: scripts/python-layout-from-headers.sh builds it. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_pystate.h>
#include <internal/pycore_runtime.h>

/* One object per root type: GCC emits debug info only for types in use. */
_PyRuntimeState *nsc_root_runtime;
PyInterpreterState *nsc_root_interpreter;
PyThreadState *nsc_root_thread;
struct _PyInterpreterFrame *nsc_root_frame;
PyCodeObject *nsc_root_code;
PyASCIIObject *nsc_root_ascii;
PyCompactUnicodeObject *nsc_root_compact;
PyBytesObject *nsc_root_bytes;
PyVarObject *nsc_root_var;
enum _frameowner nsc_root_owner;
#if PY_VERSION_HEX < 0x030D0000
_PyCFrame *nsc_root_cframe;
#endif
