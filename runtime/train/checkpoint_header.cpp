#include "runtime/train/checkpoint_header.h"

#include <cstdint>

#include "traces/error.h"
#include "traces/json_reader.h"

namespace protwin::rt {

namespace {
constexpr size_t kMagicLen = sizeof(kCheckpointMagic) - 1;
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 26;

nlohmann::json header_json(const CheckpointHeader& h) {
  return {{"format", "protwin.checkpoint"}, {"version", kCheckpointVersion},
          {"step", h.step},                 {"data_position", h.data_position},
          {"seed", h.seed},                 {"model_spec", h.model_spec},
          {"params", h.params},             {"payload_bytes", 3 * h.params * 4}};
}
}  // namespace

uint64_t fnv1a(uint64_t h, const char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t header_checksum(const CheckpointHeader& h) {
  const std::string text = header_json(h).dump();
  return fnv1a(kFnvBasis, text.data(), text.size());
}

std::string encode_checkpoint_header(const CheckpointHeader& h) {
  nlohmann::json j = header_json(h);
  j["fnv1a64"] = std::to_string(h.checksum);
  const std::string head = j.dump();
  const uint64_t len = head.size();
  std::string out(kCheckpointMagic, kMagicLen);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + head;
}

CheckpointHeader read_checkpoint_header(std::istream& in, uint64_t file_size, const std::string& path) {
  auto corrupt = [&](const std::string& why) { return Error(path + ": corrupt checkpoint: " + why); };
  std::string magic(kMagicLen, '\0');
  if (!in.read(magic.data(), static_cast<std::streamsize>(kMagicLen))) throw corrupt("bad magic (not a protwin checkpoint)");
  if (magic.rfind("PROTWIN-CKPT v", 0) == 0 && magic != kCheckpointMagic)
    throw Error(path + ": checkpoint format " + magic.substr(13, magic.size() - 14) + " from another protwin version (this one reads v" +
                std::to_string(kCheckpointVersion) + "; its checksum also covers the header); train again to write one");
  if (magic != kCheckpointMagic) throw corrupt("bad magic (not a protwin checkpoint)");
  unsigned char len_bytes[8];
  if (!in.read(reinterpret_cast<char*>(len_bytes), 8)) throw corrupt("bad header length");
  uint64_t head_len = 0;
  for (int i = 7; i >= 0; --i) head_len = head_len << 8 | len_bytes[i];
  const uint64_t head_end = kMagicLen + 8 + head_len;
  if (head_len > kMaxHeaderBytes || head_end > file_size) throw corrupt("bad header length");
  std::string head(head_len, '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(head_len))) throw corrupt("truncated header");

  const traces::JsonDocument doc = traces::JsonDocument::parse(head, path + " (header)");
  const traces::JsonNode root = doc.root();
  root.check_keys({"format", "version", "step", "data_position", "seed", "model_spec", "params", "payload_bytes",
                   "fnv1a64"});
  root.check_format("protwin.checkpoint", kCheckpointVersion, "checkpoint header");
  CheckpointHeader h;
  h.step = root.get_nonneg_int("step");
  h.data_position = root.get_nonneg_int("data_position");
  const nlohmann::json& seed = root.at("seed").raw();
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    root.at("seed").fail("expected an integer >= 0");
  h.seed = seed.get<uint64_t>();
  h.model_spec = root.at("model_spec").raw();
  if (!h.model_spec.is_object()) root.at("model_spec").fail("expected an object");
  // 12 bytes per parameter (params, m, v in fp32); the file's size must match below.
  h.params = root.get_int_in("params", 0, INT64_MAX / 12);
  if (root.get_int("payload_bytes") != 12 * h.params)
    root.at("payload_bytes").fail("expected 12 x params = " + std::to_string(12 * h.params));
  if (file_size - head_end < static_cast<uint64_t>(12 * h.params)) throw corrupt("truncated payload");
  if (file_size - head_end > static_cast<uint64_t>(12 * h.params)) throw corrupt("trailing bytes after the payload");
  const std::string sum = root.get_string("fnv1a64");
  size_t used = 0;
  try {
    h.checksum = std::stoull(sum, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != sum.size()) root.at("fnv1a64").fail("expected a decimal checksum, got \"" + sum + "\"");
  return h;
}

}  // namespace protwin::rt
