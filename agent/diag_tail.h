// Follows the runner's `_diag/Runner_*.log` files: the "Acknowledging runner request" line there is
// the first sign of a job (busy starts with it), before anything shows on stdout. Each Listener
// start writes a new file; lines already in the directory when the tail starts are skipped.
// The directory is the runner user's: nothing in it is read through a link (safe_path.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace runpool::agent {

class DiagTail {
 public:
  // `dir` is <runner root>/_diag; it may not exist yet. Follows the files named <prefix>…<suffix>
  // (the perf log: prefix "Runner", suffix ".perf").
  explicit DiagTail(std::string dir, std::string prefix = "Runner_", std::string suffix = ".log");

  // Complete lines appended since the last call (or since construction), file by file.
  std::vector<std::string> poll();

 private:
  struct FileState {
    uint64_t offset = 0;
    uint64_t inode = 0;   // a replaced file (new inode) starts over
    std::string partial;  // a line not yet ended by '\n'
  };
  std::vector<std::string> matching_files(int dir) const;

  std::string dir_;
  std::string prefix_;
  std::string suffix_;
  std::map<std::string, FileState> files_;
};

}  // namespace runpool::agent
