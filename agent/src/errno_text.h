// errno's message as a std::string, for the command port's error texts (thread-safe: strerror_r).
#pragma once

#include <cstring>
#include <string>

namespace mlpd::agent {

inline std::string errno_text(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // GNU: returns the message
}

}  // namespace mlpd::agent
