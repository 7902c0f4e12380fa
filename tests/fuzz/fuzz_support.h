// Shared by the libFuzzer targets: turning the fuzzer's bytes into text, and an invariant check
// that aborts (a crash libFuzzer reports and keeps) instead of an assert compiled out of Release.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace runpool::fuzz {

inline std::string text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Splits the input at the first NUL: two independent texts for targets that take two inputs.
inline std::pair<std::string, std::string> split2(const std::string& s) {
  size_t nul = s.find('\0');
  if (nul == std::string::npos) return {s, ""};
  return {s.substr(0, nul), s.substr(nul + 1)};
}

[[noreturn]] inline void violated(const char* what, const char* file, int line) {
  std::fprintf(stderr, "invariant violated at %s:%d: %s\n", file, line, what);
  std::abort();
}

}  // namespace runpool::fuzz

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) ::runpool::fuzz::violated(#cond, __FILE__, __LINE__); \
  } while (0)
