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

std::unique_ptr<spdlog::formatter> make_json_formatter() { return std::make_unique<JsonFormatter>(); }

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
      logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %^%l%$ %v", spdlog::pattern_time_type::utc);
      break;
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace runpool
