#include "agent/diag_tail.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "agent/safe_path.h"

namespace runpool::agent {

namespace fs = std::filesystem;

namespace {

// The runner user owns `_diag` and everything in it: the directory is opened from the runner
// root's descriptor and each file from the directory's, never through a link (a log named like
// the runner's but linked to a file only root may read), and only a regular file is read.
Fd open_dir(const std::string& dir) {
  const fs::path p(dir);
  Fd parent(open_trusted_dir(p.parent_path().string()));
  if (!parent.ok()) return Fd();
  return Fd(openat(parent.get(), p.filename().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

Fd open_log(int dir, const std::string& name, struct stat& st) {
  Fd fd(openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Fd();
  return fd;
}

}  // namespace

DiagTail::DiagTail(std::string dir, std::string prefix, std::string suffix)
    : dir_(std::move(dir)), prefix_(std::move(prefix)), suffix_(std::move(suffix)) {
  Fd d = open_dir(dir_);
  if (!d.ok()) return;
  for (const auto& name : matching_files(d.get())) {
    struct stat st {};
    if (!open_log(d.get(), name, st).ok()) continue;
    files_[name].offset = static_cast<uint64_t>(st.st_size);
    files_[name].inode = static_cast<uint64_t>(st.st_ino);
  }
}

std::vector<std::string> DiagTail::matching_files(int dir) const {
  std::vector<std::string> out;
  int dup_fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
  DIR* d = dup_fd >= 0 ? fdopendir(dup_fd) : nullptr;
  if (!d) {
    if (dup_fd >= 0) close(dup_fd);
    return out;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix_, 0) == 0 && name.size() >= prefix_.size() + suffix_.size() && name.ends_with(suffix_)) {
      out.push_back(name);
    }
  }
  closedir(d);
  std::sort(out.begin(), out.end());  // names carry their start time: oldest first
  return out;
}

std::vector<std::string> DiagTail::poll() {
  std::vector<std::string> lines;
  Fd d = open_dir(dir_);
  if (!d.ok()) return lines;
  for (const auto& name : matching_files(d.get())) {
    struct stat info {};
    Fd fd = open_log(d.get(), name, info);
    if (!fd.ok()) continue;
    FileState& st = files_[name];
    const auto size = static_cast<uint64_t>(info.st_size);
    if (size < st.offset || static_cast<uint64_t>(info.st_ino) != st.inode) {  // truncated or replaced: start over
      st.inode = static_cast<uint64_t>(info.st_ino);
      st.offset = 0;
      st.partial.clear();
    }
    if (size == st.offset) continue;
    std::string chunk(size - st.offset, '\0');
    ssize_t n = pread(fd.get(), chunk.data(), chunk.size(), static_cast<off_t>(st.offset));
    chunk.resize(n > 0 ? static_cast<size_t>(n) : 0);
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
