"""Checks an ncclscope.state/1 document once, when it is loaded from a file, so that the
renderers may trust its shape (docs/schema-state.md). Pure Python (no gdb import).

check_state_document(document) returns None, or one line naming the first bad field:
"communicators[0].channels[1].ring.user_ranks[0]: expected an integer or null, got a string".
Unknown keys are allowed (newer writers add keys); missing keys are allowed (the renderers
show them as n/a); a known key of the wrong type is not.
"""

SCHEMA = "ncclscope.state/1"  # a copy of kStateSchema in native/src/util/schemas.h
MAX_DEPTH = 64  # deeper than any real document: garbage, refused before it is walked


class _Nullable:
    def __init__(self, spec):
        self.spec = spec


class _ListOf:
    def __init__(self, spec):
        self.spec = spec


class _MapOf:
    def __init__(self, spec):
        self.spec = spec


def nullable(spec):
    return _Nullable(spec)


def list_of(spec):
    return _ListOf(spec)


def map_of(spec):
    return _MapOf(spec)


INT, STR, BOOL, ANY = "integer", "string", "boolean", "any"
OPT_INT, OPT_STR, OPT_BOOL = nullable(INT), nullable(STR), nullable(BOOL)

REASONS = map_of(OPT_STR)
FRAME = {"pc": OPT_STR, "function": OPT_STR, "module": OPT_STR, "offset": OPT_INT}
THREAD = {"tid": OPT_INT, "name": OPT_STR, "state": OPT_STR, "frames": nullable(list_of(FRAME)),
          "blocked_in": OPT_STR, "syscall": OPT_STR, "error": OPT_STR}
SUB = {"channel": OPT_INT, "peer": OPT_INT, "nsteps": OPT_INT, "nbytes": OPT_INT, "base": OPT_INT,
       "posted": OPT_INT, "received": OPT_INT, "transmitted": OPT_INT, "done": OPT_INT, "end": OPT_INT,
       "send": OPT_BOOL, "transport": OPT_STR}
PROXY_OP = {"address": OPT_STR, "op_count": OPT_INT, "collective": OPT_STR, "pattern": OPT_STR,
            "protocol": OPT_STR, "state": OPT_INT, "done": OPT_INT, "nsubs": OPT_INT,
            "subs": nullable(list_of(SUB))}
CHANNEL = {"id": OPT_INT,
           "ring": nullable({"prev": OPT_INT, "next": OPT_INT, "index": OPT_INT,
                             "user_ranks": nullable(list_of(OPT_INT))}),
           "tree": nullable({"up": OPT_INT, "depth": OPT_INT, "down": nullable(list_of(OPT_INT))})}
COMMUNICATOR = {
    "address": OPT_STR, "comm_hash": OPT_STR, "rank": OPT_INT, "nranks": OPT_INT, "cuda_dev": OPT_INT,
    "nvml_dev": OPT_INT, "bus_id": OPT_STR, "node": OPT_INT, "nnodes": OPT_INT, "local_rank": OPT_INT,
    "local_ranks": OPT_INT, "nchannels": OPT_INT, "p2p_nchannels": OPT_INT,
    "seq_launched": nullable(map_of(OPT_INT)), "coll_op_count": OPT_INT, "op_count": OPT_INT,
    "p2p_op_count": nullable({"total": OPT_INT, "per_channel": nullable(list_of(OPT_INT)),
                              "unavailable": REASONS}),
    "health": nullable(map_of(nullable(ANY))),
    "channels": nullable(list_of(CHANNEL)),
    "proxy_ops": nullable(list_of(PROXY_OP)),
    "planned": nullable({"colls": nullable(list_of(dict)), "p2p": nullable(list_of(dict)),
                         "n_tasks_coll": OPT_INT, "n_tasks_p2p": OPT_INT, "unlaunched_plans": OPT_INT,
                         "in_group": OPT_BOOL}),
    "unavailable": REASONS,
    "warnings": list_of(STR),
    "library": nullable({"index": OPT_INT, "path": OPT_STR, "version": OPT_STR, "build_id": OPT_STR,
                         "layout_source": OPT_STR}),
}
PROBLEM = map_of(nullable(ANY))
LIBRARY = {"index": OPT_INT, "version": OPT_STR, "library": OPT_STR, "local_file": OPT_STR,
           "build_id": OPT_STR, "layout_source": OPT_STR, "build_id_mismatch": OPT_BOOL,
           "communicators": OPT_INT, "unavailable": OPT_STR}
