// Prometheus' text exposition format, version 0.0.4 (what `GET /metrics` answers with `metrics=PORT`;
// docs/fleet.md): one family at a time, `# HELP` and `# TYPE` before its samples, label values and
// help text escaped as the format says, values as Prometheus reads them (integers exactly, doubles
// in the shortest form that reads back the same, NaN and +Inf/-Inf by name). No Mono, no sockets.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace mlpd::agent {

class PromText {
 public:
  using Label = std::pair<std::string_view, std::string_view>;

  // Starts a family: `type` is counter, gauge, histogram or untyped. A family is started once.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the current family: `name` is the family's (or its _bucket/_sum/_count).
  void sample(std::string_view name, std::initializer_list<Label> labels, uint64_t value);
  void sample(std::string_view name, std::initializer_list<Label> labels, double value);
  // A sample whose value is already formatted (le bounds, say).
  void sample_text(std::string_view name, std::initializer_list<Label> labels, std::string_view value);

  const std::string& text() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void head(std::string_view name, std::initializer_list<Label> labels);
  std::string out_;
};

// The value forms on their own (unit tests).
std::string prom_double(double v);
// A histogram's bucket bound for its `le` label: plain decimal ("0.0001", "2.5"), the way Prometheus'
// own clients write them, so `le="0.0001"` selects it.
std::string prom_le(double v);
std::string prom_escape_label(std::string_view v);
std::string prom_escape_help(std::string_view v);

}  // namespace mlpd::agent
