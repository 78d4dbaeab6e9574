// A JSON document whose one big top-level array is written element by element, with the same bytes
// as nlohmann's dump of the whole document (plus a final newline): the document without the
// array's elements (its frame) is dumped, and the elements are written where the empty array was.
// So a plan, report or trace of millions of ops is never one JSON document in memory.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "traces/file_io.h"

namespace protwin::traces {

class ArraySplicer {
 public:
  // `frame`: the document with the array under top-level `key` empty; `indent`: as for
  // nlohmann::json::dump, -1 (compact) or 1. Writes the frame's text up to the array.
  ArraySplicer(AtomicFileWriter& out, const nlohmann::json& frame, const std::string& key, int indent);
  // The next element.
  void add(const nlohmann::json& element);
  // The frame's text after the array (call once, after the last element).
  void finish();

 private:
  AtomicFileWriter& out_;
  std::string rest_;  // the frame's text from the array's closing bracket on
  int indent_;
  bool first_ = true;
};

}  // namespace protwin::traces
