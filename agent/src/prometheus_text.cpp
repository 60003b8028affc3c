#include "mlpd/agent/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace mlpd::agent {

std::string prom_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // Shortest text that reads back as the same double (Go's strconv.ParseFloat, as Prometheus reads it).
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string prom_le(double v) {
  if (std::isinf(v) && v > 0) return "+Inf";
  char buf[400];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return r.ec == std::errc() ? std::string(buf, r.ptr) : prom_double(v);
}

std::string prom_escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string prom_escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void PromText::family(std::string_view name, std::string_view type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ").append(prom_escape_help(help)).append("\n");
  out_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void PromText::head(std::string_view name, std::initializer_list<Label> labels) {
  out_.append(name);
  if (labels.size()) {
    out_ += '{';
    bool first = true;
    for (const Label& l : labels) {
      if (!first) out_ += ',';
      first = false;
      out_.append(l.first).append("=\"").append(prom_escape_label(l.second)).append("\"");
    }
    out_ += '}';
  }
  out_ += ' ';
}

void PromText::sample(std::string_view name, std::initializer_list<Label> labels, uint64_t value) {
  head(name, labels);
  out_.append(std::to_string(value)).append("\n");
}

void PromText::sample(std::string_view name, std::initializer_list<Label> labels, double value) {
  head(name, labels);
  out_.append(prom_double(value)).append("\n");
}

void PromText::sample_text(std::string_view name, std::initializer_list<Label> labels, std::string_view value) {
  head(name, labels);
  out_.append(value).append("\n");
}

}  // namespace mlpd::agent
