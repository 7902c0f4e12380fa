#include "common/metrics/file_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace runpool::metrics {

void FileSink::emit(const Event& event) {
  auto line = format_or_warn(event);
  if (!line) return;
  line->push_back('\n');
  int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    spdlog::warn("metrics: cannot open {}: {}", path_, std::strerror(errno));
    return;
  }
  // One write per line: with O_APPEND the line lands whole at the end of the file.
  ssize_t n;
  do {
    n = ::write(fd, line->data(), line->size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    spdlog::warn("metrics: cannot write to {}: {}", path_, std::strerror(errno));
  } else if (static_cast<size_t>(n) != line->size()) {
    spdlog::warn("metrics: short write to {} ({} of {} bytes)", path_, n, line->size());
  }
  if (::close(fd) != 0) spdlog::warn("metrics: closing {}: {}", path_, std::strerror(errno));
}

}  // namespace runpool::metrics
