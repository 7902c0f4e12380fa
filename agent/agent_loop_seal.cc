// The instance's seal key (common/pool/sealed_field.h): read from its root-only file once, taken
// from the record at the first read after launch (kept in the file before it leaves the record,
// so a restart between the two loses nothing), and every token of the record opened with it.
#include <spdlog/spdlog.h>

#include "agent/agent_loop.h"
#include "agent/state_file.h"

namespace runpool::agent {
namespace {

std::optional<pool::SealKeys> read_key_file(const std::string& path) {
  if (path.empty()) return std::nullopt;
  auto text = read_state_file(path);
  if (!text) return std::nullopt;
  const size_t nl = text->find('\n');
  if (nl == std::string::npos) throw std::runtime_error(path + " is not a seal key file");
  pool::SealKeys k{text->substr(0, nl), Secret(text->substr(nl + 1, text->find('\n', nl + 1) - nl - 1))};
  if (!pool::keys_match(k.public_key, k.private_key)) throw std::runtime_error(path + " holds no matching key pair");
  return k;
}

}  // namespace

void AgentLoop::open_sealed() {
  if (!record_) return;
  if (!seal_.file_read) {
    try {
      seal_.keys = read_key_file(s_.seal_key_file);
      seal_.kept = seal_.keys.has_value();
      seal_.file_read = true;
    } catch (const std::exception& e) {
      spdlog::error("the instance's seal key: {}", e.what());
      seal_.file_read = true;  // the record may still hold it; otherwise every token is refused
    }
  }
  KeyStep k = key_step(seal_.keys, seal_.kept, *record_);
  if (!k.warning.empty()) spdlog::warn("{}", k.warning);
  if (k.store) {
    try {
      if (!s_.seal_key_file.empty()) {
        write_state_file(s_.seal_key_file, k.keys->public_key + "\n" + k.keys->private_key.reveal() + "\n");
      }
      seal_.kept = true;
    } catch (const std::exception& e) {
      // Left in the record (an agent started again can still take it), and tried again next read.
      seal_.kept = false;
      if (seal_.store_error != e.what()) spdlog::warn("cannot keep the instance's seal key yet: {}", e.what());
      seal_.store_error = e.what();
    }
  }
  seal_.keys = k.keys;
  if (k.take_open_key && seal_.kept) {
    pool::AgentReport r;
    r.take_open_key = true;
    if (report(r, "take_open_key") == Reported::kApplied) spdlog::info("the instance's seal key is taken from the record");
  }
  OpenedRecord o = open_record(std::move(*record_), seal_.keys);
  record_ = std::move(o.record);
  if (o.refused != seal_.last_refused && !o.refused.empty()) {
    for (const auto& why : o.refused) spdlog::warn("a token of generation {} is not used: {}", record_->generation, why);
  }
  seal_.last_refused = std::move(o.refused);
}

}  // namespace runpool::agent
