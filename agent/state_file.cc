#include "agent/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace runpool::agent {

void write_state_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int write_errno = errno;
  const bool closed = close(fd) == 0;
  if (!written || !closed || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(written ? errno : write_errno);
    unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + err);
  }
}

namespace {

std::optional<std::string> read_state(const std::string& path, bool own_only) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (own_only && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
    close(fd);
    return std::nullopt;
  }
  std::string out;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  const int err = errno;
  close(fd);
  if (n < 0) throw std::runtime_error("cannot read " + path + ": " + std::strerror(err));
  return out;
}

}  // namespace

std::optional<std::string> read_state_file(const std::string& path) { return read_state(path, false); }

std::optional<std::string> read_own_state_file(const std::string& path) { return read_state(path, true); }

}  // namespace runpool::agent
