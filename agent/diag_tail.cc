#include "agent/diag_tail.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

namespace runpool::agent {

namespace fs = std::filesystem;

DiagTail::DiagTail(std::string dir, std::string prefix, std::string suffix)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), suffix_(std::move(suffix)) {
  for (const auto& name : matching_files()) {
    struct stat st {};
    if (stat((fs::path(dir_) / name).c_str(), &st) != 0) continue;
    files_[name].offset = static_cast<uint64_t>(st.st_size);
    files_[name].inode = static_cast<uint64_t>(st.st_ino);
  }
}

std::vector<std::string> DiagTail::matching_files() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix_, 0) == 0 && name.size() >= prefix_.size() + suffix_.size() && name.ends_with(suffix_) &&
        it->is_regular_file(ec)) {
      out.push_back(name);
    }
  }
  std::sort(out.begin(), out.end());  // names carry their start time: oldest first
  return out;
}

std::vector<std::string> DiagTail::poll() {
  std::vector<std::string> lines;
  for (const auto& name : matching_files()) {
    FileState& st = files_[name];
    const fs::path path = fs::path(dir_) / name;
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    in.seekg(0, std::ios::end);
    const auto size = static_cast<uint64_t>(in.tellg());
    if (size < st.offset || static_cast<uint64_t>(info.st_ino) != st.inode) {  // truncated or replaced: start over
      st.inode = static_cast<uint64_t>(info.st_ino);
      st.offset = 0;
      st.partial.clear();
    }
    if (size == st.offset) continue;
    in.seekg(static_cast<std::streamoff>(st.offset));
    std::string chunk(size - st.offset, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<size_t>(in.gcount()));
    st.offset += chunk.size();
    st.partial += chunk;
    size_t start = 0;
    for (size_t nl = st.partial.find('\n'); nl != std::string::npos; nl = st.partial.find('\n', start)) {
      lines.push_back(st.partial.substr(start, nl - start));
      start = nl + 1;
    }
    st.partial.erase(0, start);
  }
  return lines;
}

}  // namespace runpool::agent
