// mlpd report: the sections of mlpd/report.h, built from the profile model, then rendered as text
// or JSON.
#include <cstdio>
#include <string>

#include "mlpd/report.h"
#include "mlpd/views.h"

namespace mlpd::views {

bool write_report(const profile::Profile& p, const ReportOptions& o, std::FILE* file, std::string& error) {
  report::Report r;
  if (!report::build_report(p, o, r, error)) return false;
  const std::string out = o.json ? report::render_json(r) : report::render_text(r);
  if (std::fwrite(out.data(), 1, out.size(), file) != out.size()) {
    error = "write error";
    return false;
  }
  return true;
}

}  // namespace mlpd::views
