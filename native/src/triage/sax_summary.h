// The one reader of `ncclscope.state/1` for triage: straight from the JSON text (SAX),
// without building the document (the CLI's path, about twice as fast as parse-then-
// summarize for the 4,096-rank bench); summarize_state_document (process_view.h) replays a
// document already in memory through the same summarizer. The text is tokenized by
// util/json_scan.h; what it declines (malformed or unusual text) nlohmann's sax_parse reads.
#pragma once

#include <string>
#include <string_view>

#include "triage/process_view.h"

namespace nsc::triage {

// Fills *process and returns true for a `ncclscope.state/1` document. Returns
// false, with *schema set ("" when missing), for JSON of another kind. Throws
// nsc::BadInput "NAME: corrupt snapshot: parse error at line L, column C: ..."
// for text that is not JSON, and for a document of the wrong shape.
bool summarize_state_text(std::string_view text, const std::string& input_name, const std::string& kind,
                          ProcessView* process, std::string* schema);

}  // namespace nsc::triage
