// Logging for both binaries, on spdlog: readable text on stderr by default, JSON lines on request,
// the systemd journal for the agent. Secrets are kept out by construction: runpool::Secret formats
// as a mask, and nothing here reveals it.
#pragma once

#include <memory>
#include <string>

#include <spdlog/spdlog.h>

namespace runpool {

enum class LogFormat { kText, kJson, kJournal };

// Parses "text", "json" or "journal"; false on anything else.
bool parse_log_format(const std::string& name, LogFormat* out);

// Replaces the default logger. `level` is an spdlog level name ("info", "debug", …).
void init_logging(LogFormat format, const std::string& level = "info");

// A formatter that writes one JSON object per line: {"ts","level","logger","msg"}.
std::unique_ptr<spdlog::formatter> make_json_formatter();

// The text formatter: "<UTC time> <level> <message>", control characters in the message shown as '?'.
std::unique_ptr<spdlog::formatter> make_text_formatter();

// Outside input made safe to quote in a one-line message: control characters shown as '?', cut
// to `max_bytes` with "…" (whole UTF-8 sequences kept). For errors that echo what they refuse.
std::string printable(std::string_view text, size_t max_bytes = 200);

// JSON string escaping (quotes, backslashes, control characters), shared with tests.
std::string json_escape(std::string_view s);

}  // namespace runpool
