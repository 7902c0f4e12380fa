#include "agent/pre_run.h"

#include <spdlog/spdlog.h>

#include "common/config.h"

namespace runpool::agent {
namespace {

// Length of the valid UTF-8 sequence at text[i], 0 when it is not one (overlong forms and
// surrogates included: DynamoDB takes valid UTF-8 only).
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;  // overlong
    if (b == 0xED) hi = 0x9F;  // surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;  // overlong
    if (b == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::vector<std::string> pre_run_environment(const PreRunOptions& o) {
  std::vector<std::string> env = {std::string("PATH=") + kPreRunPath, "HOME=/root",
                                  "RUNPOOL_INSTANCE_ID=" + o.instance_id, "RUNPOOL_POOL=" + o.pool};
  if (!o.resource_class.empty()) env.push_back("RUNPOOL_RESOURCE_CLASS=" + o.resource_class);
  return env;
}

std::string clean_text(std::string_view text, size_t max) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b == 0x1B) {  // ESC: drop the escape sequence (CSI: up to its final byte)
      ++i;
      if (i < text.size() && text[i] == '[') {
        ++i;
        while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7E)) ++i;
      }
      ++i;
      continue;
    }
    if (b == '\t' || b == '\n' || b == '\r') {
      if (!out.empty() && out.back() != ' ') out += ' ';
      ++i;
      continue;
    }
    if (b < 0x20 || b == 0x7F) {
      ++i;
      continue;
    }
    const size_t n = utf8_length(text, i);
    if (n == 0) {
      out += '?';
      ++i;
      continue;
    }
    // C1 controls (U+0080..U+009F) are control characters too.
    if (n == 2 && b == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      i += 2;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  const size_t first = out.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  out = out.substr(first, out.find_last_not_of(' ') - first + 1);
  if (out.size() <= max) return out;
  static const std::string kCut = "…";
  if (max < kCut.size()) return "";
  size_t keep = max - kCut.size();
  while (keep > 0 && (static_cast<unsigned char>(out[keep]) & 0xC0) == 0x80) --keep;  // a character's start
  return out.substr(0, keep) + kCut;
}

std::string last_line(std::string_view output) {
  size_t end = output.size();
  while (end > 0) {
    size_t start = output.rfind('\n', end - 1);
    start = start == std::string_view::npos ? 0 : start + 1;
    std::string line = clean_text(output.substr(start, end - start), output.size());
    if (!line.empty()) return line;
    end = start == 0 ? 0 : start - 1;
  }
  return "";
}

PreRunResult pre_run_result(const CommandOutcome& c, Duration timeout, Duration took) {
  PreRunResult r;
  r.output = c.output;
  r.cancelled = c.cancelled;
  std::string what;
  if (c.timed_out) {
    r.status = pool::PreRun::kTimeout;
    what = "timed out after " + format_duration(timeout);
  } else if (c.status.signaled) {
    r.status = pool::PreRun::kFailed;
    what = "killed by signal " + std::to_string(c.status.code);
  } else if (c.exit_code != 0) {
    r.status = pool::PreRun::kFailed;
    what = "exit " + std::to_string(c.exit_code);
  } else {
    // Success says how long it took, not what it printed: its output is the log's business.
    r.status = pool::PreRun::kOk;
    r.detail = "exit 0 after " + format_duration(std::chrono::duration_cast<std::chrono::seconds>(took));
    return r;
  }
  const std::string line = last_line(c.output);
  r.detail = clean_text(line.empty() ? what : what + ": " + line, kPreRunDetailMax);
  return r;
}

PreRunResult run_pre_run_script(const PreRunOptions& o, const std::function<void()>& alive,
                                const std::function<bool()>& cancelled) {
  SpawnOptions spawn;
  spawn.argv = {o.script};
  spawn.env = pre_run_environment(o);
  spawn.cwd = "/";
  spdlog::info("pre-run script {}: starting (timeout {})", o.script, format_duration(o.timeout));
  const auto start = std::chrono::steady_clock::now();
  PreRunResult r;
  try {
    CommandOutcome c = run_command(spawn, o.timeout, alive, kPreRunOutputTail, cancelled);
    r = pre_run_result(c, o.timeout, std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - start));
  } catch (const std::exception& e) {  // not executable, missing, …
    r.status = pool::PreRun::kFailed;
    r.detail = clean_text(e.what(), kPreRunDetailMax);
    spdlog::error("pre-run script {}: {}", o.script, r.detail);
    return r;
  }
  if (!r.output.empty()) {
    spdlog::info("pre-run script output (its last {} bytes at most):", kPreRunOutputTail);
    size_t start_at = 0;
    while (start_at < r.output.size()) {
      size_t end = r.output.find('\n', start_at);
      if (end == std::string::npos) end = r.output.size();
      spdlog::info("pre-run| {}", clean_text(r.output.substr(start_at, end - start_at), kPreRunOutputTail));
      start_at = end + 1;
    }
  }
  if (r.cancelled) spdlog::warn("pre-run script {}: ended early, the agent is stopping", o.script);
  else if (r.failed()) spdlog::error("pre-run script {}: {}: {}", o.script, pool::pre_run_name(r.status), r.detail);
  else spdlog::info("pre-run script {}: ok, {}", o.script, r.detail);
  return r;
}

}  // namespace runpool::agent
