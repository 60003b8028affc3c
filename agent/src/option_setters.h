// The option table's setters (option_setters.cpp), and the generic ones as templates on the Options
// member they set. Private to the option table.
#pragma once

#include "option_table.h"

namespace mlpd::agent::setters {

using option_syntax::Item;

// Generic setters.

template <bool Options::*M>
bool flag(OptionParser& p, const OptionSpec&, const Item& it) {
  if (it.has_value) return p.no_value_allowed(it.text, it.name);
  p.o.*M = true;
  return true;
}

template <uint32_t Options::*M>
bool number_u32(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  uint64_t n = 0;
  if (!p.number(it.text, it.value, s.lo, s.hi, n)) return false;
  p.o.*M = static_cast<uint32_t>(n);
  return true;
}

template <typename E, E Options::*M>
bool choice(OptionParser& p, const OptionSpec& s, const Item& it) {
  if (!it.has_value) return p.missing_value(it.text, s.expect);
  std::string_view rest = s.choices;
  for (unsigned i = 0;; ++i) {
    const size_t bar = rest.find('|');
    if (rest.substr(0, bar) == it.value) {
      p.o.*M = static_cast<E>(i);
      return true;
    }
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  std::string why = "expected ";
  why.append(s.expect);
  return p.bad_value(it.text, why);
}

// The options' own setters.
bool set_alloc_sample(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_bind(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_calls_min(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_callspec(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_coverage(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_dumpsignal(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_heapshot(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_heapshot_on_shutdown(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_jitdump(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_maxframes(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_maxsamples(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_nocalls(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_nodefaults(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_output(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_port(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_metrics(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_push(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_push_labels(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_push_token_file(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_port_allow(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_ring(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_rotate(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_rotate_size(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_sample(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_sample_real(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_sampling_real(OptionParser&, const OptionSpec&, const option_syntax::Item&);
bool set_zip_pack_above(OptionParser&, const OptionSpec&, const option_syntax::Item&);

}  // namespace mlpd::agent::setters