DOCUMENT = {
    "schema": STR,
    "tool": nullable(dict),
    "target": nullable({"kind": OPT_STR, "path": OPT_STR, "pid": OPT_INT, "executable": OPT_STR}),
    "host": nullable(dict),
    "nccl": nullable({"version": OPT_STR, "library": OPT_STR, "local_file": OPT_STR, "build_id": OPT_STR,
                      "layout_source": OPT_STR, "build_id_mismatch": OPT_BOOL,
                      "libraries": nullable(list_of(LIBRARY)),
                      "last_error": nullable({"text": OPT_STR, "address": OPT_STR, "unavailable": OPT_STR})}),
    "discovery": nullable({"method": OPT_STR, "regions_scanned": OPT_INT, "bytes_scanned": OPT_INT,
                           "candidates": OPT_INT, "rejected": list_of(map_of(nullable(ANY))),
                           "registry_note": OPT_STR, "skipped_regions": list_of(dict),
                           "attribution": list_of(dict),
                           "libraries": list_of({"index": OPT_INT, "library": OPT_STR,
                                                 "discovery": nullable(dict)})}),
    "communicators": list_of(COMMUNICATOR),
    "threads": list_of(THREAD),
    "recorder": nullable(ANY),
    "fatal_signal": nullable({"name": OPT_STR, "text": OPT_STR, "origin": OPT_STR, "failure": OPT_BOOL,
                              "tid": OPT_INT, "site": nullable(dict)}),
    "fatal_signal_unavailable": OPT_STR,
    "warnings": list_of(PROBLEM),
    "errors": list_of(PROBLEM),
}


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _expected(spec):
    if isinstance(spec, _Nullable):
        return _expected(spec.spec) + " or null"
    if isinstance(spec, _ListOf):
        return "a list"
    if isinstance(spec, (_MapOf, dict)) or spec is dict:
        return "an object"
    return {INT: "an integer", STR: "a string", BOOL: "true or false", ANY: "any value"}[spec]


def _join(path, key):
    return "%s.%s" % (path, key) if path else str(key)


def _check(value, spec, path, depth):
    """The first problem as (path, text), or None."""
    if depth > MAX_DEPTH:
        return path, "nested deeper than %d levels" % MAX_DEPTH
    if isinstance(spec, _Nullable):
        if value is None:
            return None
        problem = _check(value, spec.spec, path, depth)
        if problem and problem[0] == path:  # this value itself, not one inside it
            return path, "expected %s, got %s" % (_expected(spec), _type_name(value))
        return problem
    if spec == ANY:
        return _check_any(value, path, depth)
    if spec == INT:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif spec == STR:
        ok = isinstance(value, str)
    elif spec == BOOL:
        ok = isinstance(value, bool)
    elif isinstance(spec, _ListOf):
        ok = isinstance(value, list)
    else:
        ok = isinstance(value, dict)
    if not ok:
        return path, "expected %s, got %s" % (_expected(spec), _type_name(value))
    if isinstance(spec, _ListOf):
        for index, item in enumerate(value):
            problem = _check(item, spec.spec, "%s[%d]" % (path, index), depth + 1)
            if problem:
                return problem
    elif isinstance(spec, _MapOf):
        for key, item in value.items():
            problem = _check(item, spec.spec, _join(path, key), depth + 1)
            if problem:
                return problem
    elif isinstance(spec, dict):
        for key, item_spec in spec.items():
            if key in value:
                problem = _check(value[key], item_spec, _join(path, key), depth + 1)
                if problem:
                    return problem
    elif spec is dict:
        return _check_any(value, path, depth)
    return None


def _check_any(value, path, depth):
    """Any JSON value, but not nested without end."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            problem = _check_any(item, "%s[%d]" % (path, index), depth + 1) if depth < MAX_DEPTH else (
                path, "nested deeper than %d levels" % MAX_DEPTH)
            if problem:
                return problem
    elif isinstance(value, dict):
        for key, item in value.items():
            problem = _check_any(item, _join(path, key), depth + 1) if depth < MAX_DEPTH else (
                path, "nested deeper than %d levels" % MAX_DEPTH)
            if problem:
                return problem
    return None


def check_state_document(document):
    """None when `document` is an ncclscope.state/1 document the commands can show, else
    one line: "FIELD: expected ..., got ..." (the top level is named "document")."""
    if not isinstance(document, dict):
        return "document: expected an object, got %s" % _type_name(document)
    schema = document.get("schema")
    if schema != SCHEMA:
        shown = ("\"%s\"" % schema[:40]) if isinstance(schema, str) else _type_name(schema)
        if schema is None and "schema" not in document:
            shown = "missing"
        return "schema: %s is not %s (a newer or foreign document?)" % (shown, SCHEMA)
    problem = _check(document, DOCUMENT, "", 0)
    if problem is None:
        return None
    path, text = problem
    if len(path) > 120:
        path = path[:60] + "..." + path[-40:]
    return "%s: %s" % (path or "document", text)
