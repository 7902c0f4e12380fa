#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>

#include "common/clock.h"

namespace runpool {
namespace {

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    std::string line = "{\"ts\":\"" + format_iso8601(msg.time) + "\",\"ts_ms\":" + std::to_string(ms) +
                       ",\"level\":\"" +
                       std::string(spdlog::level::to_string_view(msg.level).data(),
                                   spdlog::level::to_string_view(msg.level).size()) +
                       "\",\"logger\":\"" +
                       json_escape(std::string_view(msg.logger_name.data(), msg.logger_name.size())) +
                       "\",\"msg\":\"" + json_escape(std::string_view(msg.payload.data(), msg.payload.size())) +
                       "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

// Text lines: spdlog's pattern, then every control character but the line's own newline shown as
// '?'. A message quoting outside input (a corrupted item's id, a pool message's body, a value from
// the environment) must not forge log lines of its own or drive the terminal.
class TextFormatter final : public spdlog::formatter {
 public:
  TextFormatter()
      : inner_(std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v",
                                                           spdlog::pattern_time_type::utc)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    spdlog::memory_buf_t line;
    inner_->format(msg, line);
    size_t n = line.size();
    for (size_t i = 0; i < n; ++i) {
      auto c = static_cast<unsigned char>(line[i]);
      bool own_newline = i + 1 == n && c == '\n';
      if (!own_newline && ((c < 0x20 && c != '\t') || c == 0x7f)) line[i] = '?';
    }
    dest.append(line.data(), line.data() + n);
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<TextFormatter>(); }

 private:
  std::unique_ptr<spdlog::pattern_formatter> inner_;
};

}  // namespace

std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

std::string printable(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t n = text.size() <= max_bytes ? text.size() : max_bytes;
  // Never cut inside a UTF-8 sequence: back up to the start of the character at the cut.
  if (n < text.size()) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  }
  out.reserve(n + 3);
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
  }
  if (n < text.size()) out += "…";
  return out;
}

std::unique_ptr<spdlog::formatter> make_json_formatter() { return std::make_unique<JsonFormatter>(); }
std::unique_ptr<spdlog::formatter> make_text_formatter() { return std::make_unique<TextFormatter>(); }

bool parse_log_format(const std::string& name, LogFormat* out) {
  if (name == "text") *out = LogFormat::kText;
  else if (name == "json") *out = LogFormat::kJson;
  else if (name == "journal") *out = LogFormat::kJournal;
  else return false;
  return true;
}

void init_logging(LogFormat format, const std::string& level) {
  std::shared_ptr<spdlog::logger> logger;
  switch (format) {
    case LogFormat::kJournal:
      logger = std::make_shared<spdlog::logger>("runpool", std::make_shared<spdlog::sinks::systemd_sink_mt>());
      break;
    case LogFormat::kJson:
      logger = std::make_shared<spdlog::logger>("runpool", std::make_shared<spdlog::sinks::stderr_sink_mt>());
      logger->set_formatter(make_json_formatter());
      break;
    case LogFormat::kText:
      logger = std::make_shared<spdlog::logger>("runpool", std::make_shared<spdlog::sinks::stderr_sink_mt>());
      logger->set_formatter(make_text_formatter());
      break;
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace runpool
