#include "port_client.h"

#include "args.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace mlpd::cli {

namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left);
}

std::string where(const PortRequest& r) {
  return (r.host.find(':') != std::string::npos ? "[" + r.host + "]" : r.host) + ":" + r.port;
}

// A connected socket, or -1 with `error`.
int connect_with_deadline(const PortRequest& r, Clock::time_point deadline, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (const int rc = ::getaddrinfo(r.host.c_str(), r.port.c_str(), &hints, &list); rc != 0) {
    error = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  error = "no address";
  for (addrinfo* a = list; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        error = std::strerror(errno);
        ::close(fd);
        fd = -1;
        continue;
      }
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (::poll(&p, 1, ms_left(deadline)) <= 0) {
        err = ETIMEDOUT;
      } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
      }
      if (err != 0) {
        error = std::strerror(err);
        ::close(fd);
        fd = -1;
      }
    }
  }
  ::freeaddrinfo(list);
  return fd;
}

}  // namespace

int parse_port_args(int argc, char** argv, const char* command, const char* help, bool command_option,
                    bool words_are_commands, PortRequest& out) {
  bool have_command = false;
  std::vector<Option> options = {
      {"--host", nullptr, nullptr,
       [&](const std::string& v) {
         if (v.empty()) return std::string("--host needs a host name or address");
         out.host = v;
         return std::string();
       },
       true},
      {"--port", nullptr, nullptr,
       [&](const std::string& v) {
         char* end = nullptr;
         const long p = std::strtol(v.c_str(), &end, 10);
         if (v.empty() || *end || p < 1 || p > 65535 || v[0] == '+' || v[0] == '-')
           return "--port needs a port number from 1 to 65535, not '" + v + "'";
         out.port = std::to_string(p);
         return std::string();
       },
       true},
      {"--timeout", nullptr, nullptr,
       [&](const std::string& v) {
         char* end = nullptr;
         const double t = std::strtod(v.c_str(), &end);
         if (v.empty() || *end || !(t > 0) || t > 86400)
           return "--timeout needs a number of seconds (more than 0), not '" + v + "'";
         out.timeout_s = t;
         return std::string();
       },
       true},
  };
  if (command_option) {
    options.push_back({"--command", nullptr, nullptr,
                       [&](const std::string& v) {
                         if (v.empty()) return std::string("--command needs a command");
                         if (have_command) return std::string("--command given twice");
                         out.commands = {v};
                         have_command = true;
                         return std::string();
                       },
                       true});
  }
  // The one parser (args.h): words (and everything after `--`) are the commands, where they are taken.
  std::vector<std::string> words;
  const int parsed = parse_command(argc, argv, command, help, options, words);
  if (parsed >= 0) return parsed;
  if (!words.empty() && !words_are_commands) return usage_error(command, "unexpected argument '" + words[0] + "'");
  for (std::string& w : words) out.commands.push_back(std::move(w));
  if (out.port.empty()) return usage_error(command, "--port is required");
  if (out.commands.empty()) return usage_error(command, "no COMMAND given");
  for (const std::string& c : out.commands) {
    if (c.find_first_of("\r\n") != std::string::npos) return usage_error(command, "a COMMAND cannot contain a newline");
    // The server answers every line but a blank one: a blank command would wait for no answer.
    if (c.find_first_not_of(" \t") == std::string::npos) return usage_error(command, "a COMMAND cannot be blank");
  }
  return -1;
}

int run_port_request(const char* command, const PortRequest& r) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(r.timeout_s * 1000));
  std::string error;
  const int fd = connect_with_deadline(r, deadline, error);
  if (fd < 0) {
    std::fprintf(stderr, "mlpd %s: cannot connect to %s: %s\n", command, where(r).c_str(), error.c_str());
    return 1;
  }
  std::string out;
  for (const std::string& c : r.commands) out += c + "\n";
  size_t sent = 0;
  std::string in;
  size_t answers = 0;
  bool any_err = false;
  int status = -1;
  while (status < 0) {
    pollfd p{fd, static_cast<short>(POLLIN | (sent < out.size() ? POLLOUT : 0)), 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::fprintf(stderr, "mlpd %s: no answer from %s within %g s\n", command, where(r).c_str(), r.timeout_s);
      status = 1;
      break;
    }
    if ((p.revents & POLLOUT) && sent < out.size()) {
      const ssize_t w = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (w > 0) sent += static_cast<size_t>(w);
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
      if (got <= 0) {
        std::fprintf(stderr, "mlpd %s: %s closed the connection after %zu of %zu answers%s%s\n", command,
                     where(r).c_str(), answers, r.commands.size(), got < 0 ? ": " : "",
                     got < 0 ? std::strerror(errno) : "");
        status = 1;
        break;
      }
      in.append(buf, static_cast<size_t>(got));
      size_t nl;
      while ((nl = in.find('\n')) != std::string::npos) {
        std::string line = in.substr(0, nl);
        in.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::printf("%s\n", line.c_str());
        if (!line.starts_with("OK")) any_err = true;
        if (++answers == r.commands.size()) {
          status = any_err ? 1 : 0;
          break;
        }
      }
    }
  }
  std::fflush(stdout);
  ::close(fd);
  return status;
}

}  // namespace mlpd::cli
