#include "coreclr/attach_request.h"

#include <string_view>

namespace mlpd::coreclr {

using namespace runtime::attach_protocol;

bool parse_attach_request(const void* data, size_t size, AttachRequest& out, std::string& error) {
  out = AttachRequest{};
  if (!data || size == 0) return error = "the attach request is empty", false;
  if (size > kMaxRequest) return error = "the attach request is too long", false;
  const std::string_view text(static_cast<const char*>(data), size);
  if (text.find('\0') != std::string_view::npos) return error = "the attach request holds a NUL byte", false;
  bool have_answer = false, have_options = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const std::string_view answer(kAnswerLine), options(kOptionsLine);
    if (line.starts_with(answer) && !have_answer) {
      const std::string_view value = line.substr(answer.size());
      if (!value.empty() && (value[0] != '/' || value.find("/..") != std::string_view::npos))
        return error = "the attach request's answer path is not absolute", false;
      out.answer = value;
      have_answer = true;
    } else if (line.starts_with(options) && !have_options) {
      out.options = line.substr(options.size());
      have_options = true;
    } else {
      return error = "the attach request has an unknown or repeated line '" + std::string(line.substr(0, 40)) + "'", false;
    }
  }
  return true;
}

}  // namespace mlpd::coreclr
