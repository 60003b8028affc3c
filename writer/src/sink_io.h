// What every output sink shares (sink.cpp's descriptor sinks, gzip_sink.cpp's compressor): one-line
// error messages, writes that finish or say why not (keeping SIGPIPE from the host), and the
// monotonic clock for timeouts. Internal to the writer.
#pragma once

#include <time.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlpd::sink_detail {

// strerror_r's text for err.
std::string errno_text(int err);
// s with control characters replaced by '?': targets come from the user, messages stay on one line.
std::string one_line(const std::string& s);
// "mlpd: cannot write to 'NAME': ERROR; profiling stopped".
std::string write_failure(const std::string& name, int err);
// Writes everything or returns the errno that stopped it (0 when all was written). guard_sigpipe: a
// broken pipe's SIGPIPE never reaches the host (see sink_io.cpp).
int write_all(int fd, const uint8_t* data, size_t size, bool guard_sigpipe);
timespec monotonic_now();
int64_t ms_between(const timespec& a, const timespec& b);

}  // namespace mlpd::sink_detail
