#include "traces/json_splice.h"

#include "traces/error.h"

namespace protwin::traces {

ArraySplicer::ArraySplicer(AtomicFileWriter& out, const nlohmann::json& frame, const std::string& key, int indent)
    : out_(out), indent_(indent) {
  PROTWIN_ASSERT(indent == -1 || indent == 1, "array splice: indent ", indent, " (only -1 and 1)");
  const std::string text = frame.dump(indent) + "\n";
  const std::string empty = indent < 0 ? "\"" + key + "\":[]" : "\n \"" + key + "\": []";
  const size_t at = text.find(empty);
  PROTWIN_ASSERT(at != std::string::npos, "array splice: no empty top-level array \"", key, "\" in the frame");
  const size_t close = at + empty.size() - 1;  // the ']'
  out_.write(text.substr(0, close));
  rest_ = text.substr(close);
}

void ArraySplicer::add(const nlohmann::json& element) {
  if (indent_ < 0) {
    out_.write(first_ ? element.dump() : "," + element.dump());
  } else {
    // dump(1) puts an element of a top-level array two spaces in, and every line of it.
    const std::string e = element.dump(1);
    std::string indented = first_ ? "\n  " : ",\n  ";
    indented.reserve(indented.size() + e.size() * 2);
    for (char c : e) {
      indented += c;
      if (c == '\n') indented += "  ";
    }
    out_.write(indented);
  }
  first_ = false;
}

void ArraySplicer::finish() { out_.write(indent_ < 0 || first_ ? rest_ : "\n " + rest_); }

}  // namespace protwin::traces
