// The command port's protocol (CommandSession): lines in, commands run through the handlers, answers
// out; no sockets (command_server.cpp). docs/command-port.md.
#include <cstdio>
#include <string>
#include <string_view>

#include "mlpd/agent/command_server.h"
#include "mlpd/agent/options.h"
#include "mlpd/event_names.h"

namespace mlpd::agent {

namespace {

// The event names come from the one vocabulary (mlpd/event_names.h) the options use.
std::string help_answer() {
  std::string names;
  for (const format::EventBitName& e : format::kEventBitNames) names.append(e.option).append(" ");
  return "OK commands: heapshot | flush | stats | events [+NAME|-NAME ...] | pause | resume | dump [FILE] | help "
         "(one per line; NAME as in the agent options: " + names + "alloc legacy calls)";
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// The first word of `s` (trimmed), and in `rest` what follows it, trimmed.
std::string_view first_word(std::string_view s, std::string_view& rest) {
  s = trim(s);
  size_t i = 0;
  while (i < s.size() && !is_space(s[i])) ++i;
  rest = trim(s.substr(i));
  return s.substr(0, i);
}

}  // namespace

std::string quote_client_text(std::string_view text, size_t max) {
  std::string out = "'";
  for (size_t i = 0; i < text.size(); ++i) {
    if (i >= max) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7F || c == '\'' || c == '\\') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '\'';
  return out;
}

void CommandSession::answer(std::string_view line) {
  out_.append(line);
  out_ += '\n';
}

void CommandSession::feed(const char* data, size_t size, int64_t now_ms) {
  if (input_closed_ || size == 0) return;
  last_progress_ = now_ms;
  in_.append(data, size);
  run_lines(now_ms);
}

void CommandSession::input_closed(int64_t now_ms) {
  input_closed_ = true;
  run_lines(now_ms);
}

bool CommandSession::wants_input() const {
  return !input_closed_ && !waiting() && out_.size() < kCommandOutputHigh &&
         in_.find('\n') == std::string::npos;
}

void CommandSession::consume(size_t n, int64_t now_ms) {
  out_.erase(0, n);
  if (n > 0) last_progress_ = now_ms;
}

void CommandSession::run_lines(int64_t now_ms) {
  size_t pos = 0;
  while (!waiting() && out_.size() < kCommandOutputHigh && pos < in_.size()) {
    const size_t nl = in_.find('\n', pos);
    if (discarding_) {
      if (nl == std::string::npos) {
        pos = in_.size();
        break;
      }
      discarding_ = false;
      pos = nl + 1;
      continue;
    }
    std::string_view line;
    if (nl == std::string::npos) {
      // No newline yet. Longer than any command can be (the \r of a \r\n may still come): refuse it
      // now and drop the rest of it as it arrives, so an endless line costs no memory.
      if (in_.size() - pos > kMaxCommandLine + 1) {
        answer("ERR line too long");
        discarding_ = true;
        pos = in_.size();
        break;
      }
      if (!input_closed_) break;
      line = std::string_view(in_).substr(pos);  // the last line of a client that sent EOF
      pos = in_.size();
    } else {
      line = std::string_view(in_).substr(pos, nl - pos);
      pos = nl + 1;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > kMaxCommandLine) {
      answer("ERR line too long");
      continue;
    }
    run(line, now_ms);
  }
  in_.erase(0, pos);
}

void CommandSession::run(std::string_view line, int64_t now_ms) {
  std::string_view args;
  const std::string_view cmd = first_word(line, args);
  if (cmd.empty()) return;  // a blank line is no command: nothing to answer
  const CommandHandlers& h = *shared_.handlers;
  last_progress_ = now_ms;
  if (cmd == "heapshot" || cmd == "flush" || cmd == "stats" || cmd == "help" || cmd == "events")
    last_command_ = now_ms;  // garbage lines do not keep a client's place when the port is full
  if (cmd == "heapshot") {
    if (!args.empty()) return answer("ERR heapshot takes no arguments");
    if (!h.request_heapshot || !h.heapshots_done) return answer("ERR heapshot: not available in this build");
    const uint64_t ticket = h.request_heapshot();
    if (ticket == 0) {
      const std::string why = h.heapshot_refusal ? h.heapshot_refusal() : std::string();
      return answer(why.empty() ? "ERR heapshot: not possible now (profiling has stopped)" : "ERR heapshot: " + why);
    }
    wait_ = Wait::Heapshot;
    wait_target_ = ticket;
    wait_deadline_ = now_ms + h.heapshot_wait_ms;
    return;  // advance() answers
  }
  if (cmd == "flush") {
    if (!args.empty()) return answer("ERR flush takes no arguments");
    shared_.flush_wanted = true;
    wait_ = Wait::Flush;
    wait_target_ = shared_.flush_rounds + 1;
    return;
  }
  if (cmd == "stats") {
    if (!args.empty()) return answer("ERR stats takes no arguments");
    return answer(h.stats ? "OK " + h.stats() : std::string("OK"));
  }
  if (cmd == "dump") {
    if (!h.dump) return answer("ERR dump: only in flight-recorder mode (start the agent with ring=SIZE)");
    return answer(h.dump(std::string(args)));
  }
  if (cmd == "help") return answer(help_answer());
  if (cmd == "events") return events(args);
  if (cmd == "pause" || cmd == "resume") {
    const bool pause = cmd == "pause";
    if (!args.empty()) return answer("ERR " + std::string(cmd) + " takes no arguments");
    const auto& f = pause ? h.pause : h.resume;
    if (!f) return answer("ERR " + std::string(cmd) + ": not available");
    // In effect when answered; doing it twice is no error.
    const bool changed = f();
    return answer(std::string(pause ? "OK paused" : "OK resumed") + (changed ? "" : " (already)"));
  }
  answer("ERR unknown command " + quote_client_text(line) + " (try help)");
}

void CommandSession::events(std::string_view args) {
  const CommandHandlers& h = *shared_.handlers;
  if (!h.event_mask || !h.set_event_mask) return answer("ERR events: not available");
  const bool calls_on_start = h.calls_enabled && h.calls_enabled() && h.call_depth && h.set_call_depth;
  auto describe = [&]() {
    std::string names = event_mask_names(h.event_mask());
    if (calls_on_start && h.call_depth() > 0) names += names.empty() ? "calls" : " calls";
    return "OK events: " + (names.empty() ? std::string("none") : names);
  };
  uint32_t mask = h.event_mask();
  const uint32_t before = mask;
  int calls = 0;  // -1 off, +1 on
  // All words are checked before anything changes: a mistake changes nothing.
  while (!args.empty()) {
    std::string_view rest;
    const std::string_view w = first_word(args, rest);
    args = rest;
    const bool on = w.front() == '+';
    if (!on && w.front() != '-')
      return answer("ERR events: expected +NAME or -NAME, not " + quote_client_text(w) + " (try help)");
    const std::string_view name = w.substr(1);
    if (name == "calls") {
      if (!calls_on_start) {
        // Without instrumentation nothing is recorded anyway: -calls is already true, +calls cannot be.
        if (!on) continue;
        return answer("ERR events: calls can only be switched on when the agent was started with 'calls'");
      }
      calls = on ? 1 : -1;
      continue;
    }
    uint32_t bits = 0;
    if (!event_name_mask(name, shared_.handlers->compat, bits))
      return answer("ERR events: unknown event " + quote_client_text(name) + " (try help)");
    mask = on ? (mask | bits) : (mask & ~bits);
  }
  if (mask != before) h.set_event_mask(mask);
  if (calls < 0 && h.call_depth() > 0) {
    shared_.saved_call_depth = h.call_depth();
    h.set_call_depth(0);  // the instrumentation stays; nothing is recorded at depth 0
  } else if (calls > 0 && h.call_depth() == 0) {
    h.set_call_depth(shared_.saved_call_depth ? shared_.saved_call_depth : h.start_call_depth);
  }
  answer(describe());
}

void CommandSession::advance(int64_t now_ms) {
  const CommandHandlers& h = *shared_.handlers;
  if (wait_ == Wait::Heapshot) {
    if (h.heapshots_done() >= wait_target_) {
      // Taken (in the buffers): OK once a flush round has put it in the file, so a client can read
      // the file as soon as it has its answer.
      heapshot_ticket_ = wait_target_;
      shared_.flush_wanted = true;
      wait_ = Wait::HeapshotFlush;
      wait_target_ = shared_.flush_rounds + 1;
    } else if (now_ms >= wait_deadline_) {
      answer("ERR heapshot timed out");
      wait_ = Wait::None;
    }
  } else if (wait_ == Wait::HeapshotFlush && shared_.flush_rounds >= wait_target_) {
    answer(shared_.flush_ok ? "OK heapshot " + std::to_string(heapshot_ticket_)
                            : std::string("ERR heapshot: the output failed; profiling stopped"));
    wait_ = Wait::None;
  } else if (wait_ == Wait::Flush && shared_.flush_rounds >= wait_target_) {
    answer(shared_.flush_ok ? "OK flush" : "ERR flush: the output failed; profiling stopped");
    wait_ = Wait::None;
  }
  if (wait_ == Wait::None) {
    if (!in_.empty()) run_lines(now_ms);
  }
}

void CommandSession::abort_waiting(std::string_view why) {
  if (wait_ == Wait::None) return;
  wait_ = Wait::None;
  answer(why);
}

}  // namespace mlpd::agent
